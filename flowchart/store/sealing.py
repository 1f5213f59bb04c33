"""A run as one digest: the chain head of every stored row of a run, and its seal.

Laws:
- A run's stored rows — every column of its ``runs`` row (question, answer, checkpoint, NULL
  included, output, error, failure, redaction, status, next_seq, lineage …), its chart's spec,
  its commits in ``seq`` order, its segments in order, its answers — fold into ONE digest, the
  run's **head** (``head``). Each part is bound to the run id, to its column and to its position
  (a commit to its ``seq``), so a row moved to another run, into another column or to another
  place changes the head; so does a row deleted, added, truncated or set to NULL.
- A table's digest is a chain: it starts from the run id and the table's name, and each row in
  order (with its position) is hashed onto the digest before it. So a run's seal is EXTENDED by a
  write, not recomputed: the digest sealed last, plus the rows the write added.
- A store made with ``key=`` keeps a **seal** per run (the ``runs.seal`` column): the digest of
  each part, the row counts, the head and an HMAC of the head bound to the run id. Every read
  checks the whole run against it. Every write first checks the seal, the ``runs`` row, the
  chart, the answers and each table's row count (``opened``), then writes, then seals the run
  anew from the digests it checked, extended by the rows it added (``resealed``): it never
  re-reads the run's commits, and it never re-seals a row someone changed behind the store —
  the new seal carries the digest of the rows as they were sealed, so the next read refuses the
  change by name. A mismatch is refused by name — the column, or the table with the counts
  sealed and found — before anything is read from the run.
- In a signed store the run's effect ledger (``effects``: each intent and receipt, by key) is a
  part of the seal too, and each ledger write re-seals it in its own transaction (``ledger``):
  the write first checks the ledger rows against the sealed part, so an intent or receipt
  DELETED, added or changed behind the store is named (``effects``) by the next read, write or
  ``verify`` of the run. A seal written before the ledger was sealed has no such part; the
  run's next ledger write seals its ledger as it then is.
- ``verify(run_id)`` returns the head: a digest an operator can anchor elsewhere (a ticket, a
  log, a receipt); a person's decision carries the head it was made against.
- What a key cannot stop: someone who can write the database can roll back a WHOLE run — every
  row and its seal together — to an earlier sealed state of that same run; only a head anchored
  outside the database (``verify``'s value, kept elsewhere) shows that. Without a key the head is
  still computed (an anchor works the same), but nothing in the database is authenticated.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from flowchart._core.signing import signature
from flowchart.store.protocol import StoredRowError

SEAL_PURPOSE = "pyfootprint run seal v1"
VERSION = 2
"""The seal's format: 2 chains each table's rows (so a write extends the seal)."""

RUN_COLUMNS = (
    "kind",
    "chart_fingerprint",
    "status",
    "input",
    "next_seq",
    "checkpoint",
    "question",
    "has_answer",
    "answer",
    "output",
    "error",
    "created_at",
    "updated_at",
    "redaction",
    "failure",
    "conversation_id",
    "turn",
    "parent_run_id",
    "forked_at",
)
"""The ``runs`` columns a seal covers (every one but ``run_id``, which binds them all, and ``seal``)."""


@attrs.frozen
class RunRows:
    """What one run is in a SQL store, as the database returns it."""

    run_id: str
    columns: Mapping[str, Any]
    chart_spec: str | None
    commits: Sequence[tuple[Any, ...]]
    segments: Sequence[tuple[Any, ...]]
    answers: Sequence[tuple[Any, ...]]
    #: the run's ledger rows ``(key, intent, receipt)`` by key, in a signed store (``None``: not a part)
    effects: Sequence[tuple[Any, ...]] | None = None


def _value(value: Any) -> str:
    """A cell that is not text as canonical text (NULL, numbers and bytes told apart; none of
    them starts as a text cell does, with ``s`` and its length)."""
    if value is None:
        return "null"
    if isinstance(value, bytes | bytearray | memoryview):
        return "bytes:" + bytes(value).hex()
    return json.dumps(value, ensure_ascii=True)


def _hash(*cells: Any) -> str:
    digest = hashlib.sha256()
    update = digest.update
    for cell in cells:
        if type(cell) is str:  # a commit's body, a column's JSON: its bytes behind their length
            data = cell.encode("utf-8", "surrogatepass")
            update(b"s%d:" % len(data))
            update(data)
        else:
            update(_value(cell).encode())
        update(b"\x00")
    return digest.hexdigest()


def _table(run_id: str, table: str, rows: Sequence[tuple[Any, ...]]) -> str:
    """The digest of a table's rows of this run, in their order (each row's position included)."""
    return extend(_hash(run_id, table), 0, rows)


def extend(digest: str, position: int, rows: Sequence[tuple[Any, ...]]) -> str:
    """``digest`` (of a table's first ``position`` rows) extended by ``rows``, the rows after them."""
    for row in rows:
        digest = _hash(digest, position, *row)
        position += 1
    return digest


def _columns(run_id: str, columns: Mapping[str, Any]) -> dict[str, Any]:
    """The digest of each ``runs`` column of the run."""
    return {name: _hash(run_id, name, columns.get(name)) for name in RUN_COLUMNS}


def parts(rows: RunRows) -> dict[str, Any]:
    """The digest of every part of the run: each ``runs`` column, the chart spec, and each table
    (with its row count)."""
    run_id = rows.run_id
    out = _columns(run_id, rows.columns)
    out["chart"] = _hash(run_id, "chart", rows.chart_spec)
    for table in ("commits", "segments", "answers"):
        found: Sequence[tuple[Any, ...]] = getattr(rows, table)
        out[table] = [len(found), _table(run_id, table, found)]
    if rows.effects is not None:
        out["effects"] = ledger_part(run_id, rows.effects)
    return out


def ledger_part(run_id: str, effects: Sequence[tuple[Any, ...]]) -> list[Any]:
    """The seal's part for the run's ledger rows ``(key, intent, receipt)``, ordered by key."""
    return [len(effects), _table(run_id, "effects", effects)]


def head_of(run_id: str, sealed: Mapping[str, Any]) -> str:
    """The run's head: one digest of all its parts."""
    return _hash(run_id, "head", json.dumps(sealed, sort_keys=True))


def head(rows: RunRows) -> str:
    """The head of ``rows`` (with or without a key)."""
    return head_of(rows.run_id, parts(rows))


def seal(rows: RunRows, key: bytes) -> str:
    """The seal column's text for ``rows``: their parts, their head and its HMAC."""
    return _sealed(rows.run_id, parts(rows), key)


def _sealed(run_id: str, found: dict[str, Any], key: bytes) -> str:
    top = head_of(run_id, found)
    return _canonical({"version": VERSION, "parts": found, "head": top, "signature": _signature(key, run_id, top)})


def _canonical(data: Any) -> str:
    """The seal's text: sorted keys, no spaces (so a seal is one exact text)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _signature(key: bytes, run_id: str, top: str) -> str:
    return signature(key, top, f"{SEAL_PURPOSE}\x00{run_id}")


def _kept(run_id: str, sealed: str | None, key: bytes) -> dict[str, Any]:
    """The parts ``sealed`` holds, once it is a seal this store wrote with ``key`` for this run."""
    if sealed is None:
        raise StoredRowError(
            run_id,
            "seal",
            "the run has no seal (it was removed, or written by a store opened without the key): "
            "its rows cannot be trusted",
        )
    try:
        data = json.loads(sealed)
        kept, top, mark = data["parts"], data["head"], data["signature"]
        if not isinstance(kept, dict) or not isinstance(top, str) or not isinstance(mark, str):
            raise TypeError("not a seal")
        if set(data) != {"version", "parts", "head", "signature"} or _canonical(data) != sealed:
            raise ValueError("not the text the store wrote")  # an edit that parses alike is an edit
        if data["version"] != VERSION:
            raise ValueError(f"version {data['version']!r}, and this store reads version {VERSION}")
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise StoredRowError(run_id, "seal", f"not a seal ({type(exc).__name__}: {exc})") from None
    if head_of(run_id, kept) != top or not hmac.compare_digest(mark, _signature(key, run_id, top)):
        raise StoredRowError(
            run_id, "seal", "the seal does not match its signature (it was changed, or made with another key)"
        )
    return kept


def _compare(run_id: str, kept: Mapping[str, Any], found: Mapping[str, Any]) -> None:
    """``StoredRowError`` naming the first part of ``found`` that differs from the sealed one."""
    for name, value in found.items():
        if kept.get(name) == value:
            continue
        if isinstance(value, list):
            was = kept.get(name)
            count = was[0] if isinstance(was, list) and was else "?"
            raise StoredRowError(
                run_id,
                name,
                f"its rows differ from the sealed ones ({count} sealed, {value[0]} found): rows were deleted, added, "
                "moved or changed behind the store",
            )
        raise StoredRowError(run_id, name, "the column differs from the sealed one: it was changed behind the store")


def check(rows: RunRows, sealed: str | None, key: bytes) -> str:
    """The head of ``rows`` once they match their seal; else ``StoredRowError`` naming the part
    that differs (a column, or a table with its sealed and found row counts)."""
    kept = _kept(rows.run_id, sealed, key)
    found = parts(rows)
    if "effects" not in kept:  # sealed before its ledger was: sealed at the run's next ledger write
        found.pop("effects", None)
    _compare(rows.run_id, kept, found)
    return head_of(rows.run_id, kept)


def ledger_sealed(run_id: str, sealed: str | None, key: bytes, before: Sequence[tuple[Any, ...]]) -> dict[str, Any]:
    """Before a ledger write: the sealed parts, once the ledger rows as they are (``before``) match
    the sealed ledger part (a seal without one: none to match); else ``StoredRowError`` naming
    ``effects``."""
    kept = _kept(run_id, sealed, key)
    if "effects" in kept:
        _compare(run_id, {"effects": kept["effects"]}, {"effects": ledger_part(run_id, before)})
    return kept


def ledger_resealed(run_id: str, kept: Mapping[str, Any], key: bytes, after: Sequence[tuple[Any, ...]]) -> str:
    """After a ledger write: the seal ``ledger_sealed`` opened, its ledger part now ``after``."""
    return _sealed(run_id, {**kept, "effects": ledger_part(run_id, after)}, key)


def check_columns(run_id: str, columns: Mapping[str, Any], sealed: str | None, key: bytes) -> None:
    """``columns`` (some of the run's ``runs`` columns, as the database holds them) once each
    matches its digest in the run's seal, whose signature is checked first — else
    ``StoredRowError`` naming the column (a listing's check: the run's other rows are not read)."""
    kept = _kept(run_id, sealed, key)
    _compare(run_id, kept, {name: _hash(run_id, name, value) for name, value in columns.items()})


def opened(head_rows: RunRows, counts: Mapping[str, int], sealed: str | None, key: bytes) -> dict[str, Any]:
    """Before a write: the sealed parts, once the run's ``runs`` row, chart and answers (in
    ``head_rows``; its commits and segments are not read) match them and the commit and segment
    tables hold the ``counts`` sealed; else ``StoredRowError`` as ``check`` names it."""
    run_id = head_rows.run_id
    kept = _kept(run_id, sealed, key)
    found = _columns(run_id, head_rows.columns)
    found["chart"] = _hash(run_id, "chart", head_rows.chart_spec)
    found["answers"] = [len(head_rows.answers), _table(run_id, "answers", head_rows.answers)]
    for table, count in counts.items():
        was = kept.get(table)
        found[table] = [count, was[1] if isinstance(was, list) and len(was) == 2 else None]
    _compare(run_id, kept, found)
    return kept


def resealed(head_rows: RunRows, kept: Mapping[str, Any], key: bytes) -> str:
    """The seal after a write: the ``runs`` row and answers as they now are (``head_rows``), the
    chart as sealed, and each sealed table's chain extended by the rows the write added (the
    ``commits`` and ``segments`` of ``head_rows``, in order, after the ones sealed)."""
    run_id = head_rows.run_id
    found = _columns(run_id, head_rows.columns)
    found["chart"] = kept["chart"]
    found["answers"] = [len(head_rows.answers), _table(run_id, "answers", head_rows.answers)]
    for table in ("commits", "segments"):
        count, digest = kept[table]
        added: Sequence[tuple[Any, ...]] = getattr(head_rows, table)
        found[table] = [count + len(added), extend(digest, count, added)]
    if "effects" in kept:  # the ledger is written (and sealed) by its own writes
        found["effects"] = kept["effects"]
    return _sealed(run_id, found, key)


__all__ = [
    "RUN_COLUMNS",
    "SEAL_PURPOSE",
    "VERSION",
    "RunRows",
    "check",
    "check_columns",
    "extend",
    "head",
    "ledger_part",
    "ledger_resealed",
    "ledger_sealed",
    "opened",
    "parts",
    "resealed",
    "seal",
]
