"""What a stream runs, and what its drivers share: the plan, the feed, the cancellation record.

Laws:
- A ``StreamPlan`` says everything a driver needs and nothing about how it drives: how
  to make the tap, the run as a coroutine (and without a loop), the closing event, and
  how to mark a stored run its consumer cancelled.
- ``Core.guarded`` is the run as every driver starts it: a cancellation the consumer
  asked for is recorded (``Cancelled``, and the plan's ``on_cancel``) inside the run's
  own task, before the cancellation unwinds it — so the record exists even when no one
  waits for the task.
- The ``Feed`` holds no reference back to its stream, so dropping a stream finalises it
  at once (and cancels its run).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.cancel import RunCancelledError
from flowchart._core.failure import RunFailure
from flowchart._stream.stream_tap import StreamTap
from flowchart.stream_events import Final, StreamEvent

if TYPE_CHECKING:
    from flowchart._core.commits import Commit

CANCEL_REASON = "the run was cancelled by the stream's consumer"


@attrs.frozen
class Cancelled:
    """The record of a run whose stream's consumer left early.

    ``stage`` is the runtime id of the last stage that committed — the one in progress
    when the cancellation took effect, which committed what it had written —,
    ``commit_log`` the run's top-level commits, that stage's included, ``narrative``
    the run's narrative so far (when the stream had one) and ``records`` the same as records
    (with their stage ids, what a store keeps).
    """

    reason: str
    stage: str | None
    commit_log: tuple[Commit, ...]
    narrative: tuple[str, ...] = ()
    records: tuple[Any, ...] = ()

    @property
    def error(self) -> RunCancelledError:
        """The cancellation as an error (what a stored run records as failed)."""
        where = f" during stage '{self.stage}'" if self.stage else " before its first stage"
        return RunCancelledError(f"{self.reason}{where}", stage_id=self.stage, reason=self.reason)

    @property
    def message(self) -> str:
        """``RunCancelledError: ...``: the error as a stored run records it."""
        return f"{type(self.error).__name__}: {self.error}"

    @property
    def failure(self) -> RunFailure:
        """The ``RunFailure`` a stored run keeps: the error and the stage it stopped in."""
        stage_id = self.commit_log[-1].stage_id if self.commit_log else None
        return RunFailure.of(self.error, stage_id, self.stage)


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


END = object()


class Feed:
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


class Core:
    """The state every driver shares: the tap, the outcome, the cancellation record."""

    def __init__(self, plan: StreamPlan, sink: Callable[[StreamEvent], None]) -> None:
        self.plan = plan
        self.tap = plan.make_tap(sink)
        self.result: Any = END
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
        tap = self.tap
        commits = tuple(tap.commits)
        lines = tuple(tap.narrative.lines()) if tap.narrative is not None else ()
        told = getattr(tap.narrative, "records", None)
        records = tuple(told()) if callable(told) else ()
        last = commits[-1].runtime_stage_id if commits else None
        self.cancelled = Cancelled(CANCEL_REASON, last, commits, lines, records)
        if self.plan.on_cancel is not None:
            self.plan.on_cancel(self.cancelled)

    def closing(self, result: Any) -> Final:
        self.result = result
        return self.plan.final(result, self.tap)


class Raise:
    """A buffered error: raised when the consumer reaches it."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
