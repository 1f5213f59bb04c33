"""Strict readers for ``from_dict``: fail closed, and say where.

Law: a dict read back from a checkpoint is trusted only after every field is checked —
unknown keys are refused, required keys must be present, each value must have its type —
and the error names the path of the first bad field (``$.evidence.read[2].summary``), in a
``WireFormatError``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from flowchart._core.values import NotJsonSafe, copy_json
from governance._json import describe_shape
from governance.errors import WireFormatError

_MISSING = object()


def fail(path: str, problem: str) -> WireFormatError:
    """The error for a bad field at ``path``."""
    return WireFormatError(f"{path}: {problem}", path=path)


def as_dict(value: Any, path: str, *, required: Collection[str], optional: Collection[str] = ()) -> dict[str, Any]:
    """Check that ``value`` is a dict with all ``required`` keys and no key outside both sets."""
    if not isinstance(value, dict):
        raise fail(path, f"expected a dict, got {describe_shape(value)}")
    for key in required:
        if key not in value:
            raise fail(f"{path}.{key}", "required field is missing")
    allowed = set(required) | set(optional)
    extra = sorted(str(k) for k in value if k not in allowed)
    if extra:
        raise fail(f"{path}.{extra[0]}", "unknown field")
    return value


def string(d: dict[str, Any], key: str, path: str, *, optional: bool = False) -> str | None:
    """``d[key]`` as a str (``None`` when optional and absent)."""
    value = d.get(key, _MISSING)
    if value is _MISSING and optional:
        return None
    if not isinstance(value, str):
        raise fail(f"{path}.{key}", f"expected a str, got {describe_shape(value)}")
    return value


def required_string(d: dict[str, Any], key: str, path: str) -> str:
    """``d[key]``, which must be a str."""
    value = string(d, key, path)
    assert value is not None
    return value


def integer(d: dict[str, Any], key: str, path: str) -> int:
    """``d[key]``, which must be an int (not a bool)."""
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(f"{path}.{key}", f"expected an int, got {describe_shape(value)}")
    return value


def number(d: dict[str, Any], key: str, path: str) -> float:
    """``d[key]``, which must be an int or a float (not a bool); returned as a float."""
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise fail(f"{path}.{key}", f"expected a number, got {describe_shape(value)}")
    try:
        return float(value)
    except OverflowError:  # an int past the float range (a wire value is untrusted)
        raise fail(f"{path}.{key}", "expected a number, got an integer too large for a float") from None


def boolean(d: dict[str, Any], key: str, path: str) -> bool:
    """``d[key]``, which must be a bool."""
    value = d.get(key)
    if not isinstance(value, bool):
        raise fail(f"{path}.{key}", f"expected a bool, got {describe_shape(value)}")
    return value


def listing(d: dict[str, Any], key: str, path: str) -> list[Any]:
    """``d[key]``, which must be a list."""
    value = d.get(key)
    if not isinstance(value, list):
        raise fail(f"{path}.{key}", f"expected a list, got {describe_shape(value)}")
    return value


def json_value(d: dict[str, Any], key: str, path: str) -> Any:
    """A plain copy of ``d[key]``, which must be JSON-safe as a run stores it (any shape;
    ``flowchart._core.values.copy_json``: no NaN, no lone surrogate)."""
    value = d.get(key)
    try:
        return copy_json(value)
    except NotJsonSafe:
        raise fail(f"{path}.{key}", f"expected a JSON-safe value, got {describe_shape(value)}") from None


def json_object(d: dict[str, Any], key: str, path: str) -> dict[str, Any]:
    """A plain copy of ``d[key]``, which must be a JSON-safe dict."""
    value = d.get(key)
    if not isinstance(value, dict):
        raise fail(f"{path}.{key}", f"expected a JSON-safe dict, got {describe_shape(value)}")
    copied: dict[str, Any] = json_value(d, key, path)
    return copied
