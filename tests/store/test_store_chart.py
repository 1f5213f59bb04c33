"""Charts recording into a store: ``chart.run(..., store=)`` and ``chart.resume_run``."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest
from charts import approval_chart, failing_chart

from flowchart import CheckpointError, RunError, narrative, replay
from flowchart.store import AlreadyAnsweredError, MemoryStore, RunNotFoundError, RunStore, StoreError
from flowchart.store.runs import advance_chart, store_of


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
    pause_id = store.get(run_id).pause_answer_id()
    assert pause_id == "pause@2.2"
    store.answer(run_id, pause_id, {"ok": False})
    with pytest.raises(AlreadyAnsweredError, match=r"request 'pause@2\.2' has already been answered"):
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


def test_resume_run_without_store_finds_the_store_the_run_was_recorded_in() -> None:
    """Two runs of ONE chart in two stores each resume from their own store, with no ``store=``:
    the memory is per run id (``store_of``), not one slot on the chart."""
    chart = approval_chart()
    first_store, second_store = MemoryStore(), MemoryStore()
    first = chart.run({"amount": 1}, store=first_store)
    second = chart.run({"amount": 2}, store=second_store)
    assert chart.resume_run(first.run_id, {"ok": True}).output == "approved"
    assert chart.resume_run(second.run_id, {"ok": False}).output == "declined"
    assert first_store.get(first.run_id).status == "done" and second_store.get(second.run_id).status == "done"
    assert store_of(first.run_id) is first_store and store_of(second.run_id) is second_store
    with pytest.raises(RunNotFoundError, match=r"^no run '\w+' in run store memory$"):
        second_store.get(first.run_id)


def test_a_built_chart_keeps_no_store() -> None:
    """Running with ``store=`` leaves the chart as it was: nothing about the store is kept on it."""
    chart, store = approval_chart(), MemoryStore()
    chart.run(store=store)
    assert not hasattr(chart, "_store") and all(value is not store for value in vars(chart).values())


def test_resume_run_of_an_unknown_run_without_store_names_the_fix() -> None:
    """With no ``store=`` and no run of that id recorded in this process, the error says what to pass."""
    with pytest.raises(RunError, match=r"^resume_run\('nowhere'\): no run store — pass store=\.\.\. "):
        approval_chart().resume_run("nowhere", {"ok": True})


def test_the_store_memory_forgets_a_dropped_store() -> None:
    """The run-id memory holds stores weakly: a store no one keeps is not kept alive by it."""
    store = MemoryStore()
    run_id = approval_chart().run(store=store).run_id
    assert store_of(run_id) is store
    del store
    gc.collect()
    assert store_of(run_id) is None


def test_a_stored_run_keeps_its_story_without_a_narrative_recorder(store: RunStore) -> None:
    """A stored chart run records its narrative by default, across segments and processes: no
    ``narrative()`` passed to the run nor to the resume, and the done run's story goes on past its
    pause (it was empty, or ended at "Execution paused at Approve." on a done run)."""
    paused = approval_chart().run({"amount": 3}, store=store)
    assert store.get(paused.run_id).narrative[-1] == "Execution paused at Approve."
    approval_chart().resume_run(paused.run_id, {"ok": True}, store=store)
    told = store.get(paused.run_id).narrative
    assert told[0] == "Stage 1: The process began with Intake."
    assert "Execution resumed at Approve with input." in told
    assert told[-1].startswith("Step ") and any(line.endswith("moved on to Finish.") for line in told)


def test_a_stored_run_keeps_the_callers_narrative_when_it_brings_one(store: RunStore) -> None:
    """A caller's own narrative recorder is the one stored (the store adds none beside it)."""
    mine = narrative(include_values=False)
    done = approval_chart().run({"amount": 3}, store=store, recorders=[mine])
    assert store.get(done.run_id).narrative == tuple(mine.lines())
    assert [r for r in done.recorders if callable(getattr(r, "records", None))] == [mine]
