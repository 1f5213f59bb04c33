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
- Bodies and receipts are JSON objects read back through the one codec
  (``flowchart._core.untrusted.parse``: its depth, size, number and surrogate limits): stored
  rows are untrusted, and a malformed cell raises ``StoredRowError`` naming the run, the key
  and the column. In a signed store (``key=``) each cell carries an HMAC bound to its run, key
  and column, so an edited, forged or moved intent or receipt is refused by name.
- The table (``effects``) is created on first use, in SQLite and PostgreSQL alike, outside the
  numbered migrations, and is not part of a run's seal: a key cannot tell that a whole ledger
  row was DELETED (an intent gone looks like a call never begun — like a consistent rollback,
  which only an anchor kept elsewhere can show; docs/durable.md "Signed stores").
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
from flowchart.store.codec import column as read_column

__all__ = ["EffectLedger", "MemoryLedger", "ledger_of"]

_TABLE = (
    "CREATE TABLE IF NOT EXISTS effects ("
    "run_id TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, receipt TEXT, "
    "intended_at DOUBLE PRECISION NOT NULL, settled_at DOUBLE PRECISION, PRIMARY KEY (run_id, key))"
)


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
        self._ready = False
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
                if not self._ready:
                    self._store._run(cur, _TABLE)
                    self._ready = True
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
                if not self._ready:
                    self._db.execute(_TABLE)
                    self._ready = True
            cur = self._db.cursor()
            cur.execute("BEGIN IMMEDIATE")
            try:
                yield _Cursor(None, cur)
            except BaseException:
                cur.execute("ROLLBACK")
                raise
            cur.execute("COMMIT")

    def intend(
        self, run_id: str, key: str, body: dict[str, Any], args: Any = None, look_back: bool = True
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Write the intent for ``key`` — ``body`` and, under ``"args"``, the call's arguments —
        (committed when this returns, with the receipts ``settle_later`` kept) and return
        ``(None, others)`` — ``others`` the run's other intents without a receipt, in doubt from
        an earlier try — or, when ``key`` has a row already, ``(that row, [])`` and nothing is
        written. ``look_back=False``: ``others`` is not read (``[]``) — for a caller that knows the
        run has none (its segment's first intent found none)."""
        text = _dump({**body, "args": args}, self._signing, run_id, key, "intent")
        if self._sqlite and self._signing is None:  # the plain SQLite store: ``_intend_plain``
            return self._intend_plain(run_id, key, text, look_back)
        with self._tx() as cur:
            self._flush(cur)
            added = cur.run(
                "INSERT INTO effects (run_id, key, body, intended_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run_id, key) DO NOTHING",
                (run_id, key, text, time.time()),
            )
            if added.rowcount == 0:  # the key has a row: the first intent stands
                found = cur.run("SELECT body, receipt FROM effects WHERE run_id = ? AND key = ?", (run_id, key))
                body_text, receipt = found.fetchone()
                return _row(run_id, key, body_text, receipt, self._signing), []
            if not look_back:
                return None, []
            others = cur.run(
                "SELECT key, body FROM effects WHERE run_id = ? AND receipt IS NULL AND key <> ?", (run_id, key)
            ).fetchall()
        return None, [_row(run_id, other, text, None, self._signing) for other, text in others]

    def settle(self, run_id: str, key: str, receipt: dict[str, Any]) -> None:
        """Write the receipt for ``key`` (the first one stands), committed when this returns."""
        row = (_dump(receipt, self._signing, run_id, key, "receipt"), time.time(), run_id, key)
        with self._tx() as cur:
            self._flush(cur)
            cur.run(_SETTLE, row)

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
        for row in rows:
            cur.run(_SETTLE, row)

    def reopen(self, run_id: str, key: str) -> None:
        """Clear the receipt of ``key`` (its effect is to be tried again: the last try failed)."""
        with self._tx() as cur:
            self._flush(cur)
            cur.run("UPDATE effects SET receipt = NULL, settled_at = NULL WHERE run_id = ? AND key = ?", (run_id, key))

    def entries(self, run_id: str) -> list[dict[str, Any]]:
        """Every row of ``run_id``, in the order the intents were written."""
        with self._tx() as cur:
            self._flush(cur)
            rows = cur.run(
                "SELECT key, body, receipt FROM effects WHERE run_id = ? ORDER BY intended_at, key", (run_id,)
            ).fetchall()
        return [_row(run_id, key, body, receipt, self._signing) for key, body, receipt in rows]

    def _intend_plain(
        self, run_id: str, key: str, text: str, look_back: bool
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """``intend`` in a plain (unsigned) SQLite store: the same transaction, written on the
        ledger's connection directly — no generator context, no cursor wrapper (an intent is on
        every call of an effect's tool: issue 33's ≤ 1.10 of W6). A signed store, and PostgreSQL,
        take ``intend``'s own path."""
        with self._lock:
            if self._db is None or self._pid != os.getpid():
                with self._tx():  # the connection (and what it makes on first use), as every write makes it
                    pass
            rows = self._pending
            if rows:
                self._pending = []
                if self._pending_pid != os.getpid():  # a forked child: the parent's receipts are the parent's
                    rows, self._pending_pid = [], os.getpid()
            run = self._db.cursor().execute  # one cursor (``Connection.execute`` makes one a statement)
            run("BEGIN IMMEDIATE")
            try:
                for row in rows:
                    run(_SETTLE, row)
                if run(_INTEND, (run_id, key, text, time.time())).rowcount == 0:  # the first intent stands
                    body_text, receipt = run(
                        "SELECT body, receipt FROM effects WHERE run_id = ? AND key = ?", (run_id, key)
                    ).fetchone()
                    found: tuple[dict[str, Any] | None, list[Any]] = (_row(run_id, key, body_text, receipt), [])
                elif look_back:
                    others = run(
                        "SELECT key, body FROM effects WHERE run_id = ? AND receipt IS NULL AND key <> ?", (run_id, key)
                    ).fetchall()
                    found = (None, [_row(run_id, other, body, None) for other, body in others])
                else:
                    found = (None, [])
            except BaseException:
                run("ROLLBACK")
                raise
            run("COMMIT")
        return found


_SETTLE = "UPDATE effects SET receipt = ?, settled_at = ? WHERE run_id = ? AND key = ? AND receipt IS NULL"
_INTEND = (
    "INSERT INTO effects (run_id, key, body, intended_at) VALUES (?, ?, ?, ?) ON CONFLICT (run_id, key) DO NOTHING"
)


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
