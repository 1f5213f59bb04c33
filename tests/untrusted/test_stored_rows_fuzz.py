"""A stored row is untrusted input, column by column: hypothesis edits ONE cell of a real store
(every column of ``runs``, ``commits``, ``segments``, ``answers`` and ``charts``; the edits of
``tests/stored_rows.py``: ``mutate`` of the real value, NULL, integers, reals, blobs, deep JSON,
lone surrogate escapes, huge numbers) and the store either gives the run — and then every reader
works on it: its trace saved and loaded, its page, ``agent runs show / list / trace``, ``agent
view``, the paused run resumed — or refuses that one run by name, while ``list()`` still lists
the others. A store made with ``key=`` refuses every edit. The campaign (``bench/fuzz_loaders.py
--only rows``) does the same at scale."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import stored_rows
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowchart.store import SqliteStore, StoredRowError

TARGETS = st.sampled_from(stored_rows.TARGETS)
FIXTURES = [HealthCheck.function_scoped_fixture]


@pytest.fixture(scope="module")
def sqlite_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[stored_rows.Db, stored_rows.Base]:
    """A SQLite store holding the three real runs (paused agent, done agent, chart with a subflow)."""
    db = stored_rows.sqlite_db(tmp_path_factory.mktemp("rows") / "runs.db")
    return db, stored_rows.Base.build(db)


@pytest.fixture(scope="module")
def keyed_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[stored_rows.Db, stored_rows.Base]:
    """The same runs in a SQLite store made with ``key=`` (each run sealed whole)."""
    db = stored_rows.sqlite_db(tmp_path_factory.mktemp("keyed") / "runs.db")
    return db, stored_rows.Base.build(db, stored_rows.KEY)


@pytest.fixture(scope="module")
def postgres_runs() -> Iterator[tuple[stored_rows.Db, stored_rows.Base]]:
    """The three runs on a private PostgreSQL server (skips, with the reason, when none can start)."""
    pytest.importorskip("psycopg", reason="the PostgreSQL case needs psycopg (extra [postgres])")
    from servers import ServerUnavailable, fresh_pg_dsn, postgres_server

    try:
        with postgres_server() as dsn:
            db = stored_rows.postgres_db(fresh_pg_dsn(dsn))
            yield db, stored_rows.Base.build(db)
    except ServerUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")


@settings(max_examples=200, deadline=None, suppress_health_check=FIXTURES)
@given(target=TARGETS, rng=st.randoms(use_true_random=False))
def test_an_edited_cell_is_refused_by_name_or_loads_and_serves_every_reader(
    sqlite_runs: tuple[stored_rows.Db, stored_rows.Base], target: tuple[str, str], rng: random.Random
) -> None:
    """SQLite, any column: accepted (and then saved, viewed, shown, listed, resumed), refused by the
    documented tree, or not writable — never another exception, never a hidden run."""
    db, base = sqlite_runs
    outcome = stored_rows.attempt(db, base, *target, rng)
    assert not outcome.startswith("OTHER"), outcome


@settings(max_examples=150, deadline=None, suppress_health_check=FIXTURES)
@given(target=TARGETS, rng=st.randoms(use_true_random=False))
def test_a_keyed_store_refuses_every_edited_cell(
    keyed_runs: tuple[stored_rows.Db, stored_rows.Base], target: tuple[str, str], rng: random.Random
) -> None:
    """With ``key=``, whatever column changed, the run is refused with ``StoredRowError`` (or is
    gone: ``RunNotFoundError`` when its id was edited) and ``list()`` still lists the others."""
    db, base = keyed_runs
    outcome = stored_rows.attempt(db, base, *target, rng, key=stored_rows.KEY)
    assert outcome in ("unwritable", "unchanged", "refused (StoredRowError)", "refused (RunNotFoundError)"), outcome


@settings(max_examples=60, deadline=None, suppress_health_check=FIXTURES)
@given(target=TARGETS, rng=st.randoms(use_true_random=False))
def test_an_edited_cell_on_postgres_is_refused_by_name_or_loads_and_serves_every_reader(
    postgres_runs: tuple[stored_rows.Db, stored_rows.Base], target: tuple[str, str], rng: random.Random
) -> None:
    """PostgreSQL, any column: the same two outcomes as on SQLite (its typed columns refuse more
    values at the write)."""
    db, base = postgres_runs
    outcome = stored_rows.attempt(db, base, *target, rng)
    assert not outcome.startswith("OTHER"), outcome


def test_one_edited_commit_names_its_run_and_the_others_still_list(
    sqlite_runs: tuple[stored_rows.Db, stored_rows.Base], tmp_path: Path
) -> None:
    """A commit row of the paused run nested 5,000 deep: ``get`` names the run and the commit, and
    ``list`` gives the two other runs and sets that one aside."""
    db, base = sqlite_runs
    base.restore(db)
    path = Path(db.cli[1])
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE commits SET body = ? WHERE run_id = ? AND seq = 1", ("[" * 5000 + "]" * 5000, base.paused))
    store = SqliteStore(path)
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run '{base.paused}' \(commit 1\): nested deeper than"):
        store.get(base.paused)
    listed = store.list()
    assert len(listed) == 2 and base.paused not in {r.run_id for r in listed}
    assert [(e.run_id, e.column) for e in listed.unreadable] == [(base.paused, "commit 1")]
    store.close()
