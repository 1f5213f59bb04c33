"""Charts recording into a store: ``chart.run(..., store=)`` and ``chart.resume_run``."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from charts import approval_chart, failing_chart

from flowchart import CheckpointError, narrative, replay
from flowchart.store import AlreadyAnsweredError, RunStore, StoreError
from flowchart.store.runs import advance_chart


def test_a_run_that_pauses_is_recorded_and_resumes_from_another_view(make_store: Callable[[], RunStore]) -> None:
    """run(store=) records the pause; resume_run on a fresh store view finishes it; the log is whole."""
    chart = approval_chart()
    paused = chart.run({"amount": 7}, store=make_store(), recorders=[narrative()])
    assert paused.paused and make_store().get(paused.run_id).question == {"question": "approve 7?"}
    done = approval_chart().resume_run(paused.run_id, {"ok": True}, store=make_store(), recorders=[narrative()])
    assert done.run_id == paused.run_id and done.output == "approved"
    record = make_store().get(paused.run_id)
    assert record.status == "done" and record.output == "approved"
    assert [c.stage_id for c in record.commit_log] == ["intake", "approve", "approve", "finish"]
    assert replay(record.commit_log) == done.state
    assert record.narrative[0] == paused.recorders[0].lines()[0]
    assert record.narrative[-len(done.recorders[0].lines()) :] == tuple(done.recorders[0].lines())


def test_a_pause_is_answered_once(store: RunStore) -> None:
    """A second answer to the same pause is refused: recorded-but-not-applied or already applied."""
    chart = approval_chart()
    run_id = chart.run(store=store).run_id
    store.answer(run_id, "pause@2", {"ok": False})
    with pytest.raises(AlreadyAnsweredError, match="request 'pause@2' has already been answered"):
        chart.resume_run(run_id, {"ok": True}, store=store)
    advance_chart(chart, store, run_id)
    with pytest.raises(StoreError, match="is done, not paused: there is no pause to answer"):
        chart.resume_run(run_id, {"ok": True}, store=store)
    assert store.get(run_id).output == "declined"


def test_a_finished_run_records_its_output(store: RunStore) -> None:
    """A run without pauses is recorded done with its output, under the id given."""
    from flowchart import flow_chart

    chart = flow_chart("One", lambda scope: "hello", "one").build()
    result = chart.run(store=store, run_id="fixed-id")
    assert result.run_id == "fixed-id"
    record = store.get("fixed-id")
    assert (record.status, record.output, len(record.commit_log)) == ("done", "hello", 1)


def test_a_failing_stage_fails_the_run_and_reraises(store: RunStore) -> None:
    """The stage's own error propagates unchanged and the run is recorded failed with it."""
    with pytest.raises(RuntimeError, match="the ledger is closed"):
        failing_chart().run(store=store, run_id="f")
    record = store.get("f")
    assert record.status == "failed" and record.error == "RuntimeError: the ledger is closed"


def test_another_chart_cannot_resume_a_stored_run(store: RunStore) -> None:
    """resume_run on a chart with another fingerprint is refused before the answer is recorded."""
    run_id = approval_chart().run(store=store).run_id
    with pytest.raises(CheckpointError, match=f"run '{run_id}' belongs to another chart"):
        failing_chart().resume_run(run_id, {"ok": True}, store=store)
    assert store.get(run_id).answered == frozenset()


def test_an_answered_run_whose_resume_died_is_finished_by_the_next_advance(store: RunStore) -> None:
    """The answer is recorded before the resume runs; advancing again applies it (no re-answer)."""
    chart = approval_chart()
    run_id = chart.run(store=store).run_id
    store.answer(run_id, store.get(run_id).pause_answer_id(), {"ok": True})  # then the process "died"
    assert advance_chart(chart, store, run_id).output == "approved"
    with pytest.raises(StoreError, match=f"run '{run_id}' is done: there is nothing to advance"):
        advance_chart(chart, store, run_id)


def test_resume_input_must_be_json_safe(store: RunStore) -> None:
    """A resume input that is not JSON-safe is refused before anything is recorded."""
    chart = approval_chart()
    run_id = chart.run(store=store).run_id
    with pytest.raises(TypeError, match="resume input is not JSON-safe"):
        chart.resume_run(run_id, {"ok": object()}, store=store)
    assert store.get(run_id).status == "paused"
