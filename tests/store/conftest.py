"""Store fixtures: ``store`` runs each test on memory, SQLite and a real PostgreSQL.

PostgreSQL is started once per session (``servers.postgres_server``); each test gets
its own schema, so tests never see each other's runs. When the server truly cannot
start, the PostgreSQL cases skip with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import ServerUnavailable, fresh_pg_dsn, postgres_server, redis_server

from flowchart.store import MemoryStore, RunStore, SqliteStore


@pytest.fixture(scope="session")
def pg_dsn() -> Iterator[str]:
    """The DSN of a PostgreSQL server started for this test session (skips when impossible)."""
    pytest.importorskip("psycopg", reason="PostgreSQL store tests need psycopg (extra [postgres])")
    try:
        with postgres_server() as dsn:
            yield dsn
    except ServerUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")


@pytest.fixture(scope="module")
def redis_url() -> object:
    """A redis-server started for each module that asks (the Celery tests) (skips when it truly cannot start)."""
    try:
        with redis_server() as url:
            yield url
    except ServerUnavailable as exc:
        pytest.skip(f"Redis cannot start here: {exc}")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], RunStore]]:
    """A factory of stores on ONE backing database (each call = another process's view)."""
    made: list[Any] = []
    if request.param == "memory":
        shared = MemoryStore()
        factory: Callable[[], RunStore] = lambda: shared  # noqa: E731
    elif request.param == "sqlite":
        factory = lambda: SqliteStore(tmp_path / "runs.db")  # noqa: E731
    else:
        from flowchart.store import PostgresStore

        dsn = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
        factory = lambda: PostgresStore(dsn)  # noqa: E731

    def make() -> RunStore:
        store = factory()
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


@pytest.fixture
def store(make_store: Callable[[], RunStore]) -> RunStore:
    """One store on each backend."""
    return make_store()
