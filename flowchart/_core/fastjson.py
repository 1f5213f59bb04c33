"""The optional ``[fast]`` extra: orjson, used only where it provably changes nothing.

Law (determinism): a trace's bytes are the same whether or not orjson is installed, and a
file loads — or is refused, with the same words — the same either way. orjson is never
required: without it (or inside ``stdlib_only()``, the seam the tests use) every caller takes
the standard library's ``json``.

Why orjson's text can be trusted only here (the reasoning the tests check, byte for byte):

- Writing (``dumps_exact``). orjson with no options writes compact JSON (no spaces), keeps
  non-ASCII as UTF-8, escapes ``"`` ``\\`` and control characters as the standard library's
  ``dumps(ensure_ascii=False, separators=(",", ":"))`` does (short escapes for ``\\b \\f \\n
  \\r \\t``, ``\\u00XX`` for the rest), keeps dict order and writes tuples as lists. Where the
  two writers differ: floats (``1e-05`` vs ``0.00001``, ``1.5e-07`` vs ``1.5e-7``; NaN and
  Infinity, which orjson writes as ``null`` and ``serde.dumps`` refuses) and types orjson
  writes that ``json`` refuses (datetime, UUID, dataclasses, enums, numpy) or subclasses. So
  orjson's text is kept only for data whose every value is exactly a dict, list, tuple,
  str, int, bool or None, dict keys exactly str (``plain``: no float at all). What orjson
  refuses there (an int past 64 bits, a lone surrogate, nesting past its limit) makes
  ``dumps_exact`` return ``None`` and the caller writes with ``json``.
- Reading (``loads_canonical``). orjson cannot refuse a duplicate key (the last one wins)
  and reads an integer past 64 bits as a float. So its result is kept only when writing it
  again gives back the input byte for byte: a repeated key, any whitespace, an escape the
  writer would not write, a number in another form cannot survive that round trip, and on
  text that survives it both parsers read the same values (RFC 8259 values, correctly
  rounded floats). Anything else — a file with floats the writers print differently, text
  not written by ``Trace.save`` — returns ``None`` and takes the strict standard path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import chain, compress
from operator import is_, not_
from typing import Any

_orjson: Any
try:  # the [fast] extra
    import orjson as _orjson
except ImportError:  # pragma: no cover - exercised by the stdlib_only() seam in the tests
    _orjson = None

_enabled = [True]
_PLAIN = frozenset((dict, list, tuple, str, int, bool, type(None)))
_CONTAINERS = frozenset((dict, list, tuple))
_STR = frozenset((str,))
_is_dict = partial(is_, dict)
_MAX_NESTING = 250  # below orjson's own limit: deeper data is left to json (which may refuse it)
_WHOLE = 1 << 16  # a text shorter than this is encoded and compared whole (a stored row)
CHUNK = 1024
"""Items of a top-level list compared per round trip (the text is never encoded whole twice)."""
READ_MAX = 1 << 24
"""The longest text (16 MiB) orjson reads. Past it the standard library reads: orjson's parse holds
the text, its own copy of it and the values at once (a 51 MB trace file peaked at 5.8× its size,
the standard path at 4.5×) and, the narrative stored as columns, reads it no faster (1.0×)."""


def available() -> bool:
    """True when orjson is installed and not switched off by ``stdlib_only()``."""
    return _orjson is not None and _enabled[0]


@contextlib.contextmanager
def stdlib_only() -> Iterator[None]:
    """Within: every caller takes the standard library's ``json``, as if orjson were not installed."""
    before = _enabled[0]
    _enabled[0] = False
    try:
        yield
    finally:
        _enabled[0] = before


def plain(data: Any) -> bool:
    """True when every value in ``data`` is exactly a dict (with str keys), list, tuple, str,
    int, bool or None, nested at most ``_MAX_NESTING`` deep (a cycle is deeper than that).

    Walked a level at a time, each level in C (``map``, ``chain``, ``compress``, ``set``): no
    Python code runs per value, so a long history of small messages costs what its values do."""
    if type(data) not in _CONTAINERS:
        return type(data) in _PLAIN
    level: list[Any] = [data]
    for _ in range(_MAX_NESTING):
        flags = list(map(_is_dict, map(type, level)))
        dicts = list(compress(level, flags))
        if dicts and not set(map(type, chain.from_iterable(dicts))) <= _STR:
            return False
        others = chain.from_iterable(compress(level, map(not_, flags)))
        items = list(chain(chain.from_iterable(map(dict.values, dicts)), others))
        types = list(map(type, items))
        kinds = set(types)
        if not kinds <= _PLAIN:
            return False
        if kinds.isdisjoint(_CONTAINERS):
            return True
        level = list(compress(items, map(_CONTAINERS.__contains__, types)))
    return False


def dumps_exact(data: list[Any] | dict[str, Any], *, proved: bool = False) -> bytes | None:
    """orjson's text of ``data`` (a list or dict, UTF-8) when it is provably ``serde.dumps(data)``, else
    ``None``. ``proved``: the caller has already shown ``plain(data)`` its own, cheaper way
    (knowing the data's shape; ``trace_codec.plain_log``)."""
    if _orjson is None or not _enabled[0] or type(data) not in (list, dict) or not (proved or plain(data)):
        return None
    try:
        text: bytes = _orjson.dumps(data)
        return text
    except TypeError:  # orjson.JSONEncodeError: an int past 64 bits, a lone surrogate
        return None


def reads(size: int) -> bool:
    """True when orjson is to read a text of ``size`` characters or bytes (``available()`` and at
    most ``READ_MAX``; else the standard library reads it)."""
    return _orjson is not None and _enabled[0] and size <= READ_MAX


def loads_canonical(raw: str | bytes) -> tuple[Any] | None:
    """``(value,)``: ``raw`` parsed by orjson, when that value written again is ``raw`` byte for
    byte (one trailing newline allowed); else ``None`` (then the standard library parses it,
    as it does any text past ``READ_MAX``)."""
    if not reads(len(raw)):
        return None
    if type(raw) is str:  # a database column: compared as the UTF-8 orjson writes
        try:
            raw = raw.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: not text orjson writes
            return None
    elif type(raw) is not bytes:
        return None
    try:
        data = _orjson.loads(raw)
    except ValueError:  # orjson.JSONDecodeError: not JSON, NaN, nested past orjson's limit
        return None
    end = len(raw) - 1 if raw.endswith(b"\n") else len(raw)  # an end, not a slice: no copy of the text
    try:
        same = _same_text(data, raw, end)
    except TypeError:  # pragma: no cover - what orjson read it writes back; kept fail closed
        return None
    return (data,) if same else None


def loads_rows(rows: Sequence[str]) -> list[Any] | None:
    """``loads_canonical`` of each of ``rows`` (stored JSON documents, one value each), or
    ``None`` as soon as one is not the text orjson writes for its value. Each row is read
    on its own: no row can hold two values or part of one, whatever the others hold."""
    out: list[Any] = []
    append = out.append
    for row in rows:
        found = loads_canonical(row)
        if found is None:
            return None
        append(found[0])
    return out


def _same_text(data: Any, raw: bytes, end: int) -> bool:
    """``orjson.dumps(data) == raw[:end]``, compared piece by piece (a key at a time for the
    top-level object, ``CHUNK`` items at a time for its big lists) so the text is never encoded
    whole, and never sliced whole either (a big trace's text is tens of MB)."""
    assert _orjson is not None
    dumps = _orjson.dumps
    if type(data) is not dict or end < _WHOLE:
        return bool(dumps(data) == raw[:end])
    pos = 0
    for n, (key, value) in enumerate(data.items()):
        head = (b"," if n else b"{") + dumps(key) + b":"
        if not raw.startswith(head, pos, end):
            return False
        pos += len(head)
        if type(value) is list and len(value) > CHUNK:
            pos = _same_list(value, raw, pos, end)
            if pos < 0:
                return False
            continue
        text = dumps(value)
        if not raw.startswith(text, pos, end):
            return False
        pos += len(text)
    return raw[pos:end] == (b"}" if data else b"{}")


def _same_list(items: Sequence[Any], raw: bytes, pos: int, end: int) -> int:
    """Where ``items``'s text ends in ``raw[:end]`` if it starts at ``pos``, else ``-1``."""
    assert _orjson is not None
    for start in range(0, len(items), CHUNK):
        text = _orjson.dumps(items[start : start + CHUNK])
        piece = (b"[" if start == 0 else b",") + text[1:-1]
        if not raw.startswith(piece, pos, end):
            return -1
        pos += len(piece)
    return pos + 1 if raw.startswith(b"]", pos, end) else -1


__all__ = [
    "CHUNK",
    "READ_MAX",
    "available",
    "dumps_exact",
    "loads_canonical",
    "plain",
    "reads",
    "stdlib_only",
]
