"""The effect ledger: an intent written before an effect happens, a receipt after — durably, at once.

Laws:
- A run's segment is written to the store only when it ends; an effect (a refund, an e-mail)
  happens in the middle of one. So the ledger is written apart from the segment, each row in its
  own transaction the moment it is known: ``intend`` BEFORE the effect, ``settle`` after. A
  process that dies between the two leaves an intent without a receipt: the effect is *in doubt*,
  and whoever advances the run next finds it (``entry``).
- A receipt may wait (``settle_later``, for a call that can be sent again harmlessly: an
  ``idempotent`` tool's): it is written in the ledger's next transaction — the next intent's —
  or by ``flush`` (the agent's segment end, the process's exit). A process that dies first
  leaves that call in doubt, and it is re-sent with its key; an intent is never kept waiting.
- Rows are keyed by (run id, key); ``intend`` on a key that has a row returns that row and writes
  nothing (the first intent stands); on a new key it also returns the run's other unsettled
  intents (in doubt from an earlier try), read in the same transaction — unless the caller says
  it knows there are none (``look_back=False``: the agent asks once per segment). ``settle`` writes the
  receipt once; a second receipt for the same key is ignored (the first one stands), so two
  workers racing on one effect agree.
- In a signed store the run's ledger rows are a part of its seal (``sealing``): each write checks
  the rows against the sealed part, then re-seals the run, in the write's own transaction — so a
  deleted, added or changed row is named (``effects``) by the run's next read, write or
  ``verify``, and a write on a ledger changed behind the store is refused (``StoredRowError``)
  before the effect is intended. Only a consistent rollback of the rows AND the seal to an earlier
  sealed state goes unseen, as for any part of a run (only an anchor kept elsewhere shows it).
- A renamed call is settled in the transaction of its intent: when one of those others has the same
  tool (``body["tool"]``) and arguments — the same call, named differently by a model called again
  after a crash — the new intent is written with the receipt ``{"superseded_by": that key}`` and
  ``intend`` returns ``(that row, the rest)``: the call goes on under its first key, the new row is
  never in doubt (no later segment finds it, no later identical call is matched to it), and an
  ``intend`` on the new key again (the same reply after another crash) returns the first key's row.
  The first key's row is the only one that gets the call's receipt; a superseded row never points
  at a superseded one (only a row without a receipt is taken over).
- Bodies and receipts are JSON objects read back through the one codec
  (``flowchart._core.untrusted.parse``: its depth, size, number and surrogate limits): stored
  rows are untrusted, and a malformed cell raises ``StoredRowError`` naming the run, the key
  and the column. In a signed store (``key=``) each cell carries an HMAC bound to its run, key
  and column, so an edited, forged or moved intent or receipt is refused by name.
- The table (``effects``) is the store's, made by its numbered migrations (version 9,
  ``flowchart.store.schema``) in SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flowchart._core.errors import CheckpointError
from flowchart._core.printable import printable
from flowchart._core.signing import sign, unsign
from flowchart._core.untrusted import parse
from flowchart.store import sealing
from flowchart.store.codec import column as read_column

__all__ = ["EffectLedger", "MemoryLedger", "ledger_of"]


def _purpose(run_id: str, key: str, column: str) -> str:
    return f"pyfootprint-effect:{run_id}\x00{key}\x00{column}"


def _encoder() -> Any:
    """The one encoder of ledger cells, made once (``json.dumps`` with these options makes one a
    call): the C encoder itself when there is one (``JSONEncoder.encode`` goes through
    ``iterencode``, ≈ 80 Python opcodes a cell), else ``JSONEncoder.encode``; the same text."""
    made = json.JSONEncoder(sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    maker = getattr(json.encoder, "c_make_encoder", None)
    if maker is None:
        return made.encode
    # a cell is a dict of values the ledger built or copied (never a cycle): no markers
    chunks = maker(None, made.default, json.encoder.encode_basestring_ascii, None, ":", ",", True, False, True)
    return lambda value: "".join(chunks(value, 0))


_ENCODE = _encoder()


def _dump(value: dict[str, Any], signing: bytes | None, run_id: str, key: str, column: str) -> str:
    text = _ENCODE(value)
    return text if signing is None else sign(text, signing, _purpose(run_id, key, column))


def _load(text: Any, signing: bytes | None, run_id: str, key: str, column: str) -> dict[str, Any]:
    """One ledger cell through the store's one column reader (``codec.column``): signature first
    (in a signed store), then the codec's parse; anything wrong is a ``StoredRowError``."""
    where = f"effects.{column} of key {printable(key)[:80]!r}"

    def read() -> dict[str, Any]:
        if not isinstance(text, str):
            raise CheckpointError(f"Invalid {where}: expected JSON text, got {type(text).__name__}", path="$")
        plain = text if signing is None else unsign(text, signing, _purpose(run_id, key, column), what=where)
        value = parse(plain, what=where)
        if not isinstance(value, dict):
            raise CheckpointError(f"Invalid {where}: expected a JSON object, got {type(value).__name__}", path="$")
        return value

    return read_column(run_id, where, read)


def _row(run_id: str, key: str, body: Any, receipt: Any, signing: bytes | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "body": _load(body, signing, run_id, key, "intent")}
    out["receipt"] = None if receipt is None else _load(receipt, signing, run_id, key, "receipt")
    return out


class EffectLedger:
    """The ledger in a SQL run store (``SqliteStore``/``PostgresStore``).

    Each write is its own transaction, committed before the method returns — durable against the
    worker dying, which is what an in-doubt effect is about: SQLite writes through a connection of
    its own with ``synchronous=NORMAL`` (in WAL mode a commit survives the process; only the
    machine losing power can lose the last ones), PostgreSQL with ``synchronous_commit`` off for
    these transactions (a commit survives the client; only the server crashing can lose it)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._lock = threading.RLock()
        self._db: Any = None
        self._pid = -1
        self._sqlite = isinstance(getattr(store, "path", None), str) and not hasattr(store, "dsn")
        #: a signed store's key: every cell is signed for its run, key and column
        self._signing: bytes | None = getattr(store, "_key", None)
        #: receipts kept by ``settle_later`` (written with the next transaction), and whose they are
        self._pending: list[tuple[Any, ...]] = []
        self._pending_pid = os.getpid()
        self._at_exit = False

    @contextmanager
    def _tx(self) -> Iterator[Any]:
        if not self._sqlite:
            with self._store._tx() as cur:
                cur.execute("SET LOCAL synchronous_commit TO OFF")
                yield _Cursor(self._store, cur)
            return
        with self._lock:
            if self._db is None or self._pid != os.getpid():
                self._db = sqlite3.connect(
                    self._store.path, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._pid = os.getpid()
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield _Cursor(None, cur)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def _sealed(self, cur: _Cursor, run_id: str) -> dict[str, Any] | None:
        """In a signed store, before a write: the run's sealed parts, once its ledger rows match the
        sealed ledger part (else ``StoredRowError`` naming ``effects``); ``None`` without a key, or
        for a run the store does not hold."""
        if self._signing is None:
            return None
        lock = "" if self._sqlite else self._store.for_update
        row = cur.run("SELECT seal FROM runs WHERE run_id = ?" + lock, (run_id,)).fetchone()
        if row is None:
            return None
        return sealing.ledger_sealed(run_id, row[0], self._signing, self._ledger_rows(cur, run_id))

    def _reseal(self, cur: _Cursor, run_id: str, kept: dict[str, Any] | None) -> None:
        """After a write (signed store): the run's seal with its ledger part as the rows now are."""
        if self._signing is None or kept is None:
            return
        seal = sealing.ledger_resealed(run_id, kept, self._signing, self._ledger_rows(cur, run_id))
        cur.run("UPDATE runs SET seal = ? WHERE run_id = ?", (seal, run_id))

    @staticmethod
    def _ledger_rows(cur: _Cursor, run_id: str) -> list[tuple[Any, ...]]:
        return sorted(tuple(r) for r in cur.run("SELECT key, body, receipt FROM effects WHERE run_id = ?", (run_id,)))

    def intend(
        self, run_id: str, key: str, body: dict[str, Any], args: Any = None, look_back: bool = True
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Write the intent for ``key`` — ``body`` and, under ``"args"``, the call's arguments —
        (committed when this returns, with the receipts ``settle_later`` kept) and return
        ``(None, others)`` — ``others`` the run's other intents without a receipt, in doubt from
        an earlier try — or, when ``key`` has a row already, ``(that row, [])`` and nothing is
        written. ``look_back=False``: ``others`` is not read (``[]``) — for a caller that knows the
        run has none (its segment's first intent found none).

        A renamed call (see the laws): when one of ``others`` has this intent's tool and arguments,
        the intent is written superseded by it and ``(that row, the other others)`` is returned —
        a ``found`` whose ``"key"`` is not ``key``; so is the first row again for a key that was
        superseded before."""
        text = _dump({**body, "args": args}, self._signing, run_id, key, "intent")
        with self._tx() as cur:
            self._flush(cur)
            kept = self._sealed(cur, run_id)
            added = cur.run(_INTEND, (run_id, key, text, time.time()))
            if added.rowcount == 0:  # the key has a row: the first intent stands
                body_text, receipt = cur.run(_ONE, (run_id, key)).fetchone()
                return _followed(cur.run, run_id, _row(run_id, key, body_text, receipt, self._signing), self._signing)
            found: tuple[dict[str, Any] | None, list[dict[str, Any]]] = (None, [])
            if look_back:
                others = cur.run(_OTHERS, (run_id, key)).fetchall()
                rows = [_row(run_id, other, text, None, self._signing) for other, text in others]
                found = _taken_over(cur.run, run_id, key, body, args, rows, self._signing)
            self._reseal(cur, run_id, kept)  # after the intent, and a renamed call's superseded receipt
            return found

    def settle(self, run_id: str, key: str, receipt: dict[str, Any]) -> None:
        """Write the receipt for ``key`` (the first one stands), committed when this returns."""
        row = (_dump(receipt, self._signing, run_id, key, "receipt"), time.time(), run_id, key)
        with self._tx() as cur:
            self._flush(cur)
            kept = self._sealed(cur, run_id)
            cur.run(_SETTLE, row)
            self._reseal(cur, run_id, kept)

    def settle_later(self, run_id: str, key: str, receipt: dict[str, Any]) -> None:
        """Keep the receipt for ``key`` to be written with the ledger's next transaction (the next
        intent's) or by ``flush`` — for a call that may be sent again harmlessly (``idempotent``):
        a process that dies first leaves it in doubt, and it is re-sent with the same key."""
        row = (_dump(receipt, self._signing, run_id, key, "receipt"), time.time(), run_id, key)
        with self._lock:
            if self._pending_pid != os.getpid():  # a forked child: the parent's receipts are the parent's
                self._pending, self._pending_pid = [], os.getpid()
            if not self._pending and not self._at_exit:
                atexit.register(_flush_at_exit, weakref.ref(self))
                self._at_exit = True
            self._pending.append(row)

    def flush(self) -> None:
        """Write the receipts ``settle_later`` kept, in one transaction (none kept: nothing)."""
        if self._pending and self._pending_pid == os.getpid():
            with self._tx() as cur:
                self._flush(cur)

    def _flush(self, cur: Any) -> None:
        with self._lock:
            rows, self._pending = self._pending, []
            if self._pending_pid != os.getpid():
                rows, self._pending_pid = [], os.getpid()
        if not rows:
            return
        runs = list(dict.fromkeys(row[2] for row in rows))  # a signed store checks, then re-seals, each run
        kept = {run_id: self._sealed(cur, run_id) for run_id in runs}
        for row in rows:
            cur.run(_SETTLE, row)
        for run_id in runs:
            self._reseal(cur, run_id, kept[run_id])

    def reopen(self, run_id: str, key: str) -> None:
        """Clear the receipt of ``key`` (its effect is to be tried again: the last try failed)."""
        with self._tx() as cur:
            self._flush(cur)
            kept = self._sealed(cur, run_id)
            cur.run("UPDATE effects SET receipt = NULL, settled_at = NULL WHERE run_id = ? AND key = ?", (run_id, key))
            self._reseal(cur, run_id, kept)

    def entries(self, run_id: str) -> list[dict[str, Any]]:
        """Every row of ``run_id``, in the order the intents were written."""
        with self._tx() as cur:
            self._flush(cur)
            rows = cur.run(
                "SELECT key, body, receipt FROM effects WHERE run_id = ? ORDER BY intended_at, key", (run_id,)
            ).fetchall()
        return [_row(run_id, key, body, receipt, self._signing) for key, body, receipt in rows]


_INTEND = (
    "INSERT INTO effects (run_id, key, body, intended_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, key) DO NOTHING"
)
_ONE = "SELECT body, receipt FROM effects WHERE run_id = ? AND key = ?"
#: the run's other unsettled intents, oldest first (a renamed call takes over the oldest of its kind)
_OTHERS = "SELECT key, body FROM effects WHERE run_id = ? AND receipt IS NULL AND key <> ? ORDER BY intended_at, key"
_SETTLE = "UPDATE effects SET receipt = ?, settled_at = ? WHERE run_id = ? AND key = ? AND receipt IS NULL"


def _taken_over(
    run: Any,
    run_id: str,
    key: str,
    body: dict[str, Any],
    args: Any,
    others: list[dict[str, Any]],
    signing: bytes | None,
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """``(None, others)``, or — when one of ``others`` (the run's unsettled intents) has the tool
    and arguments of the intent just written under ``key`` (the same call, renamed) — that row
    and the rest, after writing the receipt ``{"superseded_by": its key}`` on ``key`` through
    ``run`` (in the intent's own transaction: the new row is never left in doubt)."""
    if not others:
        return None, others
    tool, same = body.get("tool"), _ENCODE([args])
    for at, other in enumerate(others):
        if other["body"].get("tool") == tool and _ENCODE([other["body"].get("args")]) == same:
            receipt = _dump({"superseded_by": other["key"]}, signing, run_id, key, "receipt")
            run(_SETTLE, (receipt, time.time(), run_id, key))
            return other, others[:at] + others[at + 1 :]
    return None, others


def _followed(run: Any, run_id: str, row: dict[str, Any], signing: bytes | None) -> tuple[dict[str, Any], list[Any]]:
    """``(row, [])`` — or, for a row superseded by another key's (a renamed call's name written
    before), ``(that key's row, [])``. A superseded row whose first row is gone, or is superseded
    itself (``intend`` never writes one: only a row without a receipt is taken over), is refused
    (``StoredRowError`` naming both keys) — never taken for a receipt without a result."""
    receipt = row["receipt"]
    if receipt is None or "superseded_by" not in receipt:
        return row, []
    first = receipt["superseded_by"]
    found = run(_ONE, (run_id, first)).fetchone() if isinstance(first, str) else None
    taken = None if found is None else _row(run_id, first, found[0], found[1], signing)
    if taken is not None and (taken["receipt"] is None or "superseded_by" not in taken["receipt"]):
        return taken, []
    where = f"effects.receipt of key {printable(row['key'])[:80]!r}"
    problem = "which the ledger does not hold" if taken is None else "which is superseded itself"

    def refuse() -> dict[str, Any]:
        raise CheckpointError(
            f"Invalid {where}: superseded by {printable(json.dumps(first))[:80]}, {problem}", path="$.superseded_by"
        )

    return read_column(run_id, where, refuse), []


def _flush_at_exit(ledger: Any) -> None:
    """At interpreter exit, the receipts a ledger still keeps are written (a process that ends
    normally leaves no call in doubt)."""
    found = ledger()
    if found is not None:
        with contextlib.suppress(Exception):  # a store gone by now: its calls stay in doubt, as after a crash
            found.flush()


class _Cursor:
    """A cursor that writes ``?`` placeholders in the store's dialect."""

    def __init__(self, store: Any, cur: Any) -> None:
        self._store, self._cur = store, cur

    def run(self, sql: str, params: tuple[Any, ...]) -> Any:
        if self._store is not None:
            return self._store._run(self._cur, sql, params)
        return self._cur.execute(sql, params)


class MemoryLedger:
    """The ledger of a run without a SQL store: this process's memory (no crash survives it)."""

    def __init__(self) -> None:
        # per run: key → [body, receipt]; values are made of strings and numbers, never changed
        self._runs: dict[str, dict[str, list[Any]]] = {}
        # per run: the keys without a receipt, in the order they were intended (no scan of the run)
        self._open: dict[str, dict[str, None]] = {}
        self._lock = threading.Lock()

    def intend(
        self, run_id: str, key: str, body: dict[str, Any], args: Any = None, look_back: bool = True
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """See ``EffectLedger.intend`` (the arguments are not kept: no crash survives this ledger;
        ``others`` is always read: it costs no query here)."""
        with self._lock:
            rows = self._runs.get(run_id)
            if rows is None:
                rows = self._runs[run_id] = {}
                self._open[run_id] = {}
            found = rows.get(key)
            if found is not None:
                return {"key": key, "body": found[0], "receipt": found[1]}, []
            waiting = self._open[run_id]
            others = [{"key": k, "body": rows[k][0], "receipt": None} for k in waiting] if waiting else []
            rows[key] = [dict(body), None]
            waiting[key] = None
        return None, others

    def settle(self, run_id: str, key: str, receipt: dict[str, Any]) -> None:
        """See ``EffectLedger.settle``."""
        with self._lock:
            found = self._runs.get(run_id, {}).get(key)
            if found is not None and found[1] is None:
                found[1] = dict(receipt)
                self._open[run_id].pop(key, None)

    #: memory keeps nothing for later: a receipt is in place at once
    settle_later = settle

    def flush(self) -> None:
        """See ``EffectLedger.flush`` (nothing is kept for later here)."""

    def reopen(self, run_id: str, key: str) -> None:
        """See ``EffectLedger.reopen``."""
        with self._lock:
            found = self._runs.get(run_id, {}).get(key)
            if found is not None:
                found[1] = None
                self._open[run_id][key] = None

    def entries(self, run_id: str) -> list[dict[str, Any]]:
        """See ``EffectLedger.entries``."""
        with self._lock:
            return [{"key": k, "body": dict(v[0]), "receipt": v[1]} for k, v in self._runs.get(run_id, {}).items()]


_ledgers: dict[int, Any] = {}
_ledgers_lock = threading.Lock()


def ledger_of(store: Any) -> Any:
    """The ledger of ``store``: its SQL table for a SQL store, else one ``MemoryLedger`` per store."""
    with _ledgers_lock:
        found = getattr(store, "_effect_ledger", None)
        if found is None:
            found = EffectLedger(store) if hasattr(store, "_tx") and hasattr(store, "_run") else MemoryLedger()
            try:
                store._effect_ledger = found
            except AttributeError:  # a store that takes no attributes: one ledger per object id
                found = _ledgers.setdefault(id(store), found)
        return found
