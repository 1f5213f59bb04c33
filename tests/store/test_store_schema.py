"""Schema ownership and storage shape: versioned migrations, refusal of newer databases,
commit rows that hold diffs, and the optional psycopg import."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from servers import fresh_pg_dsn

from flowchart import flow_chart
from flowchart.store import SCHEMA_VERSION, MemoryStore, PostgresStore, SchemaVersionError, SqliteStore


def test_a_new_sqlite_file_is_created_at_the_current_schema_in_wal_mode(tmp_path: Path) -> None:
    """Opening a missing file creates it, migrates it and records the version; WAL is on."""
    store = SqliteStore(tmp_path / "runs.db")
    assert store.schema_version() == SCHEMA_VERSION
    store.close()
    with sqlite3.connect(tmp_path / "runs.db") as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        versions = [v for (v,) in raw.execute("SELECT version FROM schema_version")]
    assert versions == list(range(1, SCHEMA_VERSION + 1))
    SqliteStore(tmp_path / "runs.db").close()  # reopening migrates nothing and fails nothing


def test_a_sqlite_file_from_a_newer_version_is_refused(tmp_path: Path) -> None:
    """A database whose schema_version is above ours is refused with an upgrade hint."""
    SqliteStore(tmp_path / "runs.db").close()
    with sqlite3.connect(tmp_path / "runs.db") as raw:
        raw.execute("INSERT INTO schema_version VALUES (?, 0)", (SCHEMA_VERSION + 1,))
    with pytest.raises(SchemaVersionError, match=rf"has schema version {SCHEMA_VERSION + 1}, .*Upgrade pyfootprint"):
        SqliteStore(tmp_path / "runs.db")


def test_a_postgres_schema_from_a_newer_version_is_refused(pg_dsn: str) -> None:
    """The same refusal on PostgreSQL, and the message hides the password."""
    import psycopg

    dsn = fresh_pg_dsn(pg_dsn)
    PostgresStore(dsn).close()
    with psycopg.connect(dsn, autocommit=True) as raw:
        raw.execute("INSERT INTO schema_version VALUES (%s, 0)", (SCHEMA_VERSION + 7,))
    with pytest.raises(SchemaVersionError, match=rf"run store postgresql://postgres@.* version {SCHEMA_VERSION + 7}"):
        PostgresStore(dsn)


def test_commit_rows_grow_with_the_diff_not_the_state(tmp_path: Path) -> None:
    """A 100 kB value written once is stored once; 40 small stages after it add small rows."""

    def big(scope: Any) -> None:
        scope.blob = "x" * 100_000

    def small(scope: Any) -> None:
        scope.count = (scope.count if "count" in scope else 0) + 1

    builder = flow_chart("Big", big, "big")
    for n in range(40):
        builder = builder.add_function(f"Small{n}", small, f"small-{n}")
    store = SqliteStore(tmp_path / "runs.db")
    result = builder.build().run(store=store)
    store.close()
    with sqlite3.connect(tmp_path / "runs.db") as raw:
        sizes = [
            n
            for (n,) in raw.execute("SELECT LENGTH(body) FROM commits WHERE run_id = ? ORDER BY seq", (result.run_id,))
        ]
    assert len(sizes) == 41 and sizes[0] > 100_000
    assert max(sizes[1:]) < 400 and sum(sizes) < 100_000 + 41 * 400


def test_postgres_store_says_what_to_install_without_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without psycopg, PostgresStore raises ImportError naming psycopg and the [postgres] extra."""
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(
        ImportError,
        match=r"^PostgresStore needs psycopg 3: pip install 'psycopg\[binary\]' "
        r"\(in a pyfootprint checkout: pip install -e '\.\[postgres\]'\)$",
    ):
        PostgresStore("postgresql://localhost/x")


def test_the_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    """MemoryStore and SqliteStore are RunStores (runtime-checkable protocol)."""
    from flowchart.store import RunStore

    assert isinstance(MemoryStore(), RunStore)
    assert isinstance(SqliteStore(tmp_path / "a.db"), RunStore)
