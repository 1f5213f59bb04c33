"""The one owned cattrs converter for checkpoints (and, through it, trace files).

Laws: fail closed. Unknown keys, missing keys (every key of a checkpoint and of each of
its frames is required, also those with a default in Python), wrong types (an int is
not a str, a bool is not an int, an object is not a list), non-JSON values and unknown
versions are refused with a ``CheckpointError`` whose message carries the field path
(``$.subflow_states.sf.history``, ``$.frames[0].kind``) and what was expected. Loading
never executes code: JSON in, plain values and this package's own attrs classes out —
no pickle, no eval, no import by name.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from flowchart._core.errors import CheckpointError
from flowchart._core.pause import CHECKPOINT_VERSION, FIRST_VERSION, Checkpoint, Recovery, ResumeFrame
from flowchart._core.untrusted import check, parse
from flowchart._core.untrusted import step as _step
from flowchart._core.values import NotJsonSafe, copy_json

_JSON_NAMES = {
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
    list: "a list",
    dict: "an object",
}


class Expected(TypeError):
    """A value of the wrong shape; the message says what was expected, ``where`` where inside it."""

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(message)
        self.where = where


def json_type(value: Any) -> str:
    """How ``value`` reads in JSON terms (``a string``, ``an object``, ``a Python set``)."""
    name = _JSON_NAMES.get(type(value))
    return name if name is not None else f"a Python {type(value).__qualname__}"


def _strict(kind: type) -> Any:
    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not kind and not (kind is float and type(value) is int):
            raise Expected(f"expected {_JSON_NAMES[kind]}, got {json_type(value)}")
        return float(value) if kind is float else value  # type: ignore[arg-type]  # JSON may write 1.0 as 1

    return hook


def _json_value(value: Any, _type: Any) -> Any:
    try:
        return copy_json(value)
    except NotJsonSafe as exc:
        raise Expected(f"expected a JSON value: {exc.what}", exc.where) from None


def _strict_list(tp: Any, converter: cattrs.Converter) -> Any:
    inner = list_structure_factory(tp, converter)

    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not list:
            raise Expected(f"expected a list, got {json_type(value)}")
        return inner(value, _type)

    return hook


def _strict_dict(tp: Any, converter: cattrs.Converter) -> Any:
    inner = mapping_structure_factory(tp, converter)

    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not dict:
            raise Expected(f"expected an object, got {json_type(value)}")
        return inner(value, _type)

    return hook


def _literal(value: Any, tp: Any) -> Any:
    choices = get_args(tp)
    if not any(type(value) is type(c) and value == c for c in choices):
        raise Expected(f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def every_key(cl: type, converter: cattrs.Converter, optional: tuple[str, ...] = ()) -> Any:
    """Structure ``cl`` from an object that must carry every field but the ``optional`` ones."""
    fields = [f for f in attrs.fields(cl) if f.init and f.name not in optional]
    inner: list[Any] = []  # built on first use, once every hook it relies on is registered

    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not dict:
            raise Expected(f"expected an object, got {json_type(value)}")
        errors = []
        for field in fields:
            if field.name not in value:
                error = KeyError(field.name)
                note = AttributeValidationNote(f"Structuring {cl.__name__} @ {field.name}", field.name, field.type)
                error.__notes__ = [note]
                errors.append(error)
        if errors:
            raise ClassValidationError(f"While structuring {cl.__name__}", errors, cl)
        if not inner:
            inner.append(make_dict_structure_fn(cl, converter))
        return inner[0](value, _type)

    return hook


def make_converter() -> cattrs.Converter:
    """The one factory of the package's strict converters (fail closed, paths in errors): checkpoints
    use it as is, traces extend it (``trace.make_trace_converter``); a new untrusted loader starts here."""
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in (str, int, float, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(Any, _json_value)
    converter.register_structure_hook_factory(lambda t: t is list or get_origin(t) is list, _strict_list)
    converter.register_structure_hook_factory(lambda t: t is dict or get_origin(t) is dict, _strict_dict)
    converter.register_structure_hook_func(lambda t: get_origin(t) is Literal, _literal)
    converter.register_structure_hook(Recovery, every_key(Recovery, converter))
    # ``replaces`` came with the fix of failures inside subflows: absent in older checkpoints and when None
    converter.register_structure_hook(ResumeFrame, every_key(ResumeFrame, converter, optional=("replaces",)))
    converter.register_unstructure_hook(
        ResumeFrame, make_dict_unstructure_fn(ResumeFrame, converter, replaces=override(omit_if_default=True))
    )
    # a failed run's checkpoint carries ``recovery``; a pause's has none and serialises as before
    converter.register_structure_hook(Checkpoint, every_key(Checkpoint, converter, optional=("recovery",)))
    converter.register_unstructure_hook(
        Checkpoint, make_dict_unstructure_fn(Checkpoint, converter, recovery=override(omit_if_default=True))
    )
    return converter


CONVERTER = make_converter()


def _describe(exc: BaseException, tp: Any) -> str:
    if isinstance(exc, KeyError):
        return "required key missing"
    if isinstance(exc, ForbiddenExtraKeysError):
        return f"unknown key(s) {', '.join(sorted(exc.extra_fields))}"
    message = str(exc)
    if isinstance(exc, TypeError | ValueError) and message.startswith("expected "):
        return message
    if isinstance(exc, AttributeError) and message.endswith("has no attribute 'items'"):
        return "expected an object"
    return cattrs.v.format_exception(exc, tp)


def messages(exc: BaseException, path: str = "$", tp: Any = None) -> list[tuple[str, str]]:
    """Every leaf failure of a cattrs error as ``(what was wrong, JSON path)``, in field order."""
    if isinstance(exc, IterableValidationError):
        indexed, other = exc.group_exceptions()
        steps = [(sub, path + _step(note.index), note.type) for sub, note in indexed]
    elif isinstance(exc, ClassValidationError):
        named, other = exc.group_exceptions()
        steps = [(sub, f"{path}.{note.name}", note.type) for sub, note in named]
    else:
        return [(_describe(exc, tp), path + getattr(exc, "where", ""))]
    out: list[tuple[str, str]] = []
    for sub, sub_path, sub_type in steps:
        out.extend(messages(sub, sub_path, sub_type))
    for sub in other:
        out.extend(messages(sub, path))
    return out


def load_error(exc: BaseException, what: str) -> CheckpointError:
    """Turn a cattrs failure into one ``CheckpointError`` that names every bad path."""
    found = messages(exc) or [(str(exc), "$")]
    lines = [f"{text} @ {path}" for text, path in found]
    return CheckpointError(f"Invalid {what}: {'; '.join(lines)}", path=found[0][1], detail=lines)


def dumps(data: Any) -> str:
    """Deterministic compact JSON (non-ASCII kept, no NaN)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def loads(text: str | bytes, *, what: str) -> Any:
    """Parse untrusted JSON within the limits of ``flowchart._core.untrusted`` or raise
    ``CheckpointError`` naming the position or path."""
    return parse(text, what=what)


def unstructure_checkpoint(checkpoint: Checkpoint, *, copy: bool = True) -> dict[str, Any]:
    """Checkpoint → JSON-safe dict. State values are deep-copied unless ``copy=False`` — for a
    caller that only serialises the dict at once (``to_json``) and lets it go."""
    data: dict[str, Any] = CONVERTER.unstructure(checkpoint)
    return copy_json(data) if copy else data


def check_version(data: dict[str, Any], what: str, reads: int, *older: int) -> None:
    """Refuse a loaded ``what`` (checkpoint, trace) whose integer ``version`` is not ``reads``
    (nor one of the ``older`` versions it still upgrades): the one version check of every
    versioned file (a non-integer is the converter's to refuse)."""
    version = data.get("version")
    known = (*sorted(older), reads)
    if type(version) is int and version not in known:
        told = f"version {reads}" if not older else f"versions {', '.join(map(str, known[:-1]))} and {reads}"
        raise CheckpointError(
            f"Invalid {what}: unsupported version {version} @ $.version (this library reads {told})",
            path="$.version",
        )


def structure_checkpoint(data: Any, *, checked: bool = False) -> Checkpoint:
    """JSON-safe dict → Checkpoint, validated field by field (``checked``: ``data`` came from
    ``loads``, which already held it to the limits)."""
    if not isinstance(data, dict):
        raise CheckpointError(f"Invalid checkpoint: expected an object, got {json_type(data)} @ $", path="$")
    if not checked:
        check(data, what="checkpoint")
    check_version(data, "checkpoint", CHECKPOINT_VERSION, FIRST_VERSION)
    if data.get("version") == FIRST_VERSION:  # before recorder_states: it loads as version 2 without any
        if "recorder_states" in data:
            raise _refuse("unknown key(s) recorder_states (a version-1 checkpoint has none)", "$")
        data = {**data, "version": CHECKPOINT_VERSION, "recorder_states": {}}
    try:
        checkpoint = CONVERTER.structure(data, Checkpoint)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "checkpoint") from None
    check_consistency(checkpoint)
    return checkpoint


def _refuse(message: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid checkpoint: {message} @ {path}", path=path)


def check_consistency(cp: Checkpoint) -> None:
    """The fields that repeat what ``frames`` says must agree with it; counts are not negative."""
    if not cp.frames:
        raise _refuse("frames must not be empty (the last frame is the paused stage)", "$.frames")
    last = len(cp.frames) - 1
    for index, frame in enumerate(cp.frames):
        if index == last and frame.kind != "stage":
            raise _refuse(f"the last frame must be of kind 'stage', got {frame.kind!r}", f"$.frames[{index}].kind")
        if index < last and frame.kind == "stage":
            raise _refuse("only the last frame may be of kind 'stage'", f"$.frames[{index}].kind")
    leaf = cp.frames[-1]
    if leaf.stage_id != cp.paused_stage_id:
        raise _refuse(
            f"the last frame is '{leaf.stage_id}' but paused_stage_id is '{cp.paused_stage_id}'", "$.paused_stage_id"
        )
    if cp.recovery is not None:
        _check_recovery(cp.recovery, leaf.stage_id)
    mounts = [f.stage_id for f in cp.frames if f.kind == "mount"]
    if cp.subflow_path != mounts:
        raise _refuse(f"subflow_path must list the mount frames {mounts}, got {cp.subflow_path}", "$.subflow_path")
    for name in ("invoker_stage_id", "continuation_stage_id"):
        if getattr(cp, name) != getattr(leaf, name):
            raise _refuse(f"{name} must equal the last frame's ({getattr(leaf, name)!r})", f"$.{name}")
    for name in ("subflow_states", "subflow_args"):
        keys = getattr(cp, name)
        missing = [m for m in mounts if m not in keys]
        if missing:
            raise _refuse(f"no {name[:-1]} for mount '{missing[0]}'", f"$.{name}")
        extra = [k for k in keys if k not in mounts]
        if extra:
            raise _refuse(f"'{extra[0]}' is not a subflow the pause is inside ({mounts})", f"$.{name}{_step(extra[0])}")
    if cp.execution_count < 0:
        raise _refuse("execution_count must be >= 0", "$.execution_count")
    for name in ("visit_counts", "loop_counts"):
        for key, count in getattr(cp, name).items():
            if count < 0:
                raise _refuse("a count must be >= 0", f"$.{name}{_step(key)}")


def _check_recovery(recovery: Recovery, leaf: str) -> None:
    """A failed run's recovery names an execution of the leaf stage; restored and discarded keys differ."""
    stage, _, count = recovery.runtime_stage_id.rpartition("#")
    if stage != leaf or not count.isdigit():
        raise _refuse(
            f"recovery.runtime_stage_id must be an execution of '{leaf}' ('{leaf}#N'), "
            f"got {recovery.runtime_stage_id!r}",
            "$.recovery.runtime_stage_id",
        )
    both = [key for key in recovery.discard if key in recovery.restore]
    if both:
        raise _refuse(f"key '{both[0]}' is both restored and discarded", "$.recovery.discard")


def check_counters(cp: Checkpoint) -> None:
    """The control fields agree with each other and with the pause: every execution took one
    number from ``execution_count``, so it is at least the number of visits (a lower one would
    hand out runtime ids already used); the paused stage and every level it is inside ran; a
    loop target was looped to no more often than it ran."""
    visits = cp.visit_counts
    total = sum(visits.values())
    if cp.execution_count < total:
        raise _refuse(
            f"execution_count {cp.execution_count} is lower than the {total} stage visits in visit_counts: "
            "the resumed run would repeat runtime ids already used",
            "$.execution_count",
        )
    for index, frame in enumerate(cp.frames):
        if visits.get(frame.stage_id, 0) < 1:
            raise _refuse(
                f"'{frame.stage_id}' is on the resume path (frames[{index}]) but visit_counts says it never ran",
                f"$.visit_counts{_step(frame.stage_id)}",
            )
    for target, loops in cp.loop_counts.items():
        if loops > visits.get(target, 0):
            raise _refuse(
                f"'{target}' was looped to {loops} time(s) but ran {visits.get(target, 0)}",
                f"$.loop_counts{_step(target)}",
            )


__all__ = [
    "CONVERTER",
    "Expected",
    "ResumeFrame",
    "check_consistency",
    "check_counters",
    "dumps",
    "json_type",
    "load_error",
    "loads",
    "make_converter",
    "messages",
    "structure_checkpoint",
    "unstructure_checkpoint",
]
