"""A memory item and the checks every backend shares: namespaces, origins, text, ids, words.

Laws:
- A namespace is a non-empty tuple of non-empty strings (``("acme", "u-7")``); anything
  else is refused with ``MemoryStoreError`` naming what was given and how to write it.
- An item's id is a digest of its namespace, text and origin: the same fact written by the
  same tool call twice is one item (a re-dispatched call deduplicates), and a run that
  remembers the same things gets the same ids — its record is byte-identical.
- What a backend reads back (stored rows) is untrusted: the text within ``MAX_TEXT``
  characters and free of lone surrogates, the namespace and origin parsed through the one
  codec (``flowchart.lowlevel.parse_untrusted``) and checked field by field; a bad row is a
  ``MemoryStoreError`` naming the item and the field, never a value sent to a model.
- Search words are the query's lowercase word characters minus a few English stop words
  (all of them when nothing else is left); every backend ranks by those words.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from agent.errors import MemoryStoreError
from flowchart import CheckpointError
from flowchart.lowlevel import (
    canonical_json,
    every_key,
    json_digest,
    json_type,
    make_converter,
    parse_untrusted,
    structure_untrusted,
)

__all__ = [
    "MAX_TEXT",
    "ORIGIN_FIELDS",
    "MemoryItem",
    "check_embedding",
    "check_namespace",
    "check_origin",
    "check_text",
    "cosine",
    "item_id",
    "read_row",
    "search_words",
]

MAX_TEXT = 16_000
"""The most characters one memory item may hold (written or read back)."""
ORIGIN_FIELDS = ("run_id", "conversation", "turn", "commit", "stage", "tool_call_id", "iteration")
"""What an item's origin may say: the run, conversation turn, commit (runtime stage id) and stage that wrote it."""
_INT_FIELDS = frozenset(("turn", "iteration"))


@attrs.frozen
class _StoredOrigin:
    """An origin as the one codec reads it back from a stored row (unknown keys refused)."""

    run_id: str | None = None
    conversation: str | None = None
    turn: int | None = None
    commit: str | None = None
    stage: str | None = None
    tool_call_id: str | None = None
    iteration: int | None = None


_CONVERTER = make_converter()
_CONVERTER.register_structure_hook(_StoredOrigin, every_key(_StoredOrigin, _CONVERTER, optional=ORIGIN_FIELDS))
_WORD = re.compile(r"\w+")
_STOP = frozenset(
    re.findall(
        r"\w+",
        "a an and are as at be but by do does did for from had has have how i in is it its me my of on or our so "
        "that the their them then there these they this to was we were what when where which who why will with "
        "you your",
    )
)


@attrs.frozen
class MemoryItem:
    """One remembered text: ``id``, ``namespace``, ``text``, ``origin`` (where it came from:
    ``run_id``, ``conversation``, ``turn``, ``commit``, ``stage``; ``None`` when the writer
    did not say), ``created`` and ``expires`` (seconds since the epoch; ``None``: never), and
    ``score`` (how well it matched the search that found it; higher is better)."""

    id: str
    namespace: tuple[str, ...]
    text: str
    origin: dict[str, Any] | None = None
    created: float = 0.0
    expires: float | None = None
    score: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The item as the record names it: ``{"id", "namespace", "text", "origin"}``."""
        return {"id": self.id, "namespace": list(self.namespace), "text": self.text, "origin": self.origin}


def check_namespace(namespace: Any, what: str = "namespace") -> tuple[str, ...]:
    """``namespace`` as a tuple of non-empty strings, or ``MemoryStoreError`` saying how to write one."""
    if not isinstance(namespace, tuple):
        hint = f"write {tuple(namespace)!r}" if isinstance(namespace, list) else 'write ("tenant", "user")'
        raise MemoryStoreError(
            f"memory {what} must be a tuple of strings, got {json_type(namespace)} {namespace!r}: {hint}"
        )
    if not namespace:
        raise MemoryStoreError(f'memory {what} must name at least one part, e.g. ("default",)')
    for index, part in enumerate(namespace):
        if not isinstance(part, str) or not part:
            raise MemoryStoreError(
                f"memory {what} part {index} must be a non-empty string, "
                f"got {json_type(part)} {part!r} in {namespace!r}"
            )
    return namespace


def check_text(text: Any, what: str = "memory text") -> str:
    """``text`` when it is a non-blank string within ``MAX_TEXT`` characters of real Unicode."""
    if not isinstance(text, str):
        raise MemoryStoreError(f"{what} must be a string, got {json_type(text)}")
    if not text.strip():
        raise MemoryStoreError(f"{what} is blank: there is nothing to remember")
    if len(text) > MAX_TEXT:
        raise MemoryStoreError(f"{what} is {len(text)} characters; at most {MAX_TEXT} are kept per item")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryStoreError(f"{what} holds a lone surrogate (not Unicode text)") from None
    return text


def check_origin(origin: Any, what: str = "origin") -> dict[str, Any] | None:
    """``origin`` as a plain dict of the known fields (strings, integers or None), or ``None``."""
    if origin is None:
        return None
    fields = ", ".join(ORIGIN_FIELDS)
    if not isinstance(origin, Mapping):
        raise MemoryStoreError(f"memory {what} must be a mapping of {fields}, got {json_type(origin)}")
    out: dict[str, Any] = {}
    for key, value in origin.items():
        if key not in ORIGIN_FIELDS:
            raise MemoryStoreError(f"memory {what} has an unknown field {key!r}: the fields are {fields}")
        if value is None:
            continue  # an unsaid field is absent: the origin reads back as it was written
        if key in _INT_FIELDS:
            if isinstance(value, bool) or not isinstance(value, int):
                raise MemoryStoreError(f"memory {what} field {key!r} must be an integer, got {json_type(value)}")
        elif not isinstance(value, str):
            raise MemoryStoreError(f"memory {what} field {key!r} must be a string, got {json_type(value)}")
        else:
            check_text(value, f"memory {what} field {key!r}")
        out[key] = value
    return out


def check_embedding(vector: Any, what: str = "embed(text)") -> list[float]:
    """A vector as a list of finite floats (what ``embed=`` must return)."""
    if not isinstance(vector, Sequence) or isinstance(vector, str | bytes) or not vector:
        raise MemoryStoreError(f"{what} must return a non-empty list of numbers, got {json_type(vector)}")
    out = []
    for value in vector:
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise MemoryStoreError(f"{what} must return finite numbers, got {value!r}")
        out.append(float(value))
    return out


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (0.0 when either is all zeros or their sizes differ)."""
    if len(a) != len(b):
        return 0.0
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def item_id(namespace: tuple[str, ...], text: str, origin: dict[str, Any] | None) -> str:
    """The item's id: ``m-`` and 16 hex digits of the digest of namespace, text and origin."""
    return "m-" + json_digest([list(namespace), text, origin])[:16]


def search_words(query: str) -> list[str]:
    """The words a search ranks by, in first-seen order, each once."""
    words = list(dict.fromkeys(w.lower() for w in _WORD.findall(query)))
    kept = [w for w in words if w not in _STOP]
    return kept or words


def _parsed(raw: Any, item: str, field: str) -> Any:
    if not isinstance(raw, str):
        raise MemoryStoreError(f"stored memory item {item}: {field} is not JSON text ({json_type(raw)})")
    try:
        return parse_untrusted(raw, what=f"stored memory item {item} {field}")
    except CheckpointError as exc:
        raise MemoryStoreError(str(exc)) from None


def read_row(
    row: Sequence[Any], score: float = 0.0, *, parse_vector: bool = False
) -> MemoryItem | tuple[MemoryItem, list[float] | None]:
    """A stored row ``(id, namespace_json, text, origin_json, created, expires[, vector_json])``
    read back as a ``MemoryItem`` (untrusted: every field checked; ``MemoryStoreError`` names it)."""
    ident = row[0]
    if not isinstance(ident, str) or not ident.startswith("m-") or len(ident) > 64:
        raise MemoryStoreError(f"stored memory item has a bad id: {str(ident)[:80]!r}")
    try:
        namespace = check_namespace(tuple(_as_list(_parsed(row[1], ident, "namespace"), ident)), "namespace")
        text = check_text(row[2], "text")
        origin = _origin(row[3], ident)
    except MemoryStoreError as exc:
        said = str(exc)
        raise MemoryStoreError(said if ident in said else f"stored memory item {ident}: {said}") from None
    created, expires = row[4], row[5]
    if isinstance(created, bool) or not isinstance(created, int | float):
        raise MemoryStoreError(f"stored memory item {ident}: created is not a number")
    if expires is not None and (isinstance(expires, bool) or not isinstance(expires, int | float)):
        raise MemoryStoreError(f"stored memory item {ident}: expires is not a number")
    item = MemoryItem(
        ident, namespace, text, origin, float(created), None if expires is None else float(expires), score
    )
    if not parse_vector:
        return item
    raw = row[6] if len(row) > 6 else None
    vector = (
        None if raw is None else check_embedding(_parsed(raw, ident, "vector"), f"stored memory item {ident} vector")
    )
    return item, vector


def _origin(raw: Any, ident: str) -> dict[str, Any] | None:
    """A stored origin through the one codec: ``null``, or an object of the known fields."""
    data = _parsed(raw, ident, "origin")
    if data is None:
        return None
    try:
        found = structure_untrusted(_CONVERTER, data, _StoredOrigin, what=f"stored memory item {ident} origin")
    except CheckpointError as exc:
        raise MemoryStoreError(str(exc)) from None
    return {name: getattr(found, name) for name in ORIGIN_FIELDS if getattr(found, name) is not None}


def _as_list(value: Any, ident: str) -> list[Any]:
    if not isinstance(value, list):
        raise MemoryStoreError(f"stored memory item {ident}: namespace is not a list ({json_type(value)})")
    return value


def encode_namespace(namespace: tuple[str, ...]) -> str:
    """The namespace as stored: canonical JSON of its parts."""
    return canonical_json(list(namespace))


def encode_origin(origin: dict[str, Any] | None) -> str:
    """The origin as stored: canonical JSON (``null`` when none)."""
    return canonical_json(origin)


def namespace_token(namespace: tuple[str, ...]) -> str:
    """One search token naming the namespace (a digest: no part of it is a word of any text)."""
    return "ns" + json_digest(list(namespace))[:24]


def tokens(text: str) -> list[str]:
    """A text's lowercase words (what the in-memory backend indexes)."""
    return [w.lower() for w in _WORD.findall(text)]


def word_counts(text: str) -> tuple[dict[str, int], int]:
    """(each word's count, the number of words) of ``text``."""
    counts: dict[str, int] = {}
    words = tokens(text)
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    return counts, len(words)


Clock = Callable[[], float]
