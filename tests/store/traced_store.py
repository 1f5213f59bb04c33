"""``TracedStore``: a SQLite run store whose connection reports every statement it runs
(``sqlite3``'s own trace callback, values inlined), so a test sees what an operation asks of the
database — how many statements, which, and how many bytes they carry."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from flowchart.store import SqliteStore


class TracedStore(SqliteStore):
    """A ``SqliteStore`` that appends each statement its connection runs to ``statements``."""

    def __init__(self, path: Path | str) -> None:
        self.statements: list[str] = []
        super().__init__(path)

    def _open(self) -> Any:
        db: sqlite3.Connection = super()._open()
        db.set_trace_callback(self.statements.append)
        return db
