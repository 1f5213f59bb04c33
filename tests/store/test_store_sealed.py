"""A signed store is tamper-evident as a whole: every column a person or a resume reads, the
run's rows in every table, and their number are sealed together, so an edit, a NULL, a
deleted row or a row moved between runs is refused by name before a person sees the run or a
resume runs anything. ``verify`` returns the run's head (a digest to anchor elsewhere), and a
person's decision records the head it was made against.

The databases are real SQLite files edited behind the store's back with ``sqlite3``.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from refund_agent import REFUNDS, refund_agent

from agent import Paused
from flowchart import CheckpointError, replay
from flowchart.store import SCHEMA_VERSION, RunStore, SqliteStore, StoredRowError
from governance import check_in_approved

KEY = b"k" * 32


@pytest.fixture(autouse=True)
def _clear_refunds() -> None:
    REFUNDS.clear()


def paused_run(path: Path) -> Paused:
    """A refund of 129.0 paused on its check-in, in a signed store at ``path``."""
    out = refund_agent(SqliteStore(path, key=KEY)).run("refund order A-1 129.0")
    assert isinstance(out, Paused) and out.run_id and out.check_in
    return out


def edit(path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)


def refused(path: Path, run_id: str, column: str) -> StoredRowError:
    """Reading the run is refused naming ``column``, and the refund never runs."""
    store = SqliteStore(path, key=KEY)
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run '{run_id}' \({column}\): ") as caught:
        store.get(run_id)
    with pytest.raises(StoredRowError, match=rf"\({column}\): "):
        store.verify(run_id)
    assert [r.run_id for r in store.list()] == [] and [e.run_id for e in store.list().unreadable] == [run_id]
    assert REFUNDS == []
    return caught.value


def test_an_edited_question_is_refused_so_a_person_never_approves_another_amount(tmp_path: Path) -> None:
    """The reproduction: the question column said ``amount=1.0`` while the signed call refunds
    129.0 — now the edited question is refused by name, and approving it runs nothing."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    edit(path, "UPDATE runs SET question = replace(question, '129.0', '1.0')")
    refused(path, str(out.run_id), "question")
    with pytest.raises(CheckpointError, match=r"\(question\): the column differs from the sealed one"):
        refund_agent(SqliteStore(path, key=KEY)).resume_run(
            str(out.run_id), check_in_approved(request=out.check_in, by="alice")
        )
    assert REFUNDS == []


def test_a_nulled_checkpoint_is_refused_and_no_stage_runs_again(tmp_path: Path) -> None:
    """Setting ``checkpoint`` to NULL (which restarted the run and re-ran a stage body) is refused."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    edit(path, "UPDATE runs SET checkpoint = NULL")
    refused(path, str(out.run_id), "checkpoint")
    edit(path, "UPDATE runs SET status = 'running'")  # as an answered run whose checkpoint was taken
    refused(path, str(out.run_id), "status")


def test_deleting_trailing_commits_is_refused_with_the_counts(tmp_path: Path) -> None:
    """Deleting the last commits and lowering ``next_seq`` went unnoticed; now the commit table
    is refused, saying how many rows were sealed and how many are there."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT COUNT(*) FROM commits").fetchone()
        db.execute("DELETE FROM commits WHERE seq >= ?", (count - 2,))
        db.execute("UPDATE runs SET next_seq = ?", (count - 2,))
    error = refused(path, str(out.run_id), "next_seq")
    assert error.column == "next_seq"
    edit(path, "UPDATE runs SET next_seq = ?", count)
    refused(path, str(out.run_id), "commits")
    with pytest.raises(StoredRowError, match=rf"\(commits\): its rows differ from the sealed ones \({count} sealed, "):
        SqliteStore(path, key=KEY).get(str(out.run_id))


@pytest.mark.parametrize(
    ("sql", "column"),
    [
        ('UPDATE runs SET redaction = \'{"keys":[],"patterns":[],"fields":{}}\'', "redaction"),
        ("UPDATE segments SET narrative = '[\"Stage 1: nothing happened.\"]'", "segments"),
        ("UPDATE charts SET spec = replace(spec, 'call-llm', 'call-LLM')", "chart"),
        ("UPDATE runs SET output = '\"done\"'", "output"),
        ("UPDATE runs SET error = 'none'", "error"),
        ("UPDATE answers SET answered_by = 'mallory'", "answers"),
    ],
)
def test_an_edited_redaction_segment_chart_or_output_is_refused_by_name(tmp_path: Path, sql: str, column: str) -> None:
    """The columns a reader trusts — the rule, the narrative, the chart, the outcome, who answered
    — are sealed with the rest (they were read unchecked)."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    if column == "answers":
        SqliteStore(path, key=KEY).answer(str(out.run_id), "r-1", {"approved": True}, by="alice")
    edit(path, sql)
    refused(path, str(out.run_id), column)


def test_a_row_moved_from_another_run_is_refused(tmp_path: Path) -> None:
    """Run B's commit rows moved under run A (both signed by the same key) do not verify."""
    path = tmp_path / "runs.db"
    first, second = paused_run(path), paused_run(path)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM commits WHERE run_id = ?", (first.run_id,))
        db.execute("UPDATE commits SET run_id = ? WHERE run_id = ?", (first.run_id, second.run_id))
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run '{first.run_id}' \(commit 0\): the signature"):
        SqliteStore(path, key=KEY).get(str(first.run_id))


def test_a_removed_or_forged_seal_is_refused(tmp_path: Path) -> None:
    """Without the key no one can make a seal: a NULL or rewritten seal is refused by name."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT seal FROM runs").fetchone()
    forged = json.loads(text)
    forged["parts"]["question"] = "0" * 64
    edit(path, "UPDATE runs SET seal = ?", json.dumps(forged))
    refused(path, str(out.run_id), "seal")
    edit(path, "UPDATE runs SET seal = NULL")
    error = refused(path, str(out.run_id), "seal")
    assert "the run has no seal" in str(error)


def test_the_owner_runs_as_before_and_the_decision_carries_the_head(tmp_path: Path) -> None:
    """Sealing changes nothing for the key's owner: the run resumes and finishes once; ``verify``
    gives the head, which changes with every write; the human decision records the head of the
    run as the person saw it."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    store = SqliteStore(path, key=KEY)
    head = store.verify(str(out.run_id))
    assert len(head) == 64 and head == store.verify(str(out.run_id))
    final = refund_agent(store).resume_run(str(out.run_id), check_in_approved(request=out.check_in, by="alice"))
    assert final == "Done: refunded 129.00 on A-1" and len(REFUNDS) == 1
    after = store.verify(str(out.run_id))
    assert after != head
    (decision,) = replay(store.get(str(out.run_id)).commit_log)["human_decisions"]
    assert decision["by"] == "alice" and decision["store_head"] == head


def test_every_store_gives_a_head_that_moves_with_the_run(make_store: Callable[[], RunStore]) -> None:
    """``verify`` on memory, SQLite and PostgreSQL: the same run gives the same head until it moves."""
    store = make_store()
    out = refund_agent(store).run("refund order A-1 150")
    assert isinstance(out, Paused) and out.run_id
    head = store.verify(out.run_id)
    assert head == make_store().verify(out.run_id)
    refund_agent(store).resume_run(out.run_id, check_in_approved(request=out.check_in, by="a"))
    assert store.verify(out.run_id) != head


def test_opening_an_older_signed_database_with_its_key_seals_its_runs(tmp_path: Path) -> None:
    """A database from before seals (schema 6) opened with its key is sealed as it is, and then
    read and written as any other."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    with sqlite3.connect(path) as db:
        db.execute("ALTER TABLE runs DROP COLUMN seal")
        db.execute("DROP INDEX runs_by_status_update")  # and what schema 8 added
        db.execute("DROP INDEX runs_by_update")
        db.execute("DELETE FROM schema_version WHERE version >= 7")
    store = SqliteStore(path, key=KEY)
    assert store.schema_version() == SCHEMA_VERSION
    assert store.get(str(out.run_id)).status == "paused"
    assert len(store.verify(str(out.run_id))) == 64


def test_a_write_after_an_edit_never_seals_the_edit(tmp_path: Path) -> None:
    """A write extends the seal from the sealed digests, not from the rows as found: a segment
    edited behind the store and then written after (the person answers) is still refused by name,
    by that write and by every read after it; a deleted commit is refused before the write lands."""
    path = tmp_path / "runs.db"
    out = paused_run(path)
    edit(path, "UPDATE segments SET narrative = '[\"Stage 1: nothing happened.\"]'")
    store = SqliteStore(path, key=KEY)
    with pytest.raises(StoredRowError, match=r"\(segments\): its rows differ from the sealed ones"):
        store.answer(str(out.run_id), "r-1", {"approved": True}, by="alice")
    refused(path, str(out.run_id), "segments")

    path = tmp_path / "other.db"
    out = paused_run(path)
    with sqlite3.connect(path) as db:
        (count,) = db.execute("SELECT COUNT(*) FROM commits").fetchone()
        db.execute("DELETE FROM commits WHERE seq = 0")
    with pytest.raises(StoredRowError, match=rf"\(commits\): its rows differ from the sealed ones \({count} sealed, "):
        SqliteStore(path, key=KEY).answer(str(out.run_id), "r-1", {"approved": True}, by="alice")
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT COUNT(*) FROM answers").fetchone() == (0,)
