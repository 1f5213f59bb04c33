"""Stored once: a conversation's growing list is written as a reference to the row that
stored its start, plus the new tail, and read back whole.

Laws:
- Only the stored row changes: a commit read back is equal to the commit written, and a
  run's record, trace and page are what they were (every reader works from the record).
- A commit row that references an earlier row is an envelope no commit row can be:
  ``{"extends":[{"op":I,"in":[M?],"run":R,"commit":C,"at":J,"length":N},…],"row":<commit>}``
  — op ``I`` of the commit (a top-level ``set``) holds only the tail of its list (its value,
  or its member ``M``); the whole list is the first ``N`` items of the list at the same place
  of op ``J`` of commit ``C`` of run ``R`` (which is exactly ``N`` long), then that tail. A
  plain commit row starts ``{"idx":`` (``commit_data``), so the envelope is told by its first
  bytes and never by a key inside user data; a row without it reads as before.
- The writer references only what it proved: the list's first ``N`` items are exactly (their
  ``marshal`` image, byte for byte: types, key order and all) the list the same store object
  wrote to that place of the same conversation, and that row is still stored (a count, in the
  same transaction). It keeps that image, never the list, so a caller changing a value later
  changes nothing stored (for the newest conversations only: ``sql._REMEMBERED``). A run with a
  redaction rule never references, nor is referenced: its lists are stored whole, so a
  reference can neither reveal nor bypass a hidden value. The store deletes no run, so a
  referenced row stays; one deleted or edited behind the store is refused by name.
- The reader trusts nothing: each referenced row is read (and, with a key, its signature
  verified), its envelope checked field by field; a missing run, commit or op, an op that is
  not a ``set`` of a list, a length that is not the value's, or a reference cycle is a
  ``StoredRowError`` naming the row read and the row it references. A referenced row is parsed
  by the one codec's parser; only the lists taken from it reach a commit, and the commit made
  whole is proven within the limits as any stored commit (``codec.decode_commit_data``). A chain
  is resolved iteratively, each row read once: reading a turn costs its messages, not ``n²``.
- A chain is at most ``CHAIN`` rows: the list that would make it longer is stored whole (one
  turn in ``CHAIN`` writes its history whole), so reading a turn reads at most ``CHAIN`` rows.
- Determinism: the same conversation written by one store object gives the same rows. A turn
  written where the previous turn's list is not remembered (another process, a restart) is
  stored whole, which also starts the next chain afresh.
"""

from __future__ import annotations

import marshal
from collections.abc import Callable
from typing import Any

import attrs

from flowchart._core.commits import Commit, commit_data
from flowchart._core.serde import dumps_acyclic
from flowchart._core.untrusted import parse_proven, within_limits
from flowchart.store import codec
from flowchart.store.protocol import StoredRowError

#: the first bytes of a referencing row (a plain commit row starts ``{"idx":``)
EXTENDS = '{"extends":'

_REF_KEYS = ("op", "in", "run", "commit", "at", "length")

#: a shorter start (its ``marshal`` image, in bytes) is stored again: a reference costs ~100 bytes
_WORTH = 128

#: the longest chain a writer makes: every ``CHAIN``-th list of a chain is stored whole, so a
#: reader reads at most ``CHAIN`` rows for a list (and one long row), not one per earlier turn
CHAIN = 64


@attrs.frozen
class Written:
    """Where a conversation's list was last stored (``seq``'s op ``op``), how long it was, and
    its exact image as written (``_image``) — not the list, which its owner may change."""

    run_id: str
    seq: int
    op: int
    length: int
    image: bytes = attrs.field(eq=False, repr=False)
    #: the references below this row down to one stored whole (0: stored whole)
    depth: int = 0


def _image(items: list[Any]) -> bytes | None:
    """The items, exactly: ``marshal`` version 0 (no sharing references, no interning marks) tells
    ``True`` from ``1`` from ``1.0``, ``-0.0`` from ``0.0`` and one key order from another, as the
    row's JSON does, and the image of a list is its items' images one after the other, so a
    prefix's image is the whole's beginning; ``None`` for what it cannot write (never referenced)."""
    try:
        return marshal.dumps(items, 0)[5:]  # without the list's type and count
    except (ValueError, RecursionError):
        return None


def _lists(value: Any) -> list[tuple[tuple[str, ...], list[Any]]]:
    """The lists a ``set`` op's value holds where a reference may stand for them: the value
    itself, or the members of an object value (one level down: a conversation's ``sources``)."""
    if type(value) is list:
        return [((), value)]
    if type(value) is dict:
        return [((name,), member) for name, member in value.items() if type(member) is list]
    return []


def encode_row(
    commit: Commit,
    run_id: str,
    known: dict[tuple[str, ...], Written],
    stored: Callable[[Written], bool],
) -> tuple[str, dict[tuple[str, ...], Written | None]]:
    """The commit's row, each list of a top-level ``set`` (``_lists``) that extends the list
    ``known`` holds for its place written as a reference plus its tail (``stored`` confirms the
    earlier row is still there); and what this row teaches ``known`` (``None``: forget it)."""
    data = commit_data(commit)
    found: dict[tuple[str, int], bool] = {}  # each earlier row checked once, however many lists it holds
    refs: list[dict[str, Any]] = []
    learned: dict[tuple[str, ...], Written | None] = {}
    hidden = {path.split("/", 1)[0] for path in commit.redacted_paths}
    for i, op in enumerate(commit.trace):
        if op.verb != "set" or len(op.path) != 1:
            continue
        for inner, value in _lists(op.value):
            place = (op.path[0], *inner)
            if op.path[0] in hidden:
                learned[place] = None
                continue
            before = known.get(place)
            head = None
            if (
                before is not None
                and 0 < before.length <= len(value)
                and len(before.image) >= _WORTH
                and before.depth < CHAIN - 1
            ):
                head = _image(value[: before.length])
            if head is not None and before is not None and head == before.image and _still(found, before, stored):
                n = before.length
                ref = {"op": i, "in": list(inner), "run": before.run_id, "commit": before.seq, "at": before.op}
                refs.append({**ref, "length": n})
                shown = data["trace"][i]
                if inner:
                    shown = {**shown, "value": {**shown["value"], inner[0]: value[n:]}}
                else:
                    shown = {**shown, "value": value[n:]}
                data["trace"][i] = shown
                rest = _image(value[n:])
                learned[place] = (
                    None if rest is None else Written(run_id, commit.idx, i, len(value), head + rest, before.depth + 1)
                )
                continue
            whole = _image(value)
            learned[place] = None if whole is None else Written(run_id, commit.idx, i, len(value), whole)
    if not refs:
        return dumps_acyclic(data), learned
    return dumps_acyclic({"extends": refs, "row": data}), learned


def _still(found: dict[tuple[str, int], bool], before: Written, stored: Callable[[Written], bool]) -> bool:
    """Whether ``before``'s row is still stored, asked once per row per commit."""
    key = (before.run_id, before.seq)
    if key not in found:
        found[key] = stored(before)
    return found[key]


def is_reference(body: str) -> bool:
    """Whether a stored commit row is a referencing envelope."""
    return body.startswith(EXTENDS)


def decode_row(body: str, run_id: str, seq: int, fetch: Callable[[str, int], str | None]) -> Commit:
    """The commit a referencing row stands for, every reference resolved through ``fetch``
    (the unsealed text of ``run``'s commit ``seq``, ``None`` when there is none)."""
    where = f"commit {seq}"
    refs, row = _envelope(_parse(body), run_id, where)
    trace = row["trace"]
    parsed: dict[tuple[str, int], Any] = {}  # each row of the chains parsed once for this row
    for ref in refs.values():
        tail = _set_list(trace, ref, run_id, where, own=True)
        tail[:0] = _resolve(ref, run_id, seq, fetch, parsed)  # the list whole, in its place
    return codec.decode_commit_data(row)


def _parse(text: str, *, proven: bool = True) -> Any:
    """A stored row's JSON, parsed as untrusted input: orjson when the text is what it writes
    (no repeated key, no NaN, no integer past 64 bits, nested within orjson's limit) and the
    value is within the limits, else the standard parse and its limits walk (which refuses).
    ``proven=False``, for a referenced row: orjson's text without the limits walk — only the
    lists taken from it reach a commit, and the commit they make is proven whole
    (``codec.decode_commit_data``); anything else of that row is dropped."""
    return parse_proven(text, what="stored commit", proof=_within if proven else _taken, fast=True)[0]


def _within(data: Any) -> bool | None:
    return True if within_limits(data, 1) else None


def _taken(data: Any) -> bool:
    return True


def _resolve(
    ref: dict[str, Any],
    run_id: str,
    seq: int,
    fetch: Callable[[str, int], str | None],
    parsed: dict[tuple[str, int], Any],
) -> list[Any]:
    """The first ``length`` items of the list ``ref`` names, following the chain of rows down to
    one stored whole, then adding each row's tail on the way back up (a new list)."""
    where = f"commit {seq}"
    seen = {(run_id, seq)}
    ups: list[tuple[int, list[Any]]] = []  # (the length the row above takes, this row's tail)
    length = ref["length"]
    while True:
        at = (ref["run"], ref["commit"])
        if at in seen:
            raise StoredRowError(run_id, where, f"its reference to {_named(ref)} makes a cycle of references")
        seen.add(at)
        found = parsed.get(at)
        if found is None:
            data = _fetched(ref, fetch, run_id, where)
            found = parsed[at] = (
                _envelope(data, run_id, where, of=_named(ref))
                if type(data) is dict and "extends" in data
                else ({}, data)
            )
        inner_refs, data = found
        place = (ref["at"], *ref["in"])
        if type(data) is not dict or type(data.get("trace")) is not list:
            raise StoredRowError(run_id, where, f"it extends {_named(ref)}, which is not a commit row")
        ups.append((length, _set_list(data["trace"], ref, run_id, where)))
        inner = inner_refs.get(place)
        if inner is None:
            break
        ref, length = inner, inner["length"]
    whole: list[Any] = []
    for length, value in reversed(ups):  # the row stored whole, then each referencing row's tail
        whole.extend(value)
        if len(whole) != length:
            raise StoredRowError(
                run_id,
                where,
                f"a reference in its chain takes {length} items of a list of {len(whole)}: the rows differ",
            )
    return whole


def _named(ref: dict[str, Any]) -> str:
    """The place a reference names, for an error: ``run 'R' commit C op J[.member]``."""
    return f"run '{ref['run']}' commit {ref['commit']} op {ref['at']}{''.join(f'.{k}' for k in ref['in'])}"


def _fetched(ref: dict[str, Any], fetch: Callable[[str, int], str | None], run_id: str, where: str) -> Any:
    """The referenced row, read and parsed (``StoredRowError`` naming both rows otherwise)."""
    try:
        text = fetch(ref["run"], ref["commit"])
    except StoredRowError as exc:
        raise StoredRowError(run_id, where, f"it extends {_named(ref)}, which does not load: {exc}") from None
    if text is None:
        raise StoredRowError(
            run_id, where, f"it extends {_named(ref)}, which is not stored (deleted behind the store?)"
        )
    try:
        return _parse(text, proven=False)
    except ValueError as exc:
        raise StoredRowError(run_id, where, f"it extends {_named(ref)}, which is not JSON: {exc}") from None


def _set_list(trace: list[Any], ref: dict[str, Any], run_id: str, where: str, *, own: bool = False) -> list[Any]:
    """The list at ``in`` in the value of ``trace``'s op (``op`` of the row's own reference when
    ``own``, else the op ``at`` it names), a ``set``."""
    op, inner = (ref["op"] if own else ref["at"]), ref["in"]
    found = trace[op] if 0 <= op < len(trace) else None
    value = found.get("value") if type(found) is dict and found.get("verb") == "set" else None
    for name in inner:
        value = value.get(name) if type(value) is dict else None
    if type(value) is not list:
        what = "its reference" if own else f"it extends {_named(ref)}, whose row"
        if found is None:
            problem = ", which the row does not hold"
        elif type(found) is not dict or found.get("verb") != "set":
            problem = ", which is not a set"
        else:
            problem = f" at {inner}, which is not a list"
        raise StoredRowError(run_id, where, f"{what} names op {op}{problem}")
    return value


def _envelope(
    data: Any, run_id: str, where: str, of: str = ""
) -> tuple[dict[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """A referencing row's references (by the place they fill: op and member) and commit, every
    field checked."""
    about = f"it extends {of}, whose references" if of else "its references"
    if type(data) is not dict or len(data) != 2 or "extends" not in data or "row" not in data:
        raise StoredRowError(run_id, where, f"{about} are not an envelope of 'extends' and 'row'")
    refs, row = data["extends"], data["row"]
    if type(refs) is not list or not refs or type(row) is not dict or type(row.get("trace")) is not list:
        raise StoredRowError(run_id, where, f"{about} are not a non-empty list beside a commit row")
    places: dict[tuple[Any, ...], dict[str, Any]] = {}
    for ref in refs:
        inner = ref.get("in") if type(ref) is dict else None
        if (
            type(ref) is not dict
            or tuple(ref) != _REF_KEYS
            or type(ref["run"]) is not str
            or type(ref["op"]) is not int
            or type(ref["commit"]) is not int
            or type(ref["at"]) is not int
            or type(ref["length"]) is not int
            or min(ref["op"], ref["commit"], ref["at"], ref["length"]) < 0
            or type(inner) is not list
            or len(inner) > 1
            or (inner and type(inner[0]) is not str)
            or (ref["op"], *inner) in places
        ):
            raise StoredRowError(run_id, where, f"{about} hold a malformed reference: {str(ref)[:200]}")
        places[ref["op"], *inner] = ref
    return places, row
