"""JSON Schema from Python type hints, and the values a typed tool function receives.

Law: every annotation maps to one schema, or is refused. ``str`` ``int`` ``float`` ``bool``
``None`` map to their JSON types (``float`` is ``number``, so an integer is accepted);
``X | None`` / ``Optional[X]`` add ``"null"``; ``list[X]`` is an array of ``X``;
``dict[str, X]`` an object whose values are ``X``; ``Literal[...]`` and ``Enum`` classes an
``enum`` of their values; ``TypedDict``, dataclass and attrs classes an object with one
property per field (fields without a default are required); ``Annotated[X, "text"]`` is
``X`` described by ``text``; ``Any`` accepts anything. Anything else — a set, a tuple, a
class the model cannot send — is an ``UnsupportedAnnotation`` naming where it was found,
and a recursive class is refused rather than expanded forever.

The schemas use only what ``agent._tools.tools.validate_args`` checks (``type``, ``enum``,
``properties``, ``required``, ``items``), plus ``description``, ``default`` and
``additionalProperties`` for the model; a union of two object types is an ``anyOf``.
Arguments are converted back to the annotated Python values (Enum members, dataclass and
attrs instances) by one cattrs converter, only for parameters that need it.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from flowchart.lowlevel import NotJsonSafe, copy_json

_SIMPLE: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
_CONVERTER = cattrs.Converter()


class UnsupportedAnnotation(TypeError):
    """An annotation with no JSON Schema; ``where`` says where inside the parameter's type it is."""

    def __init__(self, what: str, where: str = "") -> None:
        super().__init__(what)
        self.what = what
        self.where = where


def _is_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, dict) and hasattr(tp, "__required_keys__")


def _record_fields(tp: Any) -> list[tuple[str, Any, bool, Any]] | None:
    """``(name, annotation, required, default)`` per field of a TypedDict/dataclass/attrs class."""
    if _is_typeddict(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return [(name, hint, name in tp.__required_keys__, dataclasses.MISSING) for name, hint in hints.items()]
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        hints = typing.get_type_hints(tp, include_extras=True)
        out = []
        for field in dataclasses.fields(tp):
            has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
            out.append((field.name, hints[field.name], not has_default, field.default))
        return out
    if attrs.has(tp):
        hints = typing.get_type_hints(tp, include_extras=True)
        return [
            (a.name, hints.get(a.name, a.type), a.default is attrs.NOTHING, a.default)
            for a in attrs.fields(tp)
            if a.init
        ]
    return None


#: what ``json_default`` returns for a default the schema cannot show
NO_DEFAULT: Any = dataclasses.MISSING


def json_default(value: Any) -> Any:
    """A default as the schema shows it (an Enum by its value), or ``NO_DEFAULT`` when it is not JSON."""
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return copy_json(value)
    except NotJsonSafe:
        return NO_DEFAULT


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if "anyOf" in schema:
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    kind = schema.get("type")
    if kind is None:
        return schema  # ``Any`` already accepts null
    out = dict(schema)
    out["type"] = [*kind, "null"] if isinstance(kind, list) else [kind, "null"]
    if "enum" in out:
        out["enum"] = [*out["enum"], None]
    return out


def schema_for(tp: Any, where: str = "", _seen: tuple[Any, ...] = ()) -> dict[str, Any]:
    """The JSON Schema of annotation ``tp`` (``UnsupportedAnnotation`` when it has none)."""
    if tp is Any:
        return {}
    if tp in _SIMPLE:
        return {"type": _SIMPLE[tp]}
    if tp is None:
        return {"type": "null"}
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        schema = schema_for(args[0], where, _seen)
        text = next((a for a in args[1:] if isinstance(a, str)), None)
        return schema if text is None else {**schema, "description": text}
    if origin is typing.Union or origin is types.UnionType:
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            inner = schema_for(members[0], where, _seen)
            return _nullable(inner) if len(members) < len(args) else inner
        schemas = [schema_for(m, where, _seen) for m in members]
        if all(set(s) == {"type"} and isinstance(s["type"], str) for s in schemas):
            union: dict[str, Any] = {"type": [s["type"] for s in schemas]}
        else:
            union = {"anyOf": schemas}
        return _nullable(union) if len(members) < len(args) else union
    if origin is typing.Literal:
        return _enum_schema(list(args), where)
    if tp is list or origin is list:
        if not args:
            return {"type": "array"}
        return {"type": "array", "items": schema_for(args[0], f"{where}[]", _seen)}
    if tp is dict or origin is dict:
        if not args:
            return {"type": "object"}
        if args[0] is not str:
            raise UnsupportedAnnotation(f"dict keys must be str (JSON object keys), got {_name(args[0])}", where)
        return {"type": "object", "additionalProperties": schema_for(args[1], f"{where}{{}}", _seen)}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return _enum_schema([member.value for member in tp], where)
    fields = _record_fields(tp)
    if fields is not None:
        if tp in _seen:
            raise UnsupportedAnnotation(f"{_name(tp)} refers to itself (a recursive type has no finite schema)", where)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for name, hint, needed, default in fields:
            prop = schema_for(hint, f"{where}.{name}", (*_seen, tp))
            if not needed and default is not dataclasses.MISSING:
                shown = json_default(default)
                if shown is not NO_DEFAULT:
                    prop = {**prop, "default": shown}
            properties[name] = prop
            if needed:
                required.append(name)
        out: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            out["required"] = required
        return out
    raise UnsupportedAnnotation(f"{_name(tp)} has no JSON Schema", where)


def _enum_schema(values: list[Any], where: str) -> dict[str, Any]:
    kinds: list[str] = []
    for value in values:
        kind = _SIMPLE.get(type(value))
        if kind is None:
            raise UnsupportedAnnotation(f"the choice {value!r} is not a JSON value", where)
        if kind not in kinds:
            kinds.append(kind)
    return {"type": kinds[0] if len(kinds) == 1 else kinds, "enum": list(values)}


def _name(tp: Any) -> str:
    """``set[int]`` for a generic, else the class name."""
    if typing.get_origin(tp) is not None:
        return repr(tp).removeprefix("typing.")
    return getattr(tp, "__name__", None) or repr(tp)


def needs_structuring(tp: Any) -> bool:
    """True when a JSON value for ``tp`` must be converted (an Enum or a dataclass/attrs class inside)."""
    if isinstance(tp, type):
        if issubclass(tp, enum.Enum):
            return True
        if (dataclasses.is_dataclass(tp) or attrs.has(tp)) and not _is_typeddict(tp):
            return True
        if _is_typeddict(tp):
            return any(needs_structuring(hint) for hint in typing.get_type_hints(tp).values())
        return False
    return any(needs_structuring(arg) for arg in typing.get_args(tp) if not isinstance(arg, str | int | float))


def structure(value: Any, tp: Any) -> Any:
    """``value`` (JSON the model sent, already schema-checked) as annotation ``tp`` wants it."""
    return _CONVERTER.structure(value, tp)


def unstructure(value: Any) -> Any:
    """An instance ``structure`` made, back as JSON (Enum members by value)."""
    return _CONVERTER.unstructure(value)


def parameter_schemas(hints: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """One schema per parameter annotation (errors carry the parameter name in ``where``)."""
    out: dict[str, dict[str, Any]] = {}
    for name, hint in hints.items():
        try:
            out[name] = schema_for(hint)
        except UnsupportedAnnotation as exc:
            raise UnsupportedAnnotation(exc.what, f"{name}{exc.where}") from None
    return out
