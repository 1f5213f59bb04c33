"""Streaming a run: ``chart.stream()`` / ``chart.astream()`` and the drivers behind them.

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

import asyncio
import contextlib
import queue
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .errors import RunError
from .stream_events import CHART_KINDS, CHART_MODES, Final, StreamEvent, resolve_modes
from .stream_tap import StreamTap

if TYPE_CHECKING:
    from .chart import FlowChart
    from .commits import Commit

CANCEL_REASON = "the run was cancelled by the stream's consumer"


class RunCancelledError(RunError):
    """A run stopped because the consumer of its stream left the loop (what a stored run records)."""


@attrs.frozen
class Cancelled:
    """The record of a run whose stream's consumer left early.

    ``stage`` is the runtime id of the last stage that committed — the one in progress
    when the cancellation took effect, which committed what it had written — and
    ``commit_log`` the run's top-level commits, that stage's included.
    """

    reason: str
    stage: str | None
    commit_log: tuple[Commit, ...]

    @property
    def error(self) -> RunCancelledError:
        """The cancellation as an error (what a stored run records as failed)."""
        where = f" during stage '{self.stage}'" if self.stage else " before its first stage"
        return RunCancelledError(f"{self.reason}{where}", stage_id=self.stage)

    @property
    def message(self) -> str:
        """``RunCancelledError: ...``: the error as a stored run records it."""
        return f"{type(self.error).__name__}: {self.error}"


@attrs.frozen
class StreamPlan:
    """What a stream runs: how to attach the tap, run (sync and async), and end.

    ``arun(tap)`` is the run as a coroutine with the tap among its recorders; ``run(tap)``
    the same run without an event loop (used when ``needs_loop`` is False);
    ``final(result, tap)`` the closing event; ``on_cancel(record)`` marks a stored run.
    """

    make_tap: Callable[[Callable[[StreamEvent], None]], StreamTap]
    arun: Callable[[StreamTap], Coroutine[Any, Any, Any]]
    run: Callable[[StreamTap], Any]
    needs_loop: bool
    final: Callable[[Any, StreamTap], Final]
    on_cancel: Callable[[Cancelled], None] | None = None


_END = object()
#: the keyword options ``chart.stream()`` passes on to the run
RUN_OPTIONS = frozenset({"env", "recorders", "max_iterations", "timeout", "redaction"})


class _Feed:
    """The events waiting for the consumer, and the future that wakes a consumer waiting for one.

    It holds no reference back to the stream, so dropping the stream (a ``break`` out of a
    ``for`` loop) finalises it at once and cancels the run.
    """

    __slots__ = ("buffer", "wake")

    def __init__(self) -> None:
        self.buffer: deque[Any] = deque()
        self.wake: asyncio.Future[None] | None = None

    def push(self, event: StreamEvent) -> None:
        self.buffer.append(event)
        wake = self.wake
        if wake is not None and not wake.done():
            wake.set_result(None)


class _Core:
    """The state every driver shares: the tap, the outcome, the cancellation record."""

    def __init__(self, plan: StreamPlan, sink: Callable[[StreamEvent], None]) -> None:
        self.plan = plan
        self.tap = plan.make_tap(sink)
        self.result: Any = _END
        self.error: BaseException | None = None
        self.cancelled: Cancelled | None = None

    async def guarded(self) -> Any:
        """The run, recording a cancellation the consumer asked for."""
        self.tap.guard()
        try:
            return await self.plan.arun(self.tap)
        except asyncio.CancelledError:
            if self.tap.cancel_requested:
                self.record_cancel()
            raise

    def record_cancel(self) -> None:
        commits = tuple(self.tap.commits)
        self.cancelled = Cancelled(CANCEL_REASON, commits[-1].runtime_stage_id if commits else None, commits)
        if self.plan.on_cancel is not None:
            self.plan.on_cancel(self.cancelled)

    def closing(self, result: Any) -> Final:
        self.result = result
        return self.plan.final(result, self.tap)


class RunStream:
    """A run's events as a synchronous iterator; also a context manager.

    ``for event in stream: ...``; after the loop, ``stream.result`` is the run's result
    and ``stream.cancelled`` the cancellation record when the loop was left early.
    """

    def __init__(self, plan: StreamPlan) -> None:
        self._feed = _Feed()
        self._buffer = self._feed.buffer
        self._core = _Core(plan, self._feed.push)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._thread: _ThreadDriver | None = None
        self._started = False
        self._finished = False

    # -- the public face -------------------------------------------------------------------------
    @property
    def result(self) -> Any:
        """What ``run()`` returned (the ``final`` event's ``result``); ``RunError`` before the end."""
        if self._core.result is _END:
            raise RunError("stream.result: the run has not ended (iterate the stream to its final event)")
        return self._core.result

    @property
    def cancelled(self) -> Cancelled | None:
        """The cancellation record when the consumer left before the end, else ``None``."""
        return self._core.cancelled

    def __iter__(self) -> Iterator[StreamEvent]:
        if self._started or self._core.plan.needs_loop:
            return self
        # a run that never awaits runs to its end here; its events are then read at C speed
        self._started = True
        self._run_direct()
        events = list(self._buffer)
        self._buffer.clear()
        if events and isinstance(events[-1], _Raise):
            return _replay(events)
        return iter(events)

    def __next__(self) -> StreamEvent:
        while not self._buffer:
            if self._thread is not None:
                return self._thread.next()
            if self._finished:
                raise StopIteration
            self._advance()
        item = self._buffer.popleft()
        if isinstance(item, _Raise):
            raise item.error
        return item

    def __enter__(self) -> RunStream:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop reading: a run still going is cancelled (see the module laws)."""
        if self._thread is not None:
            self._thread.close()
            return
        task, loop = self._task, self._loop
        self._finished = True
        self._buffer.clear()
        if task is not None and loop is not None and not task.done():
            self._core.tap.cancel_requested = True
            task.cancel()
            # the cancellation (or the run's own error) ends it: the record is kept
            with contextlib.suppress(asyncio.CancelledError, Exception):
                loop.run_until_complete(task)
        if loop is not None:
            _close_loop(loop)
            self._loop = None

    def __del__(self) -> None:
        if not self._finished or self._loop is not None:
            with contextlib.suppress(Exception):  # a finaliser must never raise
                self.close()

    # -- driving -------------------------------------------------------------------------------------
    def _advance(self) -> None:
        core = self._core
        if not self._started:
            self._started = True
            if not core.plan.needs_loop:
                self._run_direct()
                return
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                self._loop = asyncio.new_event_loop()
                self._task = self._loop.create_task(core.guarded())
            else:
                self._thread = _ThreadDriver(core)
                return
        self._pump()

    def _run_direct(self) -> None:
        self._finished = True
        core = self._core
        core.tap.sink = self._buffer.append  # nothing waits on a run that never awaits
        try:
            result = core.plan.run(core.tap)
        except Exception as exc:  # the events before the failure come first
            self._buffer.append(_Raise(exc))
            return
        self._buffer.append(core.closing(result))

    def _pump(self) -> None:
        loop, task = self._loop, self._task
        assert loop is not None and task is not None
        if not task.done():
            wake = self._feed.wake = loop.create_future()
            loop.run_until_complete(asyncio.wait((task, wake), return_when=asyncio.FIRST_COMPLETED))
            self._feed.wake = None
            if not task.done():
                return
        self._finished = True
        _close_loop(loop)
        self._loop = None
        if task.cancelled():
            raise RunError("the stream's run was cancelled")
        error = task.exception()
        if error is not None:
            if self._buffer:  # the events before the failure come first
                self._buffer.append(_Raise(error))
                return
            raise error
        self._buffer.append(self._core.closing(task.result()))


def _replay(events: list[Any]) -> Iterator[StreamEvent]:
    """The events of a run that raised, then its error."""
    for event in events:
        if isinstance(event, _Raise):
            raise event.error
        yield event


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Finalise the async generators a cancelled run left open (a model stream), then close."""
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


class _Raise:
    """A buffered error: raised when the consumer reaches it."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _ThreadDriver:
    """The run on its own event loop in a helper thread (the calling thread runs a loop)."""

    def __init__(self, core: _Core) -> None:
        self.core = core
        self.queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        core.tap.sink = self.queue.put
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None
        self.ready = threading.Event()
        self.done = False
        self.thread = threading.Thread(target=self._main, name="flowchart-stream", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        async def main() -> Any:
            self.loop = asyncio.get_running_loop()
            self.task = asyncio.current_task()
            self.ready.set()
            return await self.core.guarded()

        try:
            result = asyncio.run(main())
        except BaseException as exc:  # handed to the consumer
            self.ready.set()
            self.queue.put(_Raise(exc))
        else:
            self.queue.put(self.core.closing(result))
        self.queue.put(_END)

    def next(self) -> StreamEvent:
        if self.done:
            raise StopIteration
        item = self.queue.get()
        if item is _END:
            self.done = True
            raise StopIteration
        if isinstance(item, _Raise):
            self.done = True
            self.thread.join()
            raise item.error
        return item

    def close(self) -> None:
        if self.done:
            return
        self.done = True
        self.ready.wait()
        self.core.tap.cancel_requested = True
        loop, task = self.loop, self.task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop already closed: the run had ended
                loop.call_soon_threadsafe(task.cancel)
        self.thread.join()


class AsyncRunStream:
    """A run's events as an asynchronous iterator on the caller's event loop.

    ``async for event in stream: ...`` (or ``async with stream: ...``); leaving early
    cancels the run (``aclose()`` waits until the cancellation is recorded).
    """

    def __init__(self, plan: StreamPlan) -> None:
        self._feed = _Feed()
        self._buffer = self._feed.buffer
        self._core = _Core(plan, self._feed.push)
        self._task: asyncio.Task[Any] | None = None
        self._finished = False

    @property
    def result(self) -> Any:
        """What ``run()`` returned (the ``final`` event's ``result``); ``RunError`` before the end."""
        if self._core.result is _END:
            raise RunError("stream.result: the run has not ended (iterate the stream to its final event)")
        return self._core.result

    @property
    def cancelled(self) -> Cancelled | None:
        """The cancellation record when the consumer left before the end, else ``None``."""
        return self._core.cancelled

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._buffer:
            if self._finished:
                raise StopAsyncIteration
            await self._advance()
        item = self._buffer.popleft()
        if isinstance(item, _Raise):
            raise item.error
        return item

    async def __aenter__(self) -> AsyncRunStream:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop reading: a run still going is cancelled, and this waits for its record."""
        self._finished = True
        self._buffer.clear()
        task = self._task
        if task is not None and not task.done():
            self._core.tap.cancel_requested = True
            task.cancel()
            # the cancellation (or the run's own error) ends it: the record is kept
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def __del__(self) -> None:
        task = self._task
        if task is not None and not task.done():
            self._core.tap.cancel_requested = True
            task.cancel()

    async def _advance(self) -> None:
        if self._task is None:
            self._task = asyncio.ensure_future(self._core.guarded())
        task = self._task
        if not task.done():
            wake = self._feed.wake = asyncio.get_running_loop().create_future()
            await asyncio.wait((task, wake), return_when=asyncio.FIRST_COMPLETED)
            self._feed.wake = None
            if not task.done():
                return
        self._finished = True
        if task.cancelled():
            raise RunError("the stream's run was cancelled")
        error = task.exception()
        if error is not None:
            self._buffer.append(_Raise(error))
            return
        self._buffer.append(self._core.closing(task.result()))


# -- the chart's entry points ----------------------------------------------------------------------


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
    """Record a stored run as cancelled by its consumer: failed, with the commits it made."""
    from .store.protocol import Segment

    current = store.get(run_id)
    if current.status != "running":
        return
    store.commit(run_id, Segment(current.next_seq, "failed", record.commit_log, error=record.message))


async def astart_stored(chart: FlowChart, store: Any, input: Any, run_id: str, **options: Any) -> Any:
    """``chart.run(input, store=store, run_id=run_id)`` inside the caller's event loop."""
    from .engine.runner import _run_input
    from .store.runs import aadvance

    run_input = _run_input(input)
    store.create(run_id, kind="chart", chart_fingerprint=chart.fingerprint, input=run_input, chart_spec=chart.spec)

    async def step(record: Any) -> Any:
        result = await chart.arun(record.input, **options)
        result.run_id = run_id
        return result

    return await aadvance(store, run_id, chart.fingerprint, step)
