"""Redaction: real values stay in state, hidden everywhere a run is RECORDED — and THIS file is
where redaction happens: the rule, and every function that applies it.

Every reader of a run gets what it shows from here: the commit log as it is written
(``scrub_ops``), recorder events, streams and OpenTelemetry spans as they are emitted
(``shown``, ``shown_state``, ``shown_ops``: the engine's ``_engine/redacting.py`` and
``StageContext.shown`` only call them), and the record every after-the-fact reader is handed
(``Record.shown()`` calls ``scrub_state`` and ``scrub_checkpoint``: the trace file, the viewer,
the CLIs, the store's export, ``explain_answer``, MCP results). No other module writes a
placeholder or decides what is hidden.

Law: a key named in ``keys`` or matching one of ``patterns`` (``re.search``; keys over 256
characters are not matched, a ReDoS guard) is written as ``"REDACTED"`` in the commit log
and traces, and as ``"[REDACTED]"`` in the narrative, decision evidence and recorder
events — the two placeholders footprintjs uses. The live state and checkpoints keep the
real values (a checkpoint must be able to resume). Redaction applies to top-level state
keys (and, with ``fields``, to paths inside their values — a ``[name=value]`` part picks
the objects whose ``name`` is ``value``; a path that could hide nothing is refused when the
rule is made —; inside a fork child, to the key under ``runs/<child>``) and does not follow copies:
``copy = ssn`` stores the value under ``copy`` unredacted, as in footprintjs.

A rule travels with what it hides: ``to_dict`` / ``from_dict`` give its JSON form (keys,
patterns with their flags, fields — never a value), which a run store keeps with each run
so that every reader of the run applies it without being told.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from flowchart._core.commits import Op
from flowchart._core.errors import CheckpointError
from flowchart._core.pause import Checkpoint, structure_checkpoint
from flowchart._core.serde import Expected, every_key, json_type, make_converter, structure
from flowchart._core.summary import summarize_value
from flowchart._core.untrusted import check
from flowchart._core.values import copy_json

LOG_PLACEHOLDER = "REDACTED"
EVENT_PLACEHOLDER = "[REDACTED]"
_MAX_PATTERN_KEY = 256


def _compile(patterns: Iterable[str | re.Pattern[str]]) -> tuple[re.Pattern[str], ...]:
    return tuple(p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns)


def _keys(keys: Iterable[str]) -> frozenset[str]:
    return frozenset(keys)


def _fields(fields: Mapping[str, Iterable[str]] | None) -> dict[str, tuple[str, ...]]:
    out = {key: tuple(paths) for key, paths in (fields or {}).items()}
    for key, paths in out.items():
        for path in paths:
            _check_path(key, path)
    return out


def _scopes(scopes: Mapping[str, Any] | None) -> dict[str, Redaction]:
    out: dict[str, Redaction] = {}
    for path, rule in (scopes or {}).items():
        if not isinstance(path, str) or not path or not isinstance(rule, Redaction):
            raise ValueError(
                f"redaction.scopes: expected mount path -> Redaction, got {path!r} -> {type(rule).__name__}"
            )
        for below, inner in rule.scopes.items():  # a scope's own scopes are the paths below it
            out[f"{path}/{below}"] = out[f"{path}/{below}"].union(inner) if f"{path}/{below}" in out else inner
        flat = Redaction(keys=rule.keys, patterns=rule.patterns, fields=rule.fields)
        if flat.active:
            out[path] = out[path].union(flat) if path in out else flat
    return out


def _selector(part: str) -> tuple[str, str] | None:
    """``[name=value]`` as ``(name, value)``; ``None`` for a plain field name."""
    if not (part.startswith("[") and part.endswith("]")):
        return None
    name, eq, value = part[1:-1].partition("=")
    return (name, value) if eq and name else ("", "")


def _check_path(key: str, path: Any) -> None:
    """Refuse a path that would hide nothing (a rule that silently hides nothing leaks)."""
    if not isinstance(path, str):
        raise ValueError(f"redaction.fields[{key!r}]: a path is a string, got {type(path).__name__}")
    parts = path.split(".")
    for index, part in enumerate(parts):
        chosen = _selector(part)
        if chosen is None:
            continue
        if not chosen[0]:
            raise ValueError(
                f"redaction.fields[{key!r}]: {part!r} in {path!r} is not a selector: write [field=value], "
                "e.g. '[role=user].content'"
            )
        if index == len(parts) - 1:
            raise ValueError(
                f"redaction.fields[{key!r}]: {path!r} ends with a selector: name the field it hides after it, "
                f"e.g. '{path}.content'"
            )


@attrs.frozen
class Redaction:
    """Which state keys to hide in recordings: exact ``keys``, regex ``patterns``, and
    ``fields`` — per key, dot paths inside its value (applied to every item of a list),
    e.g. ``fields={"middleware_decisions": ["before", "after"]}`` hides the texts a
    middleware rewrote while keeping the rest of each ledger row. A ``[name=value]`` part
    selects the objects whose ``name`` is the string ``value``: ``fields={"history":
    ["[role=user].content"]}`` hides the users' messages and keeps the model's replies. A
    path that could hide nothing (a malformed selector, one with no field after it) is a
    ``ValueError`` when the rule is made."""

    keys: frozenset[str] = attrs.field(default=frozenset(), converter=_keys)
    patterns: tuple[re.Pattern[str], ...] = attrs.field(default=(), converter=_compile)
    fields: dict[str, tuple[str, ...]] = attrs.field(factory=dict, converter=_fields)
    #: per subflow mount path (``"planner"``, ``"outer/inner"``), the rule that ALSO applies
    #: inside that subflow and every subflow below it (``within``): a mounted agent's own rule
    scopes: dict[str, Redaction] = attrs.field(factory=dict, converter=_scopes)

    def within(self, path: str) -> Redaction:
        """The rule inside the subflow at mount path ``path``: this rule with every scope of
        ``path`` or of a mount above it added (``union``); this rule when no scope applies."""
        found = [rule for where, rule in sorted(self.scopes.items()) if path == where or path.startswith(where + "/")]
        if not found:
            return self
        inside = Redaction(keys=self.keys, patterns=self.patterns, fields=self.fields)
        for rule in found:
            inside = inside.union(rule)
        return inside

    def scrub_fields(self, key: str, value: Any, placeholder: str = LOG_PLACEHOLDER) -> tuple[Any, list[str]]:
        """``value`` with ``fields[key]`` replaced by ``placeholder`` (a copy; ``"REDACTED"``
        for the log, ``EVENT_PLACEHOLDER`` for events), and the paths hidden."""
        hidden: list[str] = []
        result = value
        for path in self.fields.get(key, ()):
            result = _scrub(result, path.split("."), path, hidden, placeholder)
        return result, sorted(set(hidden))

    def shown(self, key: str, value: Any) -> tuple[Any, bool]:
        """What an event may carry for the state key ``key`` — ``EVENT_PLACEHOLDER`` for a hidden
        key, a copy with ``fields[key]`` scrubbed (for ``runs``, each fork child's keys shown so),
        or ``value`` itself — and whether it hides any."""
        if self.hides(key):
            return EVENT_PLACEHOLDER, True
        if key in self.fields:
            scrubbed, hidden = self.scrub_fields(key, value, EVENT_PLACEHOLDER)
            return scrubbed, bool(hidden)
        if key == "runs" and isinstance(value, dict):  # fork children's namespaces, as ``scrub_state``
            return self._shown_children(value)
        return value, False

    def _shown_children(self, runs: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        out: dict[str, Any] = {}
        any_hidden = False
        for child, state in runs.items():
            if not isinstance(state, dict):
                out[child] = state
                continue
            out[child], hidden = self._shown_namespace(state)
            any_hidden = any_hidden or hidden
        return (out, True) if any_hidden else (runs, False)

    def _shown_namespace(self, state: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """A fork child's state, each key shown; a map's item states (``<index>``) likewise."""
        shown: dict[str, Any] = {}
        any_hidden = False
        for key, value in state.items():
            if _is_item(key, value) and not self.hides(key) and key not in self.fields:
                shown[key], hidden = self._shown_namespace(value)
            else:
                shown[key], hidden = self.shown(key, value)
            any_hidden = any_hidden or hidden
        return shown, any_hidden

    def hides(self, key: str) -> bool:
        """True when ``key``'s value must not appear in a recording."""
        if key in self.keys:
            return True
        if len(key) > _MAX_PATTERN_KEY:
            return False
        return any(p.search(key) for p in self.patterns)

    @property
    def active(self) -> bool:
        """True when anything is hidden at all (a subflow's scope counts)."""
        return bool(self.keys or self.patterns or self.fields or self.scopes)

    def scrub_state(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """A JSON copy of ``state`` with what this rule hides replaced by ``"REDACTED"``:
        hidden top-level keys, ``fields`` inside their values, and the same under
        ``runs/<child>`` (a fork child's namespace; ``runs/<map>/<index>``, a map item's)."""
        out: dict[str, Any] = {}
        for key, value in state.items():
            if self.hides(key):
                out[key] = LOG_PLACEHOLDER
            elif key in self.fields:
                out[key] = copy_json(self.scrub_fields(key, value)[0])
            elif _is_item(key, value):
                out[key] = self.scrub_state(value)
            elif key == "runs" and isinstance(value, dict):
                out[key] = {c: self.scrub_state(v) if isinstance(v, dict) else copy_json(v) for c, v in value.items()}
            else:
                out[key] = copy_json(value)
        return out

    def shown_state(self, state: Any) -> Any:
        """A state an event carries whole (a run's input, a subflow's mapped input or final state,
        a retry's restore values), each key as ``shown`` lets events show it."""
        if type(state) is not dict:
            return state
        shown = self.shown
        return {key: shown(key, value)[0] for key, value in state.items()}

    def shown_ops(self, ops: list[Any]) -> list[Any]:
        """A batch of stage operations ``(kind, key, value, operation, hidden)`` as recorders may
        see them (``on_stage_ops``)."""
        out = []
        for op in ops:
            kind, key, value, operation, _ = op
            if kind == "read" or (kind == "write" and operation != "delete"):
                value, hidden = self.shown(key, value)
                out.append((kind, key, value, operation, hidden))
            elif kind == "write" or kind == "missing":
                out.append((kind, key, value, operation, self.hides(key) if kind == "write" else False))
            else:
                out.append(op)
        return out

    def scrub_ops(self, ops: list[Op], depth: int) -> tuple[list[Op], list[str]]:
        """A stage's ops as its commit records them (``depth``: the namespace length): a hidden
        key's value ``"REDACTED"``, ``fields`` scrubbed; and the paths hidden."""
        out: list[Op] = []
        paths: list[str] = []
        for op in ops:
            key = op.path[depth]
            if op.verb != "delete" and self.hides(key):
                out.append(Op(op.path, op.verb, LOG_PLACEHOLDER))
                paths.append("/".join(op.path))
            elif op.verb != "delete" and key in self.fields:
                value, hidden = self.scrub_fields(key, op.value)
                out.append(Op(op.path, op.verb, value) if hidden else op)
                paths.extend("/".join((*op.path, field)) for field in hidden)
            else:
                out.append(op)
        return out, paths

    def shown_evidence(self, value: Any) -> Any:
        """A decision's evidence with the summaries of the keys this rule hides replaced (a diff
        shows two runs under one rule: one run may have hidden a key the other showed)."""
        if isinstance(value, dict):
            key = value.get("key")
            out = {k: self.shown_evidence(v) for k, v in value.items()}
            if isinstance(key, str) and self.hides(key):
                for field in ("actual_summary", "value_summary"):
                    if field in out:
                        out[field] = EVENT_PLACEHOLDER
                if "redacted" in out:
                    out["redacted"] = True
            return out
        if isinstance(value, list):
            return [self.shown_evidence(v) for v in value]
        return value

    def union(self, other: Redaction) -> Redaction:
        """A rule hiding whatever this rule or ``other`` hides."""
        fields: dict[str, list[str]] = {}
        for rule in (self, other):
            for key, paths in rule.fields.items():
                fields.setdefault(key, [])
                fields[key].extend(p for p in paths if p not in fields[key])
        patterns = list(self.patterns) + [p for p in other.patterns if p not in self.patterns]
        scopes = dict(self.scopes)
        for where, rule in other.scopes.items():
            scopes[where] = scopes[where].union(rule) if where in scopes else rule
        return Redaction(keys=self.keys | other.keys, patterns=patterns, fields=fields, scopes=scopes)

    def scrub_checkpoint(self, checkpoint: Checkpoint) -> Checkpoint:
        """A copy of ``checkpoint`` with every state it carries scrubbed (``scrub_state``): the
        shared state, the input, each subflow's state and input, a retry's restore values. Its
        own values stay the run's (a rule that hides nothing gives a checkpoint that resumes)."""
        data = checkpoint.to_dict()  # a JSON copy (``copy_json``: no lone surrogate), held to the limits
        check(data, what="checkpoint", surrogates=False)
        copy = structure_checkpoint(data, checked=True)
        recovery = copy.recovery
        if recovery is not None:  # the values a retry restores are real values too
            recovery = attrs.evolve(recovery, restore=self.scrub_state(recovery.restore))
        return attrs.evolve(
            copy,
            shared_state=self.scrub_state(copy.shared_state),
            run_input=self.scrub_state(copy.run_input),
            subflow_states={k: self.within(k).scrub_state(v) for k, v in copy.subflow_states.items()},
            subflow_args={k: self.within(k).scrub_state(v) for k, v in copy.subflow_args.items()},
            recovery=recovery,
        )

    def to_dict(self) -> dict[str, Any]:
        """The rule as JSON (sorted keys, patterns as ``[source, flags]``, fields): no values."""
        out: dict[str, Any] = {
            "keys": sorted(self.keys),
            "patterns": [[p.pattern, p.flags] for p in self.patterns],
            "fields": {key: list(paths) for key, paths in sorted(self.fields.items())},
        }
        if self.scopes:  # absent when there is none: a rule without scopes keeps its form
            out["scopes"] = {where: rule.to_dict() for where, rule in sorted(self.scopes.items())}
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> Redaction:
        """Inverse of ``to_dict``, through the one codec (``serde.structure``): a
        ``CheckpointError`` (a ``ValueError``) naming the path of what is not a rule."""
        form = structure(_CONVERTER, data, _RuleForm, what="redaction", path=path)
        at = f"{path}.patterns"
        compiled = []
        for index, (source, flags) in enumerate(form.patterns):
            try:
                compiled.append(re.compile(source, flags))
            except (re.error, ValueError, OverflowError) as exc:
                where = f"{at}[{index}]"
                raise CheckpointError(
                    f"Invalid redaction: not a pattern ({exc}); write a Python regular expression @ {where}", path=where
                ) from None
        scopes = {}
        for where, inner in (form.scopes or {}).items():
            at_scope = f"{path}.scopes[{json.dumps(where)}]"
            if not where or "#" in where:
                raise CheckpointError(
                    f"Invalid redaction: a scope is a subflow mount path, got {where!r} @ {at_scope}", path=at_scope
                )
            if isinstance(inner, dict) and "scopes" in inner:
                raise CheckpointError(
                    "Invalid redaction: a scope holds no scopes of its own (name the nested mount's path) "
                    f"@ {at_scope}",
                    path=at_scope,
                )
            scopes[where] = cls.from_dict(inner, at_scope)
        try:
            return cls(keys=form.keys, patterns=compiled, fields=form.fields, scopes=scopes)
        except ValueError as exc:  # a field path that could hide nothing (the rule's own check)
            raise CheckpointError(f"Invalid redaction: {exc} @ {path}.fields", path=f"{path}.fields") from None


# -- the rule as untrusted JSON (a stored run's ``redaction`` column): the one codec -------------
@attrs.frozen
class _RuleForm:
    keys: list[str]
    patterns: list[tuple[str, int]]
    fields: dict[str, list[str]]
    scopes: dict[str, Any] | None = None


def _pattern_pair(value: Any, _type: Any) -> tuple[str, int]:
    if type(value) is not list or len(value) != 2 or type(value[0]) is not str or type(value[1]) is not int:
        raise Expected(f"expected a [source, flags] pair, got {json_type(value)}")
    return value[0], value[1]


_CONVERTER = make_converter()
_CONVERTER.register_structure_hook_func(lambda t: t == tuple[str, int], _pattern_pair)
_CONVERTER.register_structure_hook(_RuleForm, every_key(_RuleForm, _CONVERTER, optional=("scopes",)))


def shown_summary(hidden: bool, value: Any) -> str:
    """A value's one-line summary as decision evidence shows it: ``EVENT_PLACEHOLDER`` when the
    run hides its key (``hidden``), else ``summary.summarize_value``."""
    return EVENT_PLACEHOLDER if hidden else summarize_value(value)


def _is_item(key: str, value: Any) -> bool:
    """``runs/<map>/<index>``: a map item's namespace (its key the item's index) inside a child's."""
    return isinstance(value, dict) and key.isdigit() and key.isascii()


def _scrub(value: Any, parts: list[str], path: str, hidden: list[str], placeholder: str) -> Any:
    if isinstance(value, list):
        return [_scrub(item, parts, path, hidden, placeholder) for item in value]
    if not isinstance(value, dict):
        return value
    chosen = _selector(parts[0])
    if chosen is not None:  # ``[name=value]``: this object only when its ``name`` is ``value``
        return _scrub(value, parts[1:], path, hidden, placeholder) if value.get(chosen[0]) == chosen[1] else value
    if parts[0] not in value:
        return value
    out = dict(value)
    if len(parts) == 1:
        out[parts[0]] = placeholder
        hidden.append(path)
    else:
        out[parts[0]] = _scrub(value[parts[0]], parts[1:], path, hidden, placeholder)
    return out


NO_REDACTION = Redaction()
