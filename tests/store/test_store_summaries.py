"""``store.summaries(status=, limit=, after=)``: the list a person scans, read from each run's
``runs`` row alone — the same runs, order and cursors as ``store.list``, the question typed as
``RunRecord.question`` is, an unreadable row set aside by name, and on a keyed store a column
edited behind the store refused before it is shown. SQLite's own trace callback shows that the
listing never reads a commit, a segment or a checkpoint, and that its query runs on an index.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from charts import approval_chart
from chat_agent import chat_agent
from hypothesis import given, settings
from hypothesis import strategies as st
from old_schema import insert_old_run, schema_database
from refund_agent import REFUNDS, refund_agent

from agent import Paused
from flowchart import Redaction
from flowchart.store import RunStore, RunSummary, SqliteStore, StoredRowError, SummaryList
from flowchart.store.summaries import SUMMARY_COLUMNS, read_summary, summaries
from governance import CheckInRequest

KEY = b"q" * 32


@pytest.fixture(autouse=True)
def _clear_refunds() -> None:
    REFUNDS.clear()


def _fill(store: RunStore) -> Paused:
    """Three paused chart runs, a conversation of two turns, a paused refund."""
    for n in range(3):
        approval_chart().run({"amount": n}, store=store, run_id=f"p{n}")
    agent = chat_agent(store)
    for text in ("one", "two"):
        agent.run(text, conversation="c")
    out = refund_agent(store).run("refund order A-1 129.0")
    assert isinstance(out, Paused)
    return out


def _pages(store: RunStore, **options: Any) -> list[list[str]]:
    pages, after = [], None
    while True:
        page = store.summaries(limit=2, after=after, **options)  # type: ignore[attr-defined]
        assert isinstance(page, SummaryList) and page.unreadable == ()
        pages.append([s.run_id for s in page])
        after = page.next
        if after is None:
            return pages


def test_summaries_list_what_list_lists_each_as_its_record_says(store: RunStore) -> None:
    """Every store: the summaries are the runs ``list`` gives, in its order, each with the
    record's status, kind, typed question, input, times and conversation turn."""
    paused = _fill(store)
    records = store.list()
    listed = store.summaries()  # type: ignore[attr-defined]
    assert [s.run_id for s in listed] == [r.run_id for r in records] and listed.next is None
    for summary, record in zip(listed, records, strict=True):
        assert isinstance(summary, RunSummary)
        assert (summary.status, summary.kind, summary.question, summary.input) == (
            record.status,
            record.kind,
            record.question,
            record.input,
        )
        assert (summary.created_at, summary.updated_at) == (record.created_at, record.updated_at)
        assert (summary.conversation_id, summary.turn, summary.redaction) == (
            record.conversation_id,
            record.turn,
            record.redaction,
        )
    refund = next(s for s in listed if s.run_id == paused.run_id)
    assert isinstance(refund.question, CheckInRequest) and refund.question.id == paused.check_in.id
    assert refund.question.args == {"order_id": "A-1", "amount": 129.0}


def test_summaries_page_by_status_and_conversation_with_list_s_cursors(store: RunStore) -> None:
    """Pages of two list every run once; a status filter and a conversation page alike; a cursor
    of ``list`` continues ``summaries`` and the other way round; a cursor that is none is refused."""
    _fill(store)
    whole = [r.run_id for r in store.list()]
    assert [run for page in _pages(store) for run in page] == whole
    assert [run for page in _pages(store, status="paused") for run in page] == [r.run_id for r in store.list("paused")]
    assert [[store.get(run).turn for run in page] for page in _pages(store, conversation="c")] == [[2, 1], []]
    first = store.list(limit=2)
    assert [s.run_id for s in store.summaries(after=first.next)] == whole[2:]  # type: ignore[attr-defined]
    cursor = store.summaries(limit=3).next  # type: ignore[attr-defined]
    assert [r.run_id for r in store.list(after=cursor)] == whole[3:]
    with pytest.raises(ValueError, match=r"^list\(after='nonsense'\): not a cursor of this listing"):
        store.summaries(after="nonsense")  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match=r"unknown run status 'asleep'"):
        store.summaries("asleep")  # type: ignore[attr-defined]


def test_a_store_without_summaries_is_listed_from_its_records() -> None:
    """``summaries(store)`` answers for a store that only has ``list`` (a third-party store), from
    its records: the same runs, order and cursor."""
    from flowchart.store import MemoryStore

    class ListOnly:
        def __init__(self) -> None:
            self.inner = MemoryStore()

        def list(self, *args: Any, **kwargs: Any) -> Any:
            return self.inner.list(*args, **kwargs)

    store = ListOnly()
    for n in range(3):
        approval_chart().run({"amount": n}, store=store.inner, run_id=f"p{n}")
    page = summaries(store, "paused", limit=2)
    assert [s.run_id for s in page] == [r.run_id for r in store.inner.list("paused", limit=2)]
    assert page.next == store.inner.list("paused", limit=2).next
    assert page[0].question == {"question": "approve 2?"}


def test_a_summary_shows_its_input_under_the_run_s_rule(tmp_path: Path) -> None:
    """A run recorded under a rule keeps it: the summary's ``rule`` hides what the run hid."""
    store = SqliteStore(tmp_path / "runs.db")
    approval_chart().run({"amount": 5, "card": "4111"}, store=store, run_id="r", redaction=Redaction(keys={"card"}))
    (summary,) = store.summaries()
    assert summary.rule == Redaction(keys={"card"})
    assert summary.rule.scrub_state(summary.input) == {"amount": 5, "card": "REDACTED"}


def test_an_unreadable_row_is_set_aside_by_name_and_the_rest_listed(tmp_path: Path) -> None:
    """A question column that is not JSON fails only its own run, named with the column."""
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    for n in range(2):
        approval_chart().run({"amount": n}, store=store, run_id=f"p{n}")
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET question = '{not json' WHERE run_id = 'p0'")
    page = SqliteStore(path).summaries("paused")
    assert [s.run_id for s in page] == ["p1"]
    assert [(e.run_id, e.column) for e in page.unreadable] == [("p0", "question")]
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET status = 'asleep' WHERE run_id = 'p1'")
    with pytest.raises(StoredRowError, match=r"^Invalid stored run 'p1' \(run_id/kind/status\): not a run's identity"):
        raise SqliteStore(path).summaries().unreadable[0]


class TracedStore(SqliteStore):
    """A SQLite store whose connection reports every statement it runs (``sqlite3``'s own trace
    callback)."""

    def __init__(self, path: Path, key: bytes | None = None) -> None:
        self.statements: list[str] = []
        super().__init__(path, key=key)

    def _open(self) -> Any:
        db: sqlite3.Connection = super()._open()
        db.set_trace_callback(self.statements.append)
        return db


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "keyed"])
def test_the_listing_reads_only_the_runs_row_through_its_index(tmp_path: Path, key: bytes | None) -> None:
    """The statements ``summaries`` sends: one SELECT of the runs table, no commit, segment,
    answer or chart read, no checkpoint column; its plan searches ``runs_by_status_update`` in
    the listing's order (no sort), the same with a status, without one and after a cursor."""
    path = tmp_path / "runs.db"
    writer = SqliteStore(path, key=key)
    _fill(writer)
    store = TracedStore(path, key=key)
    store.statements.clear()
    first = store.summaries("paused", limit=2)
    store.summaries("paused", limit=2, after=first.next)
    store.summaries(limit=2)
    selects = [s for s in store.statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 3
    for sql in selects:
        assert re.search(r"\bFROM runs\b", sql)
        assert not re.search(r"\b(commits|segments|answers|charts|checkpoint|output|answer)\b", sql), sql
    with sqlite3.connect(path) as db:
        for sql in selects:
            plan = " | ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert re.search(r"USING INDEX runs_by(_status)?_update\b", plan) and "TEMP B-TREE" not in plan, plan
    assert len(first) == 2 and all(isinstance(s.question, dict | CheckInRequest) for s in first)


def test_a_keyed_store_refuses_an_edited_question_or_input_in_the_list(tmp_path: Path) -> None:
    """On a signed store the question a person would scan (``amount=1.0`` where the signed call
    refunds 129.0), an edited input or a status flipped behind the store is set aside by name,
    never listed; the run's seal is the check (``sealing.check_columns``)."""
    path = tmp_path / "runs.db"
    paused = refund_agent(SqliteStore(path, key=KEY)).run("refund order A-1 129.0")
    assert isinstance(paused, Paused)
    approval_chart().run({"amount": 2}, store=SqliteStore(path, key=KEY), run_id="other")
    assert len(SqliteStore(path, key=KEY).summaries("paused")) == 2
    edits = [
        ("UPDATE runs SET question = replace(question, '129.0', '1.0') WHERE run_id = ?", "question"),
        ("UPDATE runs SET input = replace(input, 'A-1', 'A-2') WHERE run_id = ?", "input"),
        ("UPDATE runs SET created_at = created_at - 10 WHERE run_id = ?", "created_at"),
        ("UPDATE runs SET seal = NULL WHERE run_id = ?", "seal"),
    ]
    for sql, column in edits:
        with sqlite3.connect(path) as db:
            saved = db.execute(
                "SELECT question, input, created_at, seal FROM runs WHERE run_id = ?", (paused.run_id,)
            ).fetchone()
            db.execute(sql, (paused.run_id,))
        page = SqliteStore(path, key=KEY).summaries("paused")
        assert [s.run_id for s in page] == ["other"]
        (error,) = page.unreadable
        assert (error.run_id, error.column) == (paused.run_id, column)
        assert re.match(rf"^Invalid stored run '{paused.run_id}' \({column}\): ", str(error))
        with sqlite3.connect(path) as db:
            db.execute(
                "UPDATE runs SET question = ?, input = ?, created_at = ?, seal = ? WHERE run_id = ?",
                (*saved, paused.run_id),
            )
    assert len(SqliteStore(path, key=KEY).summaries("paused")) == 2
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET status = 'done' WHERE run_id = ?", (paused.run_id,))
    page = SqliteStore(path, key=KEY).summaries()
    assert [(e.run_id, e.column) for e in page.unreadable] == [(paused.run_id, "status")]
    assert REFUNDS == []


def test_a_version_7_database_gains_the_listing_indexes_and_lists_its_runs(tmp_path: Path) -> None:
    """A store written before schema 8 opens: the listing indexes are added, its runs listed."""
    path = tmp_path / "old.db"
    raw = schema_database(path, 7)
    insert_old_run(raw)
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    assert store.schema_version() >= 8  # and on to the newest
    (summary,) = store.summaries("done")
    assert (summary.run_id, summary.status, summary.question, summary.input) == ("old", "done", None, {})
    with sqlite3.connect(path) as db:
        names = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert {"runs_by_status_update", "runs_by_update"} <= names


_CELL = st.one_of(
    st.none(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(['{"a": 1}', "[1, 2]", '"x"', "null", '{"keys": ["a"]}', "{not json", '{"a": 1, "a": 2}']),
)


@settings(max_examples=300, deadline=None)
@given(
    run_id=st.one_of(st.text(min_size=1, max_size=10), st.integers(), st.none()),
    cells=st.fixed_dictionaries({name: _CELL for name in SUMMARY_COLUMNS}),
    keyed=st.booleans(),
    seal=st.one_of(st.none(), st.text(max_size=30)),
)
def test_any_stored_row_is_a_summary_or_a_stored_row_error(
    run_id: Any, cells: dict[str, Any], keyed: bool, seal: str | None
) -> None:
    """Whatever a ``runs`` row holds, reading it as a summary gives a ``RunSummary`` or a
    ``StoredRowError`` naming the run — never another exception; with a key, no seal it did not
    write passes."""
    if cells["status"] is not None and not isinstance(cells["status"], str):
        cells["status"] = "paused"  # a status cell of another type is refused the same way as a bad one
    try:
        summary = read_summary(run_id, cells, KEY if keyed else None, seal)
    except StoredRowError as exc:
        assert exc.run_id == str(run_id)
        return
    assert not keyed and isinstance(summary, RunSummary) and summary.run_id == run_id
