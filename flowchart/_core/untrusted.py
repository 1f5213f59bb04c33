"""Untrusted JSON in: text or parsed data from outside the process, held within limits.

Law: a checkpoint, trace file or stored row is parsed and walked within fixed limits
before anything structures, stores or runs it — containers nest at most ``MAX_DEPTH``
levels, integers have at most ``MAX_INT_DIGITS`` digits, there is no NaN or Infinity
(nor a number too large for a float: all three are non-finite floats once parsed, and
refused as such), an object never repeats a key (JSON parsers disagree on which copy
wins; this one refuses), and no string — key or value — holds a lone surrogate (``"\\ud800"``
is valid JSON but not Unicode text: it would load, then fail to save, encode or show). Each
violation is ONE
``CheckpointError`` whose message and ``path`` name where it is
(``Invalid checkpoint: duplicate key 'amount' (an object names each key once) @
$.shared_state.order.amount``) — never a
``RecursionError`` or a ``ValueError`` from deep inside the interpreter, and never a
value that loads and then fails later (in ``to_json``, in a resume, in a viewer).

The walk is iterative (no recursion, whatever the input) and pays for paths only when
something is wrong; the parser runs with no per-number hook (a second, marking parse
happens only for an integer past the interpreter's own digit limit). A loader that
structures the document anyway may prove the limits on the way instead of the walk
(``parse_proven``): the parse itself flags duplicate keys, NaN/Infinity and huge integers,
and the proof shows the rest (depth, overflowed floats) with ``within_limits``; when it
cannot, the walk runs and refuses exactly as ``parse`` does.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from flowchart._core.errors import CheckpointError
from flowchart._core.fastjson import loads_canonical

MAX_DEPTH = 200
"""Containers (objects, lists) may nest this deep in a loaded document, no deeper."""
MAX_INT_DIGITS = 4300
"""The most digits an integer may have (Python's own limit for ``int(str)``)."""
_INT_LIMIT = 10**MAX_INT_DIGITS

_T = TypeVar("_T")

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def step(index: Any) -> str:
    """One JSON-path step: ``[2]``, ``.name`` or ``["odd key"]``."""
    if type(index) is int:
        return f"[{index}]"
    if isinstance(index, str) and _PLAIN_KEY.match(index):
        return f".{index}"
    return f"[{json.dumps(index, ensure_ascii=False)}]"


class _Refused:
    """What the parser's hooks put where a value is refused (found again by identity)."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what


def _parse_int(text: str) -> Any:
    digits = len(text) - text.startswith("-")
    if digits > MAX_INT_DIGITS:
        return _Refused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS} are allowed)")
    return int(text)


def parse(text: str | bytes, *, what: str) -> Any:
    """Parse ``text`` as JSON within the limits; ``CheckpointError`` names what and where."""
    return parse_proven(text, what=what, proof=_no_proof)[0]


def _no_proof(_data: Any) -> None:
    return None


def parse_proven(
    text: str | bytes, *, what: str, proof: Callable[[Any], _T | None], fast: bool = False
) -> tuple[Any, _T | None]:
    """``parse``, letting ``proof`` stand in for the limits walk: ``(data, proof(data))`` or ``(data, None)``.

    ``proof`` is asked only when the parse itself saw nothing wrong — no duplicate key, no
    ``NaN`` / ``Infinity`` literal, no integer past the interpreter's digit limit (and that
    limit is at most ``MAX_INT_DIGITS``) — so what is left to prove is that containers nest at
    most ``MAX_DEPTH`` deep and that no float overflowed to infinity (``within_limits``). A
    proof returns ``None`` unless it proved that of ALL of ``data`` (typically while it
    structures it, exact type by exact type); on ``None`` the full walk runs and refuses as
    ``parse`` would. Fail closed: nothing is returned that the walk would have refused.

    ``fast``: first try orjson (``fastjson.loads_canonical``: only text that orjson writes back
    byte for byte, so no key repeats, no NaN, no integer past 64 bits); its value is kept
    only when ``proof`` proves it, else the standard parse runs as above.
    """
    if fast:
        found = loads_canonical(text)
        if found is not None:
            proven = proof(found[0])
            if proven is not None:
                return found[0], proven
    duplicates: dict[int, str] = {}
    flagged: list[Any] = []  # kept alive, so no later object can reuse a flagged id
    if not isinstance(text, str):
        text = decoded(text)
    surrogates = isinstance(text, str) and _may_hold_surrogate(text)

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(items)
        if len(out) != len(items):
            seen: set[str] = set()
            for key, _ in items:
                if key in seen:
                    duplicates[id(out)] = key
                    flagged.append(out)
                    break
                seen.add(key)
        return out

    def constant(name: str) -> float:  # NaN, Infinity, -Infinity: refused by the walk
        flagged.append(name)
        return float(name)

    try:
        try:
            data = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
        except ValueError as exc:
            if isinstance(exc, json.JSONDecodeError | UnicodeDecodeError):
                raise
            # an integer past the interpreter's digit limit: parse again, marking it where it is
            duplicates.clear()
            flagged[:] = ["an integer past the digit limit"]
            data = json.loads(text, object_pairs_hook=pairs, parse_int=_parse_int, parse_constant=constant)
    except RecursionError:
        raise _refuse(what, f"nested deeper than {MAX_DEPTH} levels", "$") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"Invalid {what}: not JSON ({exc})", path="$") from None
    except ValueError as exc:  # bytes in an encoding json cannot detect, and the like
        raise CheckpointError(f"Invalid {what}: not JSON ({exc})", path="$") from None
    if surrogates:
        where = _lone_surrogate(data)
        if where is not None:
            raise _refuse(what, _SURROGATE, where)
    if not flagged and 0 < sys.get_int_max_str_digits() <= MAX_INT_DIGITS:
        proven = proof(data)
        if proven is not None:
            return data, proven
    check(data, what=what, duplicates=duplicates, surrogates=False)
    return data, None


_SURROGATE = "a lone surrogate in a string (valid JSON, but not Unicode text)"


def _holds_surrogate(data: Any) -> bool:
    """Whether parsed data (already within the limits) may hold a lone surrogate: its text, written
    in C, does not encode as UTF-8 (``_lone_surrogate`` then finds where)."""
    try:
        json.dumps(data, ensure_ascii=False, skipkeys=True, default=repr).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except (TypeError, ValueError):  # pragma: no cover - a hand-built oddity: walk it
        return True
    return False


def _may_hold_surrogate(text: str) -> bool:
    """Whether ``text`` could parse to a string holding a lone surrogate: it holds an escape that
    may be one (``\\ud…``; a pair is fine, the walk tells them apart) or a raw one (bytes are
    decoded with surrogatepass, as json does). Scans in C only — a regex over a 50 MB trace cost
    as much as parsing it."""
    if "\\ud" in text or "\\uD" in text:
        return True
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _lone_surrogate(root: Any) -> str | None:
    """The path of the first string (key or value) that is not Unicode text, else ``None``
    (iterative; run only when the text holds a surrogate escape or character)."""
    stack: list[tuple[Any, str]] = [(root, "$")]
    while stack:
        value, path = stack.pop()
        if type(value) is str:
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return path
        elif type(value) is dict:
            for key, item in reversed(dict.items(value)):
                try:
                    key.encode("utf-8")
                except UnicodeEncodeError:
                    return path + "[key]"
                stack.append((item, path + step(key)))
        elif type(value) is list:
            stack.extend((item, f"{path}[{i}]") for i, item in reversed(list(enumerate(value))))
    return None


def decoded(raw: bytes) -> str | bytes:
    """``raw`` as the text ``json.loads`` would parse (its encoding detected, lone surrogates
    kept), so the caller can let the bytes go before the parse; ``raw`` itself when it is not
    text in that encoding (the parse then refuses it, in its own words)."""
    try:
        return raw.decode(json.detect_encoding(raw), "surrogatepass")
    except UnicodeDecodeError:
        return raw


SAFE_LEAVES = frozenset((str, int, bool, type(None)))
"""Leaf types that cannot break a limit in a parsed document (ints: see ``parse_proven``)."""


def within_limits(value: Any, depth: int) -> bool:
    """True when ``value``, found at nesting ``depth`` (a top-level container is at 1), nests at
    most ``MAX_DEPTH`` deep and holds no non-finite float. Only for data from ``parse_proven``
    that reached its proof (its integers are within the digit limit and no key repeats)."""
    kind = type(value)
    if kind is not dict and kind is not list:
        return kind is not float or math.isfinite(value)
    level = [value]
    while level:
        if depth > MAX_DEPTH:
            return False
        deeper = []
        for container in level:
            items = dict.values(container) if type(container) is dict else container
            if set(map(type, items)) <= SAFE_LEAVES:  # gathered in C: no Python step per leaf
                continue
            for item in items:
                kind = type(item)
                if kind is dict or kind is list:
                    deeper.append(item)
                elif kind is float:
                    if not math.isfinite(item):
                        return False
                elif kind not in SAFE_LEAVES:
                    return False
        level = deeper
        depth += 1
    return True


def _refuse(what: str, problem: str, path: str) -> CheckpointError:
    shown = path if len(path) <= 120 else f"{path[:60]}…{path[-40:]}"  # error.path keeps it whole
    return CheckpointError(f"Invalid {what}: {problem} @ {shown}", path=path)


def _bad_leaf(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return not -_INT_LIMIT < value < _INT_LIMIT
    if kind is float:
        return not math.isfinite(value)
    return kind is _Refused


def _clean(root: Any, duplicates: dict[int, str]) -> bool:
    """The fast pass: True when nothing is wrong (no paths are built)."""
    if _bad_leaf(root):
        return False
    level = [root] if type(root) in (dict, list) else []
    depth = 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            return False
        deeper = []
        for container in level:
            if type(container) is dict:
                if duplicates and id(container) in duplicates:
                    return False
                items = dict.values(container)
            else:
                items = container
            for value in items:
                kind = type(value)
                if kind is dict or kind is list:
                    deeper.append(value)
                elif (kind is int or kind is float or kind is _Refused) and _bad_leaf(value):
                    return False
        level = deeper
    return True


def _problem(root: Any, duplicates: dict[int, str]) -> tuple[str, str]:
    """The slow pass, run only when the fast one failed: the first problem in document order."""
    stack: list[tuple[Any, str, int]] = [(root, "$", 1)]
    while stack:
        value, path, depth = stack.pop()
        kind = type(value)
        if kind is _Refused:
            return value.what, path
        if kind is int and _bad_leaf(value):
            return f"an integer of more than {MAX_INT_DIGITS} digits", path
        if kind is float and _bad_leaf(value):
            return f"expected a JSON value: a non-finite float ({value})", path
        if kind is not dict and kind is not list:
            continue
        if depth > MAX_DEPTH:
            return f"nested deeper than {MAX_DEPTH} levels", path
        if kind is dict:
            key = duplicates.get(id(value))
            if key is not None:
                return f"duplicate key {key!r} (an object names each key once)", path + step(key)
            children = [(v, path + step(k), depth + 1) for k, v in dict.items(value)]
        else:
            children = [(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
        stack.extend(reversed(children))
    raise AssertionError("the fast pass found a problem the slow pass did not")  # pragma: no cover


def check(
    data: Any, *, what: str, duplicates: dict[int, str] | None = None, path: str = "$", surrogates: bool = True
) -> None:
    """Refuse parsed (or hand-built) ``data`` that breaks a limit, naming the path: the limits,
    and (unless ``surrogates`` is False: ``parse`` looked at the text already) no lone surrogate
    in a string or a key — a dict handed to a loader is held to what its text would be."""
    found = duplicates or {}
    if _clean(data, found):
        if surrogates and _holds_surrogate(data):
            where = _lone_surrogate(data)
            if where is not None:
                raise _refuse(what, _SURROGATE, path + where[1:])
        return
    problem, where = _problem(data, found)
    raise _refuse(what, problem, path + where[1:])


__all__ = ["MAX_DEPTH", "MAX_INT_DIGITS", "SAFE_LEAVES", "check", "parse", "parse_proven", "step", "within_limits"]
