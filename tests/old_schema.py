"""Old run-store databases for the migration tests: the schema as an earlier version wrote it,
with one finished chart run ``old`` in it (shared by the store and fork migration tests)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from flowchart.store.schema import MIGRATIONS, VERSION_TABLE


def schema_database(path: Path, version: int) -> sqlite3.Connection:
    """A SQLite database at ``path`` migrated up to ``version`` only; the open connection."""
    raw = sqlite3.connect(path)
    raw.execute(VERSION_TABLE)
    for step in range(1, version + 1):
        for statement in MIGRATIONS[step]:
            raw.execute(statement)
        raw.execute("INSERT INTO schema_version VALUES (?, 0)", (step,))
    return raw


def insert_old_run(raw: sqlite3.Connection) -> float:
    """Insert the finished chart run ``old`` (no conversation, no lineage); its timestamp."""
    now = time.time()
    raw.execute(
        "INSERT INTO runs (run_id, kind, chart_fingerprint, status, input, created_at, updated_at) "
        "VALUES ('old', 'chart', 'f', 'done', '{}', ?, ?)",
        (now, now),
    )
    return now
