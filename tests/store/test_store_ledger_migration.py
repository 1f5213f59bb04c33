"""The effect ledger and the lease table are the store's schema (migration 9): a database from
before them opens, is migrated, and its ledger and leases work; one whose tables the older library
made on first use keeps their rows."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from servers import fresh_pg_dsn

from flowchart.store import SCHEMA_VERSION, PostgresStore, SqliteStore
from flowchart.store.effects import ledger_of
from flowchart.store.leases import acquire, expired
from flowchart.store.schema import MIGRATIONS, VERSION_TABLE


def _version_8_file(path: Path, *, with_old_tables: bool) -> None:
    """A SQLite run store as a version-8 library left it (optionally with the ledger and lease
    tables that library created on first use, holding a row each)."""
    raw = sqlite3.connect(path)
    raw.execute(VERSION_TABLE)
    for version in range(1, 9):
        for statement in MIGRATIONS[version]:
            raw.execute(statement)
        raw.execute("INSERT INTO schema_version VALUES (?, 0)", (version,))
    now = time.time()
    raw.execute(
        "INSERT INTO runs (run_id, kind, chart_fingerprint, status, input, created_at, updated_at) "
        "VALUES ('old', 'chart', 'f', 'running', '{}', ?, ?)",
        (now, now),
    )
    if with_old_tables:  # exactly what the version-8 library's first use ran
        raw.execute(
            "CREATE TABLE IF NOT EXISTS effects (run_id TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL, "
            "receipt TEXT, intended_at DOUBLE PRECISION NOT NULL, settled_at DOUBLE PRECISION, "
            "PRIMARY KEY (run_id, key))"
        )
        raw.execute(
            "CREATE TABLE IF NOT EXISTS leases (run_id TEXT PRIMARY KEY, holder TEXT NOT NULL, "
            "token INTEGER NOT NULL, expires_at DOUBLE PRECISION NOT NULL)"
        )
        raw.execute("INSERT INTO effects VALUES ('old', 'old:c1', '{\"tool\":\"refund\"}', NULL, 0, NULL)")
        raw.execute("INSERT INTO leases VALUES ('old', 'dead-worker', 4, 0)")
    raw.commit()
    raw.close()


def _tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as raw:
        return {name for (name,) in raw.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_version_8_file_without_the_tables_is_migrated_and_its_ledger_and_leases_work(tmp_path: Path) -> None:
    """A version-8 file (no ledger, no leases) opens; migration 9 creates both tables, recorded in
    ``schema_version``; an intent and a lease on its old run are written and read back."""
    path = tmp_path / "old.db"
    _version_8_file(path, with_old_tables=False)
    assert {"effects", "leases"}.isdisjoint(_tables(path))
    store = SqliteStore(path)
    assert store.schema_version() == SCHEMA_VERSION == 9
    assert {"effects", "leases"} <= _tables(path)
    ledger = ledger_of(store)
    assert ledger.intend("old", "old:c1", {"tool": "refund"}) == (None, [])
    assert [entry["key"] for entry in ledger.entries("old")] == ["old:c1"]
    lease = acquire(store, "old", "w1", ttl=0.01)
    assert lease.token == 1
    time.sleep(0.02)
    assert expired(store) == ["old"]


def test_a_version_8_file_whose_tables_were_made_on_first_use_keeps_their_rows(tmp_path: Path) -> None:
    """The tables a version-8 library created on first use are kept as they are: the in-doubt intent
    is still in doubt after the migration, and the dead worker's lease is taken over with the next
    fencing token."""
    path = tmp_path / "old.db"
    _version_8_file(path, with_old_tables=True)
    store = SqliteStore(path)
    assert store.schema_version() == 9
    entries = ledger_of(store).entries("old")
    assert [(e["key"], e["body"], e["receipt"]) for e in entries] == [("old:c1", {"tool": "refund"}, None)]
    assert expired(store) == ["old"]
    assert acquire(store, "old", "w2").token == 5


def test_a_new_postgres_schema_has_the_tables_from_its_migrations(request: pytest.FixtureRequest) -> None:
    """On PostgreSQL the migrations create ``effects`` and ``leases`` before anything uses them."""
    import psycopg

    dsn = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    PostgresStore(dsn).close()
    with psycopg.connect(dsn) as raw:
        found = {
            name
            for (name,) in raw.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
            )
        }
        versions = [v for (v,) in raw.execute("SELECT version FROM schema_version ORDER BY version")]
    assert {"effects", "leases"} <= found
    assert versions == list(range(1, 10))
