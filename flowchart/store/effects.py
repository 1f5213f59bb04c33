"""The effect ledger: an intent written before an effect happens, a receipt after — durably, at once.

Laws:
- A run's segment is written to the store only when it ends; an effect (a refund, an e-mail)
  happens in the middle of one. So the ledger is written apart from the segment, each row in its
  own transaction the moment it is known: ``intend`` BEFORE the effect, ``settle`` after. A
  process that dies between the two leaves an intent without a receipt: the effect is *in doubt*,
  and whoever advances the run next finds it (``entry``).
- Rows are keyed by (run id, key); ``intend`` on a key that has a row returns that row and writes
  nothing (the first intent stands). ``settle`` writes the receipt once; a second receipt for the
  same key is ignored (the first one stands), so two workers racing on one effect agree.
- Bodies and receipts are JSON, read back through the one codec's JSON loader and checked to be
  objects (stored rows are untrusted: a malformed row raises ``StoreError`` naming the run and key).
- The table (``effects``) is created on first use, in SQLite and PostgreSQL alike, outside the
  numbered migrations: it is not covered by a signed store's seal.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from flowchart.store.protocol import StoreError

__all__ = ["EffectLedger", "MemoryLedger", "ledger_of"]

_TABLE = (
    "CREATE TABLE IF NOT EXISTS effects ("
    "run_id TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, receipt TEXT, "
    "intended_at DOUBLE PRECISION NOT NULL, settled_at DOUBLE PRECISION, PRIMARY KEY (run_id, key))"
)


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def _load(text: Any, run_id: str, key: str, column: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise StoreError(f"effect ledger: run '{run_id}' key '{key}': the stored {column} is not a JSON object")
    return value


def _row(run_id: str, key: str, body: Any, receipt: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "body": _load(body, run_id, key, "intent")}
    out["receipt"] = None if receipt is None else _load(receipt, run_id, key, "receipt")
    return out


class EffectLedger:
    """The ledger in a SQL run store (``SqliteStore``/``PostgresStore``), on the store's connection."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._ready = False

    def _tx(self) -> Any:
        store = self._store
        if not self._ready:
            with store._tx() as cur:
                store._run(cur, _TABLE)
            self._ready = True
        return store._tx()

    def intend(self, run_id: str, key: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """Write the intent for ``key`` (committed when this returns); the existing row instead
        (``{"key", "body", "receipt"}``) when there is one — then nothing is written."""
        store = self._store
        with self._tx() as cur:
            found = store._run(
                cur, "SELECT body, receipt FROM effects WHERE run_id = ? AND key = ?" + store.for_update, (run_id, key)
            ).fetchone()
            if found is not None:
                return _row(run_id, key, found[0], found[1])
            store._run(
                cur,
                "INSERT INTO effects (run_id, key, body, intended_at) VALUES (?, ?, ?, ?)",
                (run_id, key, _dump(body), time.time()),
            )
        return None

    def settle(self, run_id: str, key: str, receipt: dict[str, Any]) -> None:
        """Write the receipt for ``key`` (the first one stands)."""
        store = self._store
        with self._tx() as cur:
            store._run(
                cur,
                "UPDATE effects SET receipt = ?, settled_at = ? WHERE run_id = ? AND key = ? AND receipt IS NULL",
                (_dump(receipt), time.time(), run_id, key),
            )

    def reopen(self, run_id: str, key: str) -> None:
        """Clear the receipt of ``key`` (its effect is to be tried again: the last try failed)."""
        store = self._store
        with self._tx() as cur:
            store._run(
                cur, "UPDATE effects SET receipt = NULL, settled_at = NULL WHERE run_id = ? AND key = ?", (run_id, key)
            )

    def entries(self, run_id: str) -> list[dict[str, Any]]:
        """Every row of ``run_id``, in the order the intents were written."""
        store = self._store
        with self._tx() as cur:
            rows = store._run(
                cur, "SELECT key, body, receipt FROM effects WHERE run_id = ? ORDER BY intended_at, key", (run_id,)
            ).fetchall()
        return [_row(run_id, key, body, receipt) for key, body, receipt in rows]


class MemoryLedger:
    """The ledger of a run without a SQL store: this process's memory (no crash survives it)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def intend(self, run_id: str, key: str, body: dict[str, Any]) -> dict[str, Any] | None:
        """See ``EffectLedger.intend``."""
        with self._lock:
            found = self._rows.get((run_id, key))
            if found is not None:
                return {"key": key, "body": dict(found["body"]), "receipt": found["receipt"]}
            self._rows[(run_id, key)] = {"body": json.loads(_dump(body)), "receipt": None}
        return None

    def settle(self, run_id: str, key: str, receipt: dict[str, Any]) -> None:
        """See ``EffectLedger.settle``."""
        with self._lock:
            found = self._rows.get((run_id, key))
            if found is not None and found["receipt"] is None:
                found["receipt"] = json.loads(_dump(receipt))

    def reopen(self, run_id: str, key: str) -> None:
        """See ``EffectLedger.reopen``."""
        with self._lock:
            found = self._rows.get((run_id, key))
            if found is not None:
                found["receipt"] = None

    def entries(self, run_id: str) -> list[dict[str, Any]]:
        """See ``EffectLedger.entries``."""
        with self._lock:
            return [
                {"key": key, "body": dict(row["body"]), "receipt": row["receipt"]}
                for (run, key), row in self._rows.items()
                if run == run_id
            ]


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
