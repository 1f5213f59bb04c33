"""A stored row is untrusted input: an edited column fails THAT run's read with a
``StoredRowError`` naming the run and the column, and ``list`` still lists every other run
(the bad one in ``unreadable``) — never a raw ``KeyError``, ``TypeError`` or ``RecursionError``
that breaks ``agent runs list`` for everyone."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from flowchart import CheckpointError, Redaction, flow_chart
from flowchart.store import SqliteStore, StoredRowError, StoreError


def two_runs(path: Path) -> SqliteStore:
    """A store holding runs 'good' and 'bad' of a small chart (recorded under a rule)."""
    chart = flow_chart("Write", lambda scope: setattr(scope, "x", 1), "write").build()
    store = SqliteStore(path)
    for run_id in ("bad", "good"):
        chart.run(store=store, run_id=run_id, redaction=Redaction(keys={"ssn"}))
    return store


def edit(path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)


EDITS = [
    ("UPDATE commits SET body = ? WHERE run_id = 'bad'", '{"stage":"Write"}', "commit 0"),
    ("UPDATE commits SET body = ? WHERE run_id = 'bad'", "[" * 5000 + "]" * 5000, "commit 0"),
    ("UPDATE runs SET redaction = ? WHERE run_id = 'bad'", '{"keys": 7}', "redaction"),
    ("UPDATE runs SET redaction = ? WHERE run_id = 'bad'", '{"keys": [' * 300 + "]}" * 300, "redaction"),
    ("UPDATE runs SET redaction = ? WHERE run_id = 'bad'", "[1, 2]", "redaction"),
    ("UPDATE runs SET input = ? WHERE run_id = 'bad'", "[1, 2]", "input"),
    ("UPDATE runs SET failure = ? WHERE run_id = 'bad'", '{"error_type": []}', "failure"),
    ("UPDATE runs SET created_at = ? WHERE run_id = 'bad'", "yesterday", "created_at"),
    ("UPDATE runs SET error = ? WHERE run_id = 'bad'", b"\xff", "error"),
    ("UPDATE segments SET narrative = ? WHERE run_id = 'bad'", '{"type": ["stage"]}', "narrative"),
    ("UPDATE segments SET subflows = ? WHERE run_id = 'bad'", '{"m#1": 5}', "subflows"),
    ("UPDATE runs SET checkpoint = ? WHERE run_id = 'bad'", '{"version": 2}', "checkpoint"),
]


@pytest.mark.parametrize(("sql", "value", "column"), EDITS, ids=[f"{c}-{i}" for i, (_, _, c) in enumerate(EDITS)])
def test_an_edited_column_fails_only_its_own_run_by_name(tmp_path: Path, sql: str, value: object, column: str) -> None:
    """Each edit makes ``get('bad')`` a ``StoredRowError`` naming the run and the column; ``list``
    returns the good run and sets the bad one aside; ``get('good')`` still works."""
    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, sql, value)
    store = SqliteStore(path)
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run 'bad' \({column}\): .+$") as caught:
        store.get("bad")
    assert caught.value.run_id == "bad" and caught.value.column == column
    listed = store.list()
    assert [r.run_id for r in listed] == ["good"]
    assert [(e.run_id, e.column) for e in listed.unreadable] == [("bad", column)]
    assert store.get("good").status == "done"


def test_a_stored_row_error_is_both_a_store_error_and_a_checkpoint_error(tmp_path: Path) -> None:
    """Code that catches a store's refusals, or every untrusted loader's, catches a bad row."""
    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, "UPDATE runs SET input = ? WHERE run_id = 'bad'", "{")
    store = SqliteStore(path)
    for base in (StoreError, CheckpointError):
        with pytest.raises(base, match=r"^Invalid stored run 'bad' \(input\): not JSON"):
            store.get("bad")


def test_agent_runs_list_shows_the_other_runs_and_names_the_unreadable_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent runs list`` exits 0 with the readable runs and one UNREADABLE line naming the bad
    run and column (one bad row made the command fail for everyone)."""
    from agent.cli import main

    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, "UPDATE runs SET redaction = ? WHERE run_id = 'bad'", '{"keys": 7}')
    assert main(["runs", "list", "--db", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("good ")
    assert lines[2].startswith("bad ") and "UNREADABLE  Invalid stored run 'bad' (redaction): " in lines[2]
