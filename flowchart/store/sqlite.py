"""``SqliteStore(path)``: the embedded run store (stdlib ``sqlite3``, WAL).

Laws:
- One file holds every run; WAL mode lets readers (``agent runs list``) work while a
  writer commits, and ``BEGIN IMMEDIATE`` makes every write take the database's single
  writer lock before it reads the row it checks — so two processes on one machine
  advancing or answering the same run are serialised, and the loser is told.
- ``synchronous`` stays at SQLite's default (FULL): a committed segment survives a
  power cut.
- Busy writers wait (``timeout`` seconds, default 30) instead of failing at once.
- ``key=b"..."`` signs the rows a run is started, resumed and recorded from (see
  ``flowchart.store.codec``); a row changed outside the store then fails to load.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .sql import SqlStore


class SqliteStore(SqlStore):
    """A run store in one SQLite file (created, and migrated, on first use)."""

    def __init__(self, path: str | Path, *, timeout: float = 30.0, key: bytes | None = None) -> None:
        self.path = str(path)
        self._timeout = timeout
        super().__init__(self.path, key)

    def _open(self) -> Any:
        db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    @contextmanager
    def _begin(self, db: Any, write: bool) -> Iterator[Any]:
        cur = db.cursor()
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)
