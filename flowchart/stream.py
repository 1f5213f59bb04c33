"""Streaming a chart run: ``chart.stream()`` / ``chart.astream()`` (drivers: ``stream_drivers``).

Laws:
- A stream yields the events its tap (``stream_tap``) built from the recorder hooks, in
  hook order, and then exactly one ``final`` event whose ``result`` is what ``run()``
  returns. A run that raises yields its events (the ``error`` one included), then the
  iteration raises the run's own error, unchanged.
- A stream is as live as the run's waits: a run that never awaits (no async stage) runs
  to its end at the first ``next()``; a run that awaits (a model call, I/O) hands each
  event to the consumer while it waits. No thread is used unless the calling thread
  already runs an event loop (a notebook, an ASGI handler calling the sync API), where
  the run gets its own loop in a helper thread, as ``chart.run()`` does there.
- Leaving the loop early (``break``, ``close()``, leaving a ``with`` block, dropping the
  iterator) cancels the run: the stage in progress commits what it wrote (as on a
  timeout), no later stage starts, ``stream.cancelled`` records where it stopped and
  which commits were made, and a stored run is marked failed with
  ``RunCancelledError: the run was cancelled by the stream's consumer ...``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.options import RunOptions
from flowchart._engine.entry import _run_input, run_sync, start_run
from flowchart._stream.stream_drivers import AsyncRunStream, RunStream
from flowchart._stream.stream_plan import CANCEL_REASON, Cancelled, RunCancelledError, StreamPlan
from flowchart._stream.stream_tap import StreamTap
from flowchart.recorders.narrative import narrative
from flowchart.store.protocol import Segment
from flowchart.store.runs import aadvance, new_run_id, remember_store, run_chart, told
from flowchart.stream_events import CHART_KINDS, CHART_MODES, Final, StreamEvent, resolve_modes

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart

__all__ = [
    "CANCEL_REASON",
    "AsyncRunStream",
    "Cancelled",
    "RunCancelledError",
    "RunStream",
    "StreamPlan",
    "chart_plan",
    "final_event",
    "mark_cancelled",
]


def chart_plan(chart: FlowChart, input: Any, modes: Any, options: RunOptions) -> StreamPlan:
    """The plan of ``chart.stream(input, modes=...)`` run with ``options`` (a stored run when ``options.store``)."""
    kinds = resolve_modes(modes, CHART_MODES, CHART_KINDS)
    store = options.store
    if store is not None:
        options = options.but(run_id=options.run_id or new_run_id())
    run_id = options.run_id

    def make_tap(sink: Callable[[StreamEvent], None]) -> StreamTap:
        return StreamTap(sink, kinds, narrative=narrative() if "narrative" in kinds else None)

    def tapped(tap: StreamTap) -> RunOptions:
        return options.but(recorders=(*options.recorders, tap))

    if store is not None:

        def run(tap: StreamTap) -> Any:
            return run_chart(chart, input, tapped(tap))

        async def arun(tap: StreamTap) -> Any:
            return await astart_stored(chart, input, tapped(tap))

    else:

        def run(tap: StreamTap) -> Any:
            return run_sync(chart, input, tapped(tap))

        async def arun(tap: StreamTap) -> Any:
            return await start_run(chart, input, tapped(tap), concurrent=True)

    def on_cancel(record: Cancelled) -> None:
        if store is not None and run_id is not None:
            mark_cancelled(store, run_id, record)

    needs_loop = chart.needs_loop or options.timeout is not None
    return StreamPlan(make_tap, arun, run, needs_loop, final_event, on_cancel)


def final_event(result: Any, _tap: StreamTap) -> Final:
    """The closing event of a chart stream, carrying the ``RunResult`` (it is about no one stage)."""
    return Final(None, result)


def mark_cancelled(store: Any, run_id: str, record: Cancelled) -> None:
    """Record a stored run as cancelled by its consumer: failed, with the commits it made, its
    narrative so far and the failure (``RunCancelledError``, the stage it stopped in)."""
    current = store.get(run_id)
    if current.status != "running":
        return
    segment = Segment(
        current.next_seq,
        "failed",
        record.commit_log,
        error=record.message,
        narrative=record.narrative,
        failure=record.failure,
        records=record.records,
    )
    store.commit(run_id, segment)


async def astart_stored(chart: FlowChart, input: Any, options: RunOptions) -> Any:
    """``chart.run(input, store=options.store, run_id=options.run_id)`` inside the caller's event loop."""
    store, run_id = options.store, options.run_id
    assert store is not None and run_id is not None, "a stored stream has a store and a run id"
    run_input = _run_input(input)
    store.create(
        run_id,
        kind="chart",
        chart_fingerprint=chart.fingerprint,
        input=run_input,
        chart_spec=chart.spec,
        redaction=options.redaction,
    )
    remember_store(run_id, store)

    async def step(record: Any) -> Any:
        result = await start_run(chart, record.input, told(options), concurrent=True)
        return attrs.evolve(result, run_id=run_id)

    return await aadvance(store, run_id, chart.fingerprint, step)
