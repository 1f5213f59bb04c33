"""JSON-safe copies, shape descriptions and fingerprints — shared by every governance module.

Law: what governance hands back to a run — a ledger row, a pause payload, a request id —
is built only from JSON-safe values (dict/list/str/int/float/bool/None), so it can be
committed to the run's state, written into a checkpoint and compared in another process.
``json_safe`` makes such a copy of anything (never raising: a chain must never raise);
``describe_*`` name a value's SHAPE without ever quoting the value, so errors and
refusals can say what went wrong without leaking what a person typed.

What "JSON-safe" means, how a value is checked and copied, and the canonical JSON every id
is hashed from are flowchart's (``flowchart._core.values``, ``flowchart._core.fingerprint``, both L0):
governance adds only the never-raising fallback for what a run could not store.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from typing import Any

from flowchart._core.fingerprint import json_digest
from flowchart._core.values import NotJsonSafe, copy_json, escape_surrogates

_CIRCULAR = "[circular]"


def json_safe(value: Any) -> Any:
    """Return a JSON-safe deep copy of ``value``.

    A value a run could store is copied by ``flowchart._core.values.copy_json``. Otherwise:
    mappings become dicts with string keys, lists/tuples/sets become lists, objects with a
    ``to_dict()`` are converted through it, and any other object becomes ``str(value)``; a
    non-finite float becomes its text (``"nan"``) and a lone surrogate is written out as
    ``\\uXXXX`` text, so the copy can always be committed. A container that contains itself is
    cut with ``"[circular]"``. Never raises.
    """
    try:
        return copy_json(value)
    except (NotJsonSafe, RecursionError):
        return _safe(value, set())


def _safe(value: Any, seen: set[int]) -> Any:
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    # The id set guards recursion: a self-containing value must not crash a chain.
    if id(value) in seen:
        return _CIRCULAR
    seen.add(id(value))
    try:
        if isinstance(value, Mapping):
            return {escape_surrogates(str(k)): _safe(v, seen) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [_safe(v, seen) for v in value]
        if isinstance(value, set | frozenset):
            # Sorted by the JSON text so the copy (and any fingerprint of it) is stable.
            items = [_safe(v, seen) for v in value]
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=str))
        to_dict = getattr(value, "to_dict", None)
        if callable(to_dict):
            try:
                return _safe(to_dict(), seen)
            except Exception:
                return str(value)
        return str(value)
    finally:
        seen.discard(id(value))


def as_tuple(items: Iterable[Any]) -> tuple[Any, ...]:
    """``tuple(items)``, typed for attrs converters (a read-only sequence field)."""
    return tuple(items)


def describe_json_shape(value: Any) -> str:
    """Name a value's shape in JSON words: ``null``, ``a boolean``, ``a number``, ``a string``,
    ``an array`` or ``an object`` (the vocabulary of agentfootprint's malfunction messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object"


def describe_shape(value: Any) -> str:
    """Name a value's shape in Python words, never its content.

    ``None`` is ``nothing``; a dict names its (sorted) keys — ``a dict with keys ['by', 'ok']``
    — or is ``an empty dict``; anything else is its type with an article (``a str``,
    ``an int``, ``a list``, ``a CheckInRequest``).
    """
    if value is None:
        return "nothing"
    if isinstance(value, dict):
        if not value:
            return "an empty dict"
        keys = sorted(str(k) for k in value)
        return f"a dict with keys {keys!r}"
    name = type(value).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    return f"{article} {name}"


def fingerprint(prefix: str, value: Any) -> str:
    """An opaque, deterministic id: ``<prefix>_`` + the first 32 hex digits of the SHA-256 of
    the canonical JSON (``flowchart._core.fingerprint``) of the JSON-safe copy of ``value``. It
    carries no value from the run."""
    return f"{prefix}_{json_digest(json_safe(value))[:32]}"
