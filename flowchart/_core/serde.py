"""The strict converters' factory and their error messages (checkpoints and trace files build on it).

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
from typing import Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
)
from cattrs.gen import make_dict_structure_fn

from flowchart._core.errors import CheckpointError
from flowchart._core.untrusted import check, parse
from flowchart._core.untrusted import step as _step
from flowchart._core.values import NotJsonSafe, copy_json

_T = TypeVar("_T")

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


def _homogeneous_tuple(tp: Any) -> bool:
    args = get_args(tp)
    return get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis


def _strict_tuple(tp: Any, converter: cattrs.Converter) -> Any:
    inner = list_structure_factory(tp, converter)

    def hook(value: Any, _type: Any) -> Any:  # JSON has lists only: a string is not a tuple of characters
        if type(value) is not list:
            raise Expected(f"expected a list, got {json_type(value)}")
        return tuple(inner(value, _type))

    return hook


def _literal(value: Any, tp: Any) -> Any:
    choices = get_args(tp)
    if not any(type(value) is type(c) and value == c for c in choices):
        raise Expected(f"expected one of {', '.join(map(repr, choices))}, got {value!r}")
    return value


def every_key(cl: type, converter: cattrs.Converter, optional: tuple[str, ...] = ()) -> Any:
    """Structure ``cl`` from an object that must carry every field but the ``optional`` ones (an
    optional field that is absent takes its default, or ``None`` when it has none)."""
    fields = [f for f in attrs.fields(cl) if f.init and f.name not in optional]
    unset = tuple(f.name for f in attrs.fields(cl) if f.init and f.name in optional and f.default is attrs.NOTHING)
    inner: list[Any] = []  # built on first use, once every hook it relies on is registered

    def hook(value: Any, _type: Any) -> Any:
        if type(value) is not dict:
            raise Expected(f"expected an object, got {json_type(value)}")
        if unset and any(name not in value for name in unset):
            value = {**dict.fromkeys(unset), **value}
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
    """The one factory of the package's strict converters (fail closed, paths in errors): the
    checkpoint's (``pause.CONVERTER``, with ``pause.checkpoint_hooks``) and the trace file's
    (``trace.make_trace_converter``, which holds checkpoints too); a new untrusted loader starts here."""
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for kind in (str, int, float, bool):
        converter.register_structure_hook(kind, _strict(kind))
    converter.register_structure_hook(Any, _json_value)
    converter.register_structure_hook_factory(lambda t: t is list or get_origin(t) is list, _strict_list)
    converter.register_structure_hook_factory(lambda t: t is dict or get_origin(t) is dict, _strict_dict)
    converter.register_structure_hook_factory(_homogeneous_tuple, _strict_tuple)
    converter.register_structure_hook_func(lambda t: get_origin(t) is Literal, _literal)
    return converter


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


def load_error(exc: BaseException, what: str, path: str = "$") -> CheckpointError:
    """Turn a cattrs failure into one ``CheckpointError`` that names every bad path (``path``:
    where the structured value sits in its document)."""
    found = messages(exc, path) or [(str(exc), path)]
    lines = [f"{text} @ {path}" for text, path in found]
    return CheckpointError(f"Invalid {what}: {'; '.join(lines)}", path=found[0][1], detail=lines)


def structure(
    converter: cattrs.Converter, data: Any, cl: type[_T], *, what: str, path: str = "$", checked: bool = False
) -> _T:
    """THE way parsed untrusted JSON becomes a value of ``cl``: the limits of
    ``flowchart._core.untrusted`` (depth, integer size, non-finite numbers, lone surrogates —
    skipped when ``checked``: ``data`` came from ``loads``), then ``converter`` (from
    ``make_converter``, with ``cl``'s hooks). Anything else is ONE ``CheckpointError``
    (``Invalid <what>: <problem> @ <path>``) naming every bad path; ``path`` is where ``data``
    sits in its document (``$.pause_data.check_in``)."""
    if not checked:
        check(data, what=what, path=path)
    try:
        return converter.structure(data, cl)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, what, path) from None


def dumps(data: Any) -> str:
    """Deterministic compact JSON (non-ASCII kept, no NaN)."""
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


_ACYCLIC = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False)


def dumps_acyclic(data: Any) -> str:
    """``dumps`` of data that holds no cycle — a commit's values (``copy_json`` copies, parsed
    JSON) or a fresh ``copy_json`` copy: the same text, without the encoder's bookkeeping of
    the containers it is inside (an entry set and removed per container: 13 % of the
    instructions of a 1,000-turn conversation's seed row). A cycle raises ``RecursionError``
    here, where ``dumps`` raises ``ValueError``."""
    return _ACYCLIC.encode(data)


def loads(text: str | bytes, *, what: str) -> Any:
    """Parse untrusted JSON within the limits of ``flowchart._core.untrusted`` or raise
    ``CheckpointError`` naming the position or path."""
    return parse(text, what=what)


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


__all__ = [
    "Expected",
    "check_version",
    "dumps",
    "every_key",
    "json_type",
    "load_error",
    "loads",
    "make_converter",
    "messages",
    "structure",
]
