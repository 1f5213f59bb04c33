"""The stream drivers: a run's events as a sync iterator (``RunStream``) or an async one.

Laws:
- A run that never awaits runs to its end at the first ``next()`` (or ``iter()``) and
  its events are read from memory; a run that awaits runs on the stream's own event
  loop, pumped between ``next()`` calls, and hands each event over while it waits. Only
  when the calling thread already runs a loop does the run get a helper thread (with
  its own loop), as ``chart.run()`` does there; ``AsyncRunStream`` runs on the caller's.
- Leaving early (``close``, ``aclose``, a ``with`` block, dropping the stream) cancels a
  run still going: its task is cancelled where it waits (the stage in progress commits
  what it wrote), and in a helper thread no further stage starts.
- A run that raises: its events come first, then the iteration raises its own error.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from flowchart._core.errors import RunError
from flowchart._stream.stream_plan import END, Cancelled, Core, Feed, Raise, StreamPlan
from flowchart.stream_events import StreamEvent


class _Outcome:
    """What a stream of either kind says about its run once it ended: ``result`` and ``cancelled``."""

    _core: Core

    @property
    def result(self) -> Any:
        """What ``run()`` returned (the ``final`` event's ``result``); ``RunError`` before the end."""
        if self._core.result is END:
            raise RunError("stream.result: the run has not ended (iterate the stream to its final event)")
        return self._core.result

    @property
    def cancelled(self) -> Cancelled | None:
        """The cancellation record when the consumer left before the end, else ``None``."""
        return self._core.cancelled


class RunStream(_Outcome):
    """A run's events as a synchronous iterator; also a context manager.

    ``for event in stream: ...``; after the loop, ``stream.result`` is the run's result
    and ``stream.cancelled`` the cancellation record when the loop was left early.
    """

    def __init__(self, plan: StreamPlan) -> None:
        self._feed = Feed()
        self._buffer = self._feed.buffer
        self._core = Core(plan, self._feed.push)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._thread: _ThreadDriver | None = None
        self._started = False
        self._finished = False

    # -- the public face -------------------------------------------------------------------------
    def __iter__(self) -> Iterator[StreamEvent]:
        if self._started or self._core.plan.needs_loop:
            return self
        # a run that never awaits runs to its end here; its events are then read at C speed
        self._started = True
        self._run_direct()
        events = list(self._buffer)
        self._buffer.clear()
        if events and isinstance(events[-1], Raise):
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
        if isinstance(item, Raise):
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
            self._buffer.append(Raise(exc))
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
                self._buffer.append(Raise(error))
                return
            raise error
        self._buffer.append(self._core.closing(task.result()))


def _replay(events: list[Any]) -> Iterator[StreamEvent]:
    """The events of a run that raised, then its error."""
    for event in events:
        if isinstance(event, Raise):
            raise event.error
        yield event


def _close_loop(loop: asyncio.AbstractEventLoop) -> None:
    """Finalise the async generators a cancelled run left open (a model stream), then close."""
    try:
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()


class _ThreadDriver:
    """The run on its own event loop in a helper thread (the calling thread runs a loop)."""

    def __init__(self, core: Core) -> None:
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
            self.queue.put(Raise(exc))
        else:
            self.queue.put(self.core.closing(result))
        self.queue.put(END)

    def next(self) -> StreamEvent:
        if self.done:
            raise StopIteration
        item = self.queue.get()
        if item is END:
            self.done = True
            raise StopIteration
        if isinstance(item, Raise):
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


class AsyncRunStream(_Outcome):
    """A run's events as an asynchronous iterator on the caller's event loop.

    ``async for event in stream: ...`` (or ``async with stream: ...``); leaving early
    cancels the run (``aclose()`` waits until the cancellation is recorded).
    """

    def __init__(self, plan: StreamPlan) -> None:
        self._feed = Feed()
        self._buffer = self._feed.buffer
        self._core = Core(plan, self._feed.push)
        self._task: asyncio.Task[Any] | None = None
        self._finished = False

    def __aiter__(self) -> AsyncIterator[StreamEvent]:
        return self

    async def __anext__(self) -> StreamEvent:
        while not self._buffer:
            if self._finished:
                raise StopAsyncIteration
            await self._advance()
        item = self._buffer.popleft()
        if isinstance(item, Raise):
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
            self._buffer.append(Raise(error))
            return
        self._buffer.append(self._core.closing(task.result()))
