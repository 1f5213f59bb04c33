"""JSON-safe values: the only things a run may store.

Law: every value that enters committed state is JSON-safe (dict with str keys, list,
str, int, float, bool, None) and is a private copy: ``copy_json`` validates and copies
in ONE pass, so a write costs in proportion to the value written and nothing else.
Tuples are accepted on the way in and stored as lists (JSON has no tuple). A string
holding a lone surrogate (``"\\ud800"``, from JSON text or a model reply) is refused like
any other unsafe value, naming where it is: it is not Unicode text, and no UTF-8 writer
(a store, a trace file, a terminal) can write it.

Committed values are never mutated in place afterwards (the scope's tracked views copy
on write), which is what lets a commit share them instead of cloning the state.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

# a set: one hash lookup, not three comparisons; a ``str`` is checked by ``_text``
_PRIMITIVES = frozenset((int, bool, type(None)))
_SURROGATE = re.compile("[\ud800-\udfff]")
_SEQUENCES = (list, tuple)
_SCALARS = (bool, int, str)


class NotJsonSafe(ValueError):
    """A value cannot be stored; ``where`` is the path inside it (``[2].role``)."""

    def __init__(self, what: str, where: str) -> None:
        super().__init__(f"{what} at {where or 'the top level'}")
        self.what = what
        self.where = where


def _describe(value: Any) -> str:
    kind = type(value)
    if callable(value):
        return f"a function ({getattr(value, '__qualname__', kind.__name__)})"
    name = f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__name__
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"


class _Unsafe(Exception):
    """Raised inside :func:`_copy`; the path to the bad spot is collected while it unwinds."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.path: list[str] = []  # innermost first


def _text(value: str) -> bool:
    """True when ``value`` is Unicode text: no lone surrogate (ASCII, the usual case, is one C call)."""
    return value.isascii() or _SURROGATE.search(value) is None


def escape_surrogates(value: str) -> str:
    """``value`` with every lone surrogate written out as ``\\uXXXX`` text (for free text a
    record keeps, such as an error message, where refusing it would lose the record)."""
    if _text(value):
        return value
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)


def _not_text(value: str) -> str:
    found = _SURROGATE.search(value)
    return f"a string with a lone surrogate (U+{ord(found.group()) if found else 0:04X})"


def copy_json(value: Any, where: str = "") -> Any:
    """Return a deep, plain copy of ``value``; raise ``NotJsonSafe`` naming the bad spot.

    Subclasses of dict and list (the scope's tracked views) come out as plain dict/list.
    """
    kind = type(value)
    if kind in _PRIMITIVES or (kind is str and _text(value)):
        return value
    try:
        return _copy(value)
    except _Unsafe as bad:
        raise NotJsonSafe(bad.what, where + "".join(reversed(bad.path))) from None


def _copy(value: Any) -> Any:
    # the path is only built when something is wrong: a copy that succeeds formats nothing
    # containers first: callers copy primitives and ASCII strings inline, so what reaches
    # here is mostly a dict or a list (no scalar is an instance of either)
    kind = type(value)
    if kind is dict or isinstance(value, dict):
        # a C copy of the entries, then one pass that checks them and replaces each container
        # by its copy: a primitive or an ASCII string (most values) costs two type tests
        out = dict.copy(value)
        for k, v in out.items():
            if type(k) is not str:
                raise _Unsafe(f"a non-string dict key {k!r}")
            if not k.isascii() and not _text(k):  # the ASCII test inline: one C call per key
                raise _Unsafe(f"a dict key that is {_not_text(k)}")
            kv = type(v)
            if kv is str:
                if v.isascii():
                    continue
            elif kv in _PRIMITIVES:
                continue
            try:
                out[k] = _copy(v)  # same keys: replacing a value while iterating is allowed
            except _Unsafe as bad:
                bad.path.append(f".{k}")
                raise
        return out
    if kind is list or isinstance(value, _SEQUENCES):
        copied = list.copy(value) if isinstance(value, list) else list(value)
        for i, v in enumerate(copied):
            kv = type(v)
            if kv is str:
                if v.isascii():
                    continue
            elif kv in _PRIMITIVES:
                continue
            try:
                copied[i] = _copy(v)
            except _Unsafe as bad:
                bad.path.append(f"[{i}]")
                raise
        return copied
    if kind in _PRIMITIVES:
        return value
    if kind is str:
        if _text(value):
            return value
        raise _Unsafe(_not_text(value))
    if kind is float:
        if math.isfinite(value):
            return value
        raise _Unsafe(f"a non-finite float ({value})")
    if isinstance(value, _SCALARS):  # subclasses such as IntEnum / StrEnum
        if isinstance(value, str) and not _text(value):
            raise _Unsafe(_not_text(value))
        return value
    if isinstance(value, float):
        return _copy(float(value))
    if isinstance(value, Mapping):  # read-only views such as ctx.args and MappingProxyType
        return _copy(dict(value.items()))
    raise _Unsafe(f"{_describe(value)} is not JSON-safe")


def is_json_safe(value: Any) -> bool:
    """True when ``copy_json`` would accept ``value``."""
    try:
        copy_json(value)
    except NotJsonSafe:
        return False
    return True


def _kind(value: Any) -> type:
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return int
    if isinstance(value, float):
        return float
    if isinstance(value, str):
        return str
    if isinstance(value, dict):
        return dict
    if isinstance(value, list):
        return list
    return type(value)


def _same_kinds(a: Any, b: Any) -> bool:
    kind = _kind(a)
    if kind is not _kind(b):
        return False
    if kind is dict:
        return all(_same_kinds(v, dict.__getitem__(b, k)) for k, v in dict.items(a))
    if kind is list:
        return all(_same_kinds(x, y) for x, y in zip(list.__iter__(a), list.__iter__(b), strict=True))
    return True


def same_json(a: Any, b: Any) -> bool:
    """``a == b`` as JSON sees it: ``1``, ``1.0`` and ``True`` are three different values.

    Python's ``==`` says ``1 == 1.0 == True``; a commit that trusted it would drop the
    write of ``True`` over ``1``. The type walk only runs when ``==`` already holds.
    """
    return a is b or (a == b and _same_kinds(a, b))


def slot_setters(cls: type) -> tuple[Callable[[Any, Any], None], ...]:
    """The slots' own setters of the slotted attrs class ``cls``, in field order.

    A hot path that makes a frozen value many times fills ``object.__new__(cls)`` through
    them: the same value as the class call (equal, same hash and repr, still frozen), without
    attrs' frozen ``__init__``, which goes through ``object.__setattr__`` once per field.
    Kept only where ``make bench`` shows it buys ≥ 5 %: the engine's ops, commits and stage
    contexts (``commits.make_op`` / ``make_commit``, ``Traverser.context``; W1 and W6,
    docs/performance.md "Round seven").
    """
    return tuple(cls.__dict__[field.name].__set__ for field in attrs.fields(cls))
