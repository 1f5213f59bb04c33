"""Forks in a run store: lineage columns (a schema migration), ``store.forks``, a stored
run id as the source, and the stored fork's log folding from ``{}``."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fork_charts import big_chart
from old_schema import insert_old_run

from flowchart import ForkError, replay
from flowchart.store import SCHEMA_VERSION, MemoryStore, SqliteStore


@pytest.fixture(params=["memory", "sqlite"])
def store(request: Any, tmp_path: Path) -> Any:
    made = MemoryStore() if request.param == "memory" else SqliteStore(tmp_path / "runs.db")
    yield made
    made.close()


def test_a_stored_run_forks_by_id_and_the_fork_is_listed(store: Any) -> None:
    """fork(run_id, store=) reads the stored log; the fork is a stored run with its lineage,
    its log is the parent's 0..at then its own, and it folds from {} to its final state."""
    chart = big_chart()
    parent = chart.run(store=store, run_id="parent")
    fork = chart.fork("parent", at=8, patch={"total": 1}, store=store, run_id="child")
    assert fork.run_id == "child" and fork.state["doubled"] == 3
    record = store.get("child")
    assert (record.status, record.parent_run_id, record.forked_at) == ("done", "parent", 8)
    assert [c.runtime_stage_id for c in record.commit_log[:10]] == [
        c.runtime_stage_id for c in parent.commit_log[:9]
    ] + ["fork#9"]
    assert replay(record.commit_log) == fork.state
    assert [r.run_id for r in store.forks("parent")] == ["child"]
    assert store.forks("child") == [] and store.get("parent").parent_run_id is None


def test_a_stored_fork_can_be_forked_again(store: Any) -> None:
    """A stored fork's log walks from the root (its fork commit is passed over), so forking it
    at any later commit works and its own fork lists under it."""
    chart = big_chart()
    chart.run(store=store, run_id="p")
    chart.fork("p", at=2, patch={"limit": 1}, store=store, run_id="c1")
    record = store.get("c1")
    at = [c.stage_id for c in record.commit_log].index("after")
    grandchild = chart.fork("c1", at=at, patch={"total": 0}, store=store, run_id="c2")
    # the children run after the patch: x.out = total + 1 = 1, y.out = n * 10 = 20
    assert record_value(record, "n") == 2
    assert grandchild.state["result"] == 0 + record_value(record, "doubled") + 1 + 20
    assert [r.run_id for r in store.forks("c1")] == ["c2"]


def record_value(record: Any, key: str) -> Any:
    return replay(record.commit_log)[key]


def test_a_failed_fork_is_stored_failed_with_its_commits(store: Any) -> None:
    """A fork that fails is recorded like any run: failed, with the prefix and its commits."""
    chart = big_chart()
    chart.run(store=store, run_id="p")
    with pytest.raises(TypeError):  # x collects its TypeError (not fail-fast); final then raises
        chart.fork("p", at=9, patch={"total": "a"}, store=store, run_id="bad")
    record = store.get("bad")
    assert record.status == "failed" and record.parent_run_id == "p"
    assert [c.stage_id for c in record.commit_log][10:] == ["fork", "after", "x", "y", "final"]
    assert record.failure is not None and record.failure.stage_id == "final"


def test_a_run_id_without_a_store_is_refused() -> None:
    """A run id means nothing without the store it lives in."""
    with pytest.raises(ForkError, match=r"^fork\('r1'\): a run id needs store=..."):
        big_chart().fork("r1", at=0)


def test_a_version_4_database_migrates_to_lineage_columns(tmp_path: Path) -> None:
    """An old database gains parent_run_id / forked_at (NULL for its runs) on open."""
    path = tmp_path / "old.db"
    SqliteStore(path).close()
    raw = sqlite3.connect(path)
    raw.execute("DELETE FROM schema_version WHERE version >= 5")
    raw.execute("DROP INDEX runs_by_status_update")  # version 8
    raw.execute("DROP INDEX runs_by_update")
    raw.execute("ALTER TABLE runs DROP COLUMN seal")  # version 7
    raw.execute("DROP INDEX runs_by_parent")
    raw.execute("ALTER TABLE runs DROP COLUMN forked_at")
    raw.execute("ALTER TABLE runs DROP COLUMN parent_run_id")
    insert_old_run(raw)
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    assert store.schema_version() == SCHEMA_VERSION
    record = store.get("old")
    assert (record.parent_run_id, record.forked_at) == (None, None)
    assert store.forks("old") == []
    store.close()
