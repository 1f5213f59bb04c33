"""Leaving a stream early cancels the run: the stage in progress commits what it wrote,
no later stage runs, and the record (the stream's, a stored run's) says so."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from flowchart import FlowChart, flow_chart
from flowchart.store import MemoryStore, SqliteStore

RAN: list[str] = []


def _first(scope: Any) -> None:
    RAN.append("first")
    scope.a = 1


async def _waits_forever(scope: Any) -> None:
    RAN.append("waits")
    scope.b = 2
    await asyncio.Event().wait()  # a model call that never answers


def _never(scope: Any) -> None:
    RAN.append("never")
    scope.c = 3


def waiting_chart() -> FlowChart:
    """first → waits (awaits forever) → never."""
    return (
        flow_chart("First", _first, "first")
        .add_function("Waits", _waits_forever, "waits")
        .add_function("Never", _never, "never")
        .build()
    )


@pytest.fixture(autouse=True)
def _fresh() -> None:
    RAN.clear()


def test_breaking_out_cancels_the_run_and_the_stage_in_progress_commits() -> None:
    """Break after the first commit: the waiting stage's partial write commits, the next stage
    never runs, and ``stream.cancelled`` records where it stopped and the commits made."""
    stream = waiting_chart().stream(modes="updates")
    for event in stream:
        if event.kind == "commit":
            break
    stream.close()
    assert RAN == ["first", "waits"]
    record = stream.cancelled
    assert record is not None
    assert record.stage == "waits#1"
    assert [c.stage_id for c in record.commit_log] == ["first", "waits"]
    assert [op.to_dict() for op in record.commit_log[1].trace] == [{"path": ["b"], "verb": "set", "value": 2}]
    assert record.message == (
        "RunCancelledError: the run was cancelled by the stream's consumer during stage 'waits#1'"
    )


def test_dropping_the_iterator_cancels_as_closing_does() -> None:
    """A ``for`` loop over ``chart.stream()`` that breaks drops the stream: the run is cancelled
    at once all the same (the stored run is already marked when the loop is left)."""
    store = MemoryStore()
    for event in waiting_chart().stream(store=store, run_id="r-drop", modes="updates"):
        if event.kind == "commit":
            break
    assert store.get("r-drop").status == "failed"
    assert RAN == ["first", "waits"]


def test_a_with_block_cancels_on_exit() -> None:
    """Leaving ``with chart.stream(...) as events`` cancels a run still going."""
    with waiting_chart().stream() as events:
        first = next(iter(events))
    assert first.kind == "stage"
    assert events.cancelled is not None
    assert RAN == ["first", "waits"]


def test_a_stored_run_cancelled_by_its_consumer_is_marked_failed_with_its_commits(tmp_path: Path) -> None:
    """With a store, the cancelled run is recorded failed, its error naming the consumer's
    cancellation, with the commits it made (the partial one included)."""
    store = SqliteStore(tmp_path / "runs.db")
    stream = waiting_chart().stream(store=store, run_id="r-cancel", modes="updates")
    for event in stream:
        if event.kind == "commit":
            break
    stream.close()
    record = SqliteStore(tmp_path / "runs.db").get("r-cancel")  # another process's view
    assert record.status == "failed"
    assert record.error == "RunCancelledError: the run was cancelled by the stream's consumer during stage 'waits#1'"
    assert [c.stage_id for c in record.commit_log] == ["first", "waits"]
    assert record.failure is not None
    assert (record.failure.error_type, record.failure.stage_id, record.failure.runtime_stage_id) == (
        "RunCancelledError",
        "waits",
        "waits#1",
    )


def test_a_stored_run_streamed_to_its_end_is_done() -> None:
    """A stored stream read to the end leaves the run done with its output, as run(store=) does."""
    store = MemoryStore()
    chart = flow_chart("First", _first, "first").add_function("Never", _never, "never").build()
    events = list(chart.stream(store=store, run_id="r-done"))
    assert events[-1].result.run_id == "r-done"
    record = store.get("r-done")
    assert record.status == "done"
    assert [c.stage_id for c in record.commit_log] == ["first", "never"]


def test_aclose_cancels_an_async_stream_and_waits_for_the_record() -> None:
    """``async for`` ... ``break`` then ``aclose()``: the run is cancelled on the caller's loop and
    the record is there when aclose returns; a stored run is marked."""
    store = MemoryStore()

    async def consume() -> Any:
        stream = waiting_chart().astream(store=store, run_id="r-async", modes="updates")
        async for event in stream:
            if event.kind == "commit":
                break
        await stream.aclose()
        return stream

    stream = asyncio.run(consume())
    assert RAN == ["first", "waits"]
    assert stream.cancelled is not None and stream.cancelled.stage == "waits#1"
    assert store.get("r-async").status == "failed"


def test_a_stream_inside_a_running_loop_cancels_before_the_next_stage() -> None:
    """The sync stream used inside a running loop (its run in a helper thread) is cancelled by
    ``close()``: the waiting stage commits, the next never runs."""

    async def inside() -> Any:
        stream = waiting_chart().stream(modes="updates")
        for event in stream:
            if event.kind == "commit":
                break
        stream.close()
        return stream

    stream = asyncio.run(inside())
    assert RAN == ["first", "waits"]
    assert stream.cancelled is not None
    assert [c.stage_id for c in stream.cancelled.commit_log] == ["first", "waits"]


def test_a_stream_read_to_the_end_has_no_cancellation_record() -> None:
    """A stream consumed to its final event is not cancelled (closing it afterwards changes nothing)."""
    chart = flow_chart("First", _first, "first").build()
    stream = chart.stream()
    list(stream)
    stream.close()
    assert stream.cancelled is None
    assert stream.result.state == {"a": 1}
