"""The RunStore contract, run on every backend (memory, SQLite, PostgreSQL).

Each test says one behaviour the store promises; ``make_store()`` opens another view of
the same database (as another process would), so durability is tested too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from charts import approval_chart

from flowchart import replay
from flowchart.store import (
    AlreadyAnsweredError,
    CommitConflictError,
    RunExistsError,
    RunNotFoundError,
    RunStore,
    Segment,
    StoreError,
)
from flowchart.store.runs import segment_of

CHART = approval_chart()


def _create(store: RunStore, run_id: str = "r1", **input: Any) -> None:
    store.create(run_id, kind="chart", chart_fingerprint=CHART.fingerprint, input=input, chart_spec=CHART.spec)


def _paused_segment(amount: int = 10) -> Segment:
    return segment_of(CHART.run({"amount": amount}), 0)


def test_a_created_run_is_running_with_its_input_and_no_commits(store: RunStore) -> None:
    """create records a running run: input, fingerprint, chart spec, timestamps, empty log."""
    record = store.create(
        "r1", kind="chart", chart_fingerprint=CHART.fingerprint, input={"amount": 3}, chart_spec=CHART.spec
    )
    assert (record.run_id, record.status, record.kind, record.input) == ("r1", "running", "chart", {"amount": 3})
    assert record.commit_log == () and record.checkpoint is None and record.question is None
    assert record.chart_spec == CHART.spec and record.next_seq == 0 and record.next_step == "start"
    assert record.created_at == record.updated_at > 0


def test_a_run_id_is_taken_once(store: RunStore) -> None:
    """A second create with the same id is refused."""
    _create(store)
    with pytest.raises(RunExistsError, match="run 'r1' already exists"):
        _create(store)


def test_an_unknown_run_is_a_clear_key_error(store: RunStore) -> None:
    """get of an unknown id raises RunNotFoundError (a KeyError) naming the run."""
    with pytest.raises(RunNotFoundError, match="no run 'nope'"):
        store.get("nope")
    with pytest.raises(KeyError, match=r"^no run 'nope' in run store "):
        store.get("nope")


def test_a_paused_segment_lands_with_its_checkpoint_and_question(make_store: Callable[[], RunStore]) -> None:
    """commit stores the commits, the checkpoint and the question; another view reads them back."""
    writer = make_store()
    _create(writer)
    segment = _paused_segment(amount=42)
    writer.commit("r1", segment)
    record = make_store().get("r1")
    assert record.status == "paused" and record.next_step == "wait"
    assert [c.stage_id for c in record.commit_log] == ["intake", "approve"]
    assert record.checkpoint == segment.checkpoint
    assert record.question == {"question": "approve 42?"}
    assert record.output is None and record.error is None


def test_a_segment_for_a_moved_on_run_lands_nothing(store: RunStore) -> None:
    """A segment whose start seq is stale, or for a run that is not running, is refused whole."""
    _create(store)
    store.commit("r1", _paused_segment())
    with pytest.raises(CommitConflictError, match=r"run 'r1' moved on \(status paused, next seq 2\)"):
        store.commit("r1", _paused_segment())
    record = store.get("r1")
    assert len(record.commit_log) == 2 and record.status == "paused"


def test_an_answer_is_recorded_once_and_makes_the_run_running(make_store: Callable[[], RunStore]) -> None:
    """answer records the id and the value, clears the question; a second answer fails in any view."""
    first = make_store()
    _create(first)
    first.commit("r1", _paused_segment())
    record = first.answer("r1", "req-1", {"ok": True}, by="alice")
    assert (record.status, record.has_answer, record.answer, record.question) == ("running", True, {"ok": True}, None)
    assert record.answered == frozenset({"req-1"}) and record.next_step == "resume"
    with pytest.raises(AlreadyAnsweredError, match="request 'req-1' has already been answered"):
        make_store().answer("r1", "req-1", {"ok": False}, by="bob")
    assert make_store().get("r1").answer == {"ok": True}


def test_a_run_that_is_not_paused_cannot_be_answered(store: RunStore) -> None:
    """Answering a running run is refused and records nothing."""
    _create(store)
    with pytest.raises(StoreError, match="run 'r1' is running, not paused"):
        store.answer("r1", "req-1", True)
    assert store.get("r1").answered == frozenset()


def test_a_resumed_segment_continues_the_seq_and_the_log_replays(store: RunStore) -> None:
    """After the answer, the resume's commits continue at next_seq; the whole log folds to the state."""
    _create(store)
    paused = CHART.run({"amount": 5})
    store.commit("r1", segment_of(paused, 0))
    store.answer("r1", "pause@2", {"ok": True})
    assert paused.checkpoint is not None
    done = CHART.resume(paused.checkpoint, {"ok": True})
    record = store.commit("r1", segment_of(done, 2))
    assert record.status == "done" and record.output == "approved" and record.checkpoint is None
    assert [c.idx for c in record.commit_log] == [0, 1, 2, 3]
    assert replay(record.commit_log) == done.state
    assert not record.has_answer and record.answer is None


def test_a_failed_segment_keeps_the_error(store: RunStore) -> None:
    """A failed segment sets status failed and the error text."""
    _create(store)
    record = store.commit("r1", Segment(0, "failed", error="RuntimeError: boom"))
    assert (record.status, record.error, record.next_step) == ("failed", "RuntimeError: boom", "finished")
    with pytest.raises(
        CommitConflictError,
        match=r"^run 'r1' moved on \(status \w+, next seq \d+\) before this segment "
        r"\(from seq 0\) could commit: another writer advanced it$",
    ):
        store.commit("r1", Segment(0, "done"))


def test_list_filters_by_status_newest_first(store: RunStore) -> None:
    """list(status=...) returns matching runs, most recently updated first; limit caps it."""
    for rid in ("a", "b", "c"):
        _create(store, rid)
    store.commit("a", _paused_segment())
    store.commit("c", _paused_segment())
    assert [r.run_id for r in store.list(status="paused")] == ["c", "a"]
    assert next(r.run_id for r in store.list()) == "c"
    assert len(store.list(limit=2)) == 2
    assert [r.run_id for r in store.list(status="running")] == ["b"]
    with pytest.raises(ValueError, match="unknown run status 'stuck'"):
        store.list(status="stuck")


def test_narrative_lines_accumulate_across_segments(store: RunStore) -> None:
    """Each segment's narrative is appended to the run's narrative."""
    _create(store)
    store.commit("r1", Segment(0, "paused", narrative=("one", "two")))
    store.answer("r1", "x", None)
    store.commit("r1", Segment(0, "done", narrative=("three",)))
    assert store.get("r1").narrative == ("one", "two", "three")


def test_racing_writers_of_one_segment_commit_exactly_once(make_store: Callable[[], RunStore]) -> None:
    """Eight writers (own connections) commit the same segment at once: one wins, seven conflict."""
    _create(make_store())
    segment = _paused_segment()
    stores = [make_store() for _ in range(8)]
    outcomes: list[str] = []
    barrier = threading.Barrier(len(stores))

    def write(store: RunStore) -> None:
        barrier.wait()
        try:
            store.commit("r1", segment)
            outcomes.append("won")
        except CommitConflictError:
            outcomes.append("lost")

    threads = [threading.Thread(target=write, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 7 + ["won"]
    assert len(make_store().get("r1").commit_log) == 2


def test_racing_answers_to_one_pause_are_accepted_once(make_store: Callable[[], RunStore]) -> None:
    """Eight answers to the same request at once: exactly one is recorded."""
    first = make_store()
    _create(first)
    first.commit("r1", _paused_segment())
    stores = [make_store() for _ in range(8)]
    outcomes: list[str] = []
    barrier = threading.Barrier(len(stores))

    def answer(n: int, store: RunStore) -> None:
        barrier.wait()
        try:
            store.answer("r1", "req", {"by": n}, by=f"user{n}")
            outcomes.append("accepted")
        except AlreadyAnsweredError:
            outcomes.append("refused")

    threads = [threading.Thread(target=answer, args=(n, s)) for n, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["accepted"] + ["refused"] * 7
    assert make_store().get("r1").answered == frozenset({"req"})


def test_stored_records_cannot_be_mutated_through_a_read(store: RunStore) -> None:
    """Changing a record's input dict does not change the stored run."""
    _create(store, amount=1)
    store.get("r1").input["amount"] = 99
    assert store.get("r1").input == {"amount": 1}
