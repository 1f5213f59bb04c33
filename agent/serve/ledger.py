"""The inbox's own records: audit rows, receipts, four-eyes first approvals and its keys.

Laws:
- Every attempt to decide is an audit row — who tried what on which run and request, and
  what came of it (``decided``, ``pending-second-approver``, or the refusal's status and
  message) — appended, never edited.
- A receipt is kept per ``(run_id, request_id)`` (one decision per pause: the run store's
  answer-once decides which); a four-eyes first approval per ``(run_id, request_id)`` and
  approver.
- The keys (receipt signing, session signing) are made once, at random, and kept here, so a
  restarted server verifies the receipts and sessions it issued before.
- One SQLite file (WAL), next to a SQLite run store by default; it holds no run data.
"""

from __future__ import annotations

import json
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, who TEXT, "
    "run_id TEXT, request_id TEXT, action TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT)",
    "CREATE TABLE IF NOT EXISTS receipts (run_id TEXT NOT NULL, request_id TEXT NOT NULL, receipt TEXT NOT NULL, "
    "PRIMARY KEY (run_id, request_id))",
    "CREATE TABLE IF NOT EXISTS first_approvals (run_id TEXT NOT NULL, request_id TEXT NOT NULL, "
    "by TEXT NOT NULL, at TEXT NOT NULL, args TEXT, note TEXT, PRIMARY KEY (run_id, request_id, by))",
    "CREATE TABLE IF NOT EXISTS keys (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
)


def default_path(store: Any) -> str:
    """Where the inbox keeps its records for ``store``: ``<db>.inbox.db`` beside a SQLite store's
    file, else in memory (pass ``state=PATH`` to keep them)."""
    path = getattr(store, "path", None)
    if isinstance(path, str) and path not in ("", ":memory:"):
        return str(Path(path).with_name(Path(path).name + ".inbox.db"))
    return ":memory:"


class InboxLedger:
    """The inbox's records in one SQLite file (thread-safe)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        for statement in _SCHEMA:
            self._db.execute(statement)

    def key(self, name: str) -> bytes:
        """The named key, made at random the first time it is asked for."""
        with self._lock:
            self._db.execute("INSERT OR IGNORE INTO keys VALUES (?, ?)", (name, secrets.token_bytes(32)))
            row = self._db.execute("SELECT value FROM keys WHERE name = ?", (name,)).fetchone()
        return bytes(row[0])

    def audit(
        self, who: str | None, run_id: str | None, request_id: str | None, action: str, outcome: str, detail: str = ""
    ) -> None:
        """Append an audit row."""
        with self._lock:
            self._db.execute(
                "INSERT INTO audit (at, who, run_id, request_id, action, outcome, detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (time.time(), who, run_id, request_id, action, outcome, detail),
            )

    def audit_rows(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """The audit rows (of one run when given), oldest first."""
        sql = "SELECT at, who, run_id, request_id, action, outcome, detail FROM audit"
        params: tuple[Any, ...] = ()
        if run_id is not None:
            sql, params = sql + " WHERE run_id = ?", (run_id,)
        with self._lock:
            rows = self._db.execute(sql + " ORDER BY id", params).fetchall()
        keys = ("at", "who", "run_id", "request_id", "action", "outcome", "detail")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def keep_receipt(self, run_id: str, request_id: str, receipt: dict[str, Any]) -> None:
        """Keep the receipt of the decision on ``(run_id, request_id)``."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO receipts VALUES (?, ?, ?)",
                (run_id, request_id, json.dumps(receipt, sort_keys=True, ensure_ascii=False)),
            )

    def receipt(self, run_id: str, request_id: str) -> dict[str, Any] | None:
        """The kept receipt, or ``None``."""
        with self._lock:
            row = self._db.execute(
                "SELECT receipt FROM receipts WHERE run_id = ? AND request_id = ?", (run_id, request_id)
            ).fetchone()
        return None if row is None else dict(json.loads(row[0]))

    def receipts_of(self, run_id: str) -> list[dict[str, Any]]:
        """Every receipt kept for ``run_id``."""
        with self._lock:
            rows = self._db.execute(
                "SELECT receipt FROM receipts WHERE run_id = ? ORDER BY rowid", (run_id,)
            ).fetchall()
        return [dict(json.loads(row[0])) for row in rows]

    def first_approvals(self, run_id: str, request_id: str) -> list[dict[str, Any]]:
        """The four-eyes approvals recorded so far for the pause, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT by, at, args, note FROM first_approvals WHERE run_id = ? AND request_id = ? ORDER BY rowid",
                (run_id, request_id),
            ).fetchall()
        return [
            {"by": by, "at": at, "args": None if args is None else json.loads(args), "note": note}
            for by, at, args, note in rows
        ]

    def add_first_approval(self, run_id: str, request_id: str, by: str, at: str, args: Any, note: str | None) -> bool:
        """Record ``by``'s approval pending a second approver; False when ``by`` approved already."""
        with self._lock:
            try:
                self._db.execute(
                    "INSERT INTO first_approvals VALUES (?, ?, ?, ?, ?, ?)",
                    (run_id, request_id, by, at, None if args is None else json.dumps(args, sort_keys=True), note),
                )
            except sqlite3.IntegrityError:
                return False
        return True

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._db.close()
