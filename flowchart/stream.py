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

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .stream_drivers import AsyncRunStream, RunStream
from .stream_events import CHART_KINDS, CHART_MODES, Final, StreamEvent, resolve_modes
from .stream_plan import CANCEL_REASON, Cancelled, RunCancelledError, StreamPlan
from .stream_tap import StreamTap

if TYPE_CHECKING:
    from .chart import FlowChart

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

#: the keyword options ``chart.stream()`` passes on to the run
RUN_OPTIONS = frozenset({"env", "recorders", "max_iterations", "timeout", "redaction", "retry"})


def chart_plan(
    chart: FlowChart, input: Any, modes: Any, options: Mapping[str, Any], store: Any = None, run_id: str | None = None
) -> StreamPlan:
    """The plan of ``chart.stream(input, modes=..., **options)`` (``options`` as ``run()`` takes)."""
    from .recorders.narrative import narrative

    unknown = sorted(set(options) - RUN_OPTIONS)
    if unknown:
        raise TypeError(
            f"chart.stream() got unknown run option(s) {', '.join(unknown)}: "
            f"expected {', '.join(sorted(RUN_OPTIONS))}, modes, store or run_id"
        )
    kinds = resolve_modes(modes, CHART_MODES, CHART_KINDS)
    recorders = list(options.get("recorders", ()))
    rest = {k: v for k, v in options.items() if k != "recorders"}
    if store is not None:
        from .store.runs import new_run_id

        run_id = run_id or new_run_id()

    def make_tap(sink: Callable[[StreamEvent], None]) -> StreamTap:
        return StreamTap(sink, kinds, narrative=narrative() if "narrative" in kinds else None)

    def with_tap(tap: StreamTap) -> list[Any]:
        return [*recorders, tap]

    if store is not None:

        def run(tap: StreamTap) -> Any:
            return chart.run(input, recorders=with_tap(tap), store=store, run_id=run_id, **rest)

        async def arun(tap: StreamTap) -> Any:
            assert run_id is not None
            return await astart_stored(chart, store, input, run_id, recorders=with_tap(tap), **rest)

    else:

        def run(tap: StreamTap) -> Any:
            return chart.run(input, recorders=with_tap(tap), **rest)

        async def arun(tap: StreamTap) -> Any:
            return await chart.arun(input, recorders=with_tap(tap), **rest)

    def on_cancel(record: Cancelled) -> None:
        if store is not None and run_id is not None:
            mark_cancelled(store, run_id, record)

    needs_loop = chart.needs_loop or options.get("timeout") is not None
    return StreamPlan(make_tap, arun, run, needs_loop, final_event, on_cancel)


def final_event(result: Any, _tap: StreamTap) -> Final:
    """The closing event of a chart stream, carrying the ``RunResult`` (it is about no one stage)."""
    return Final(None, result)


def mark_cancelled(store: Any, run_id: str, record: Cancelled) -> None:
    """Record a stored run as cancelled by its consumer: failed, with the commits it made, its
    narrative so far and the failure (``RunCancelledError``, the stage it stopped in)."""
    from .store.protocol import Segment

    current = store.get(run_id)
    if current.status != "running":
        return
    segment = Segment(
        current.next_seq, "failed", record.commit_log, error=record.message, narrative=record.narrative,
        failure=record.failure,
    )  # fmt: skip
    store.commit(run_id, segment)


async def astart_stored(chart: FlowChart, store: Any, input: Any, run_id: str, **options: Any) -> Any:
    """``chart.run(input, store=store, run_id=run_id)`` inside the caller's event loop."""
    from .engine.runner import _run_input
    from .store.runs import aadvance

    run_input = _run_input(input)
    store.create(
        run_id, kind="chart", chart_fingerprint=chart.fingerprint, input=run_input, chart_spec=chart.spec,
        redaction=options.get("redaction"),
    )  # fmt: skip

    async def step(record: Any) -> Any:
        result = await chart.arun(record.input, **options)
        result.run_id = run_id
        return result

    return await aadvance(store, run_id, chart.fingerprint, step)
