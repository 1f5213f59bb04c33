"""The shape of a chart spec read from outside (a trace file's ``chart_spec``).

Law: a spec that did not come from ``chart.spec`` in this process is checked before
anything draws, lays out or describes it: an object with ``root``, ``name`` and a
non-empty ``stages`` list; each stage an object of the keys ``chart.spec`` writes, each of
the type it writes (``kind`` one of the stage kinds, ``branches`` an object of stage ids,
``subflow`` a spec of the same shape); stage ids unique on their level; ``root`` and every
``next``, ``loop_to``, branch target and child naming a stage of that level. A violation
is a ``CheckpointError`` naming the path (``$.chart_spec.stages[2].next``). A matching
fingerprint proves nothing about shape: whoever edits a spec can fingerprint it again.
"""

from __future__ import annotations

from typing import Any

from flowchart._core.errors import CheckpointError
from flowchart._core.untrusted import step

_KINDS = ("stage", "decider", "selector", "subflow", "pausable")
_SPEC_KEYS = ("root", "name", "stages")
_REQUIRED = ("id", "name", "kind")
_STRINGS = ("id", "name", "description", "next", "loop_to", "default")
_BOOLS = ("fail_fast", "propagate_break")
_STAGE_KEYS = (*_STRINGS, "kind", "branches", "children", *_BOOLS, "subflow", "array_merge", "map")
_MAP_KEYS = ("into", "concurrency", "fail_fast")


def _what(value: Any) -> str:
    from flowchart._core.serde import json_type

    return json_type(value)


def check_spec(spec: Any, *, what: str = "trace", path: str = "$.chart_spec") -> None:
    """Refuse ``spec`` (and its subflows' specs) unless it has ``chart.spec``'s shape."""
    pending = [(spec, path)]
    while pending:
        current, where = pending.pop()
        pending.extend(_check_level(current, where, what))


def _refuse(what: str, problem: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid {what}: {problem} @ {path}", path=path)


def _check_object(value: Any, at: str, what: str, allowed: Any, required: Any) -> None:
    """``value`` is a JSON object with no key outside ``allowed`` and every key of ``required``."""
    if type(value) is not dict:
        raise _refuse(what, f"expected an object, got {_what(value)}", at)
    for key in value:
        if key not in allowed:
            raise _refuse(what, f"unknown key(s) {key}", at)
    for key in required:
        if key not in value:
            raise _refuse(what, "required key missing", f"{at}.{key}")


def _check_level(spec: Any, where: str, what: str) -> list[tuple[Any, str]]:
    _check_object(spec, where, what, _SPEC_KEYS, _SPEC_KEYS)
    for key in ("root", "name"):
        if type(spec[key]) is not str:
            raise _refuse(what, f"expected a string, got {_what(spec[key])}", f"{where}.{key}")
    stages = spec["stages"]
    if type(stages) is not list or not stages:
        got = "an empty list" if stages == [] else _what(stages)
        raise _refuse(what, f"expected a non-empty list of stages, got {got}", f"{where}.stages")
    ids: dict[str, int] = {}
    subflows: list[tuple[Any, str]] = []
    for index, stage in enumerate(stages):
        at = f"{where}.stages[{index}]"
        _check_stage(stage, at, what)
        if stage["id"] in ids:
            raise _refuse(what, f"stage id '{stage['id']}' is used twice on this level", f"{at}.id")
        ids[stage["id"]] = index
        if "subflow" in stage:
            subflows.append((stage["subflow"], f"{at}.subflow"))
    if spec["root"] not in ids:
        raise _refuse(what, f"root '{spec['root']}' is not one of this level's stages", f"{where}.root")
    for index, stage in enumerate(stages):
        at = f"{where}.stages[{index}]"
        targets = [(stage.get(k), f"{at}.{k}") for k in ("next", "loop_to")]
        targets += [(t, f"{at}.branches{step(b)}") for b, t in (stage.get("branches") or {}).items()]
        targets += [(t, f"{at}.children[{i}]") for i, t in enumerate(stage.get("children") or ())]
        for target, target_at in targets:
            if target is not None and target not in ids:
                raise _refuse(what, f"'{target}' is not a stage on this level", target_at)
    return subflows


def _check_stage(stage: Any, at: str, what: str) -> None:
    _check_object(stage, at, what, _STAGE_KEYS, _REQUIRED)
    for key in _STRINGS:
        if key in stage and type(stage[key]) is not str:
            raise _refuse(what, f"expected a string, got {_what(stage[key])}", f"{at}.{key}")
    if not stage["id"]:
        raise _refuse(what, "a stage id must not be empty", f"{at}.id")
    for key in _BOOLS:
        if key in stage and type(stage[key]) is not bool:
            raise _refuse(what, f"expected a boolean, got {_what(stage[key])}", f"{at}.{key}")
    if stage["kind"] not in _KINDS:
        raise _refuse(what, f"expected one of {', '.join(map(repr, _KINDS))}, got {stage['kind']!r}", f"{at}.kind")
    if "array_merge" in stage and stage["array_merge"] not in ("concat", "replace"):
        raise _refuse(what, f"expected 'concat' or 'replace', got {stage['array_merge']!r}", f"{at}.array_merge")
    branches = stage.get("branches", {})
    if type(branches) is not dict:
        raise _refuse(what, f"expected an object, got {_what(branches)}", f"{at}.branches")
    for bid, target in branches.items():
        if type(target) is not str:
            raise _refuse(what, f"expected a string, got {_what(target)}", f"{at}.branches{step(bid)}")
    if "map" in stage:
        _check_map(stage["map"], f"{at}.map", what)
    children = stage.get("children", [])
    if type(children) is not list:
        raise _refuse(what, f"expected a list, got {_what(children)}", f"{at}.children")
    for i, child in enumerate(children):
        if type(child) is not str:
            raise _refuse(what, f"expected a string, got {_what(child)}", f"{at}.children[{i}]")


def _check_map(spec: Any, at: str, what: str) -> None:
    """A map stage's ``map``: ``{"into": str, "concurrency": int >= 1, "fail_fast": bool}``."""
    _check_object(spec, at, what, _MAP_KEYS, _MAP_KEYS)
    if type(spec["into"]) is not str or not spec["into"]:
        raise _refuse(what, f"expected a non-empty string, got {_what(spec['into'])}", f"{at}.into")
    if type(spec["concurrency"]) is not int or spec["concurrency"] < 1:
        raise _refuse(what, f"expected a positive integer, got {_what(spec['concurrency'])}", f"{at}.concurrency")
    if type(spec["fail_fast"]) is not bool:
        raise _refuse(what, f"expected a boolean, got {_what(spec['fail_fast'])}", f"{at}.fail_fast")


__all__ = ["check_spec"]
