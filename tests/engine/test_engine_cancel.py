"""Cancelling a run from outside with ``run(..., cancel=token)`` (footprintjs's AbortSignal)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowchart import CancelToken, RunCancelledError, flow_chart
from flowchart.store import SqliteStore


class Failures:
    """Records what ``on_run_failed`` says."""

    def __init__(self) -> None:
        self.errors: list[BaseException | None] = []
        self.commits: list[str] = []

    def on_commit(self, event: Any) -> None:
        self.commits.append(event.commit.runtime_stage_id)

    def on_run_failed(self, event: Any) -> None:
        self.errors.append(event.error)


def _chart(token: CancelToken) -> Any:
    def seed(scope: Any) -> None:
        scope.a = 1

    def work(scope: Any) -> None:
        scope.b = 2
        token.cancel("user pressed stop")
        scope.c = 3  # the running stage finishes and commits

    def never(scope: Any) -> None:
        scope.d = 4

    return (
        flow_chart("Seed", seed, "seed")
        .add_function("Work", work, "work")
        .add_function("Never", never, "never")
        .build()
    )


def test_cancel_commits_the_running_stage_and_ends_before_the_next():
    """The cancelling stage's writes commit; the run fails with a clear, recorded cancellation."""
    token = CancelToken()
    seen = Failures()
    with pytest.raises(RunCancelledError, match=r"^Run cancelled before stage 'never': user pressed stop$") as info:
        _chart(token).run(cancel=token, recorders=[seen])
    assert info.value.stage_id == "never" and info.value.reason == "user pressed stop"
    assert seen.commits == ["seed#0", "work#1"]
    assert seen.errors == [info.value]


def test_cancel_from_another_task_stops_an_async_run():
    """A token cancelled by another task while a stage awaits ends the run at the next stage."""
    token = CancelToken()
    ran: list[str] = []

    async def slow(scope: Any) -> None:
        await asyncio.sleep(0.05)
        scope.slow = True
        ran.append("slow")

    async def main() -> None:
        chart = flow_chart("Slow", slow, "slow").add_function("After", lambda s: ran.append("after"), "after").build()
        task = asyncio.ensure_future(chart.arun(cancel=token))
        await asyncio.sleep(0.01)
        token.cancel()
        with pytest.raises(RunCancelledError, match=r"^Run cancelled before stage 'after'$"):
            await task

    asyncio.run(main())
    assert ran == ["slow"]


def test_an_uncancelled_token_changes_nothing():
    """A token never cancelled gives the same run as no token."""
    token = CancelToken()
    chart = flow_chart("Seed", lambda s: setattr(s, "a", 1), "seed").build()
    assert chart.run(cancel=token).state == chart.run().state == {"a": 1}


def test_a_stored_run_records_the_cancellation(tmp_path: Any):
    """With a store, the cancelled run is stored as failed with the cancellation as its error."""
    token = CancelToken()
    store = SqliteStore(str(tmp_path / "runs.db"))
    with pytest.raises(RunCancelledError, match=r"^Run cancelled before stage 'never': user pressed stop$"):
        _chart(token).run(cancel=token, store=store, run_id="r1")
    record = store.get("r1")
    assert record.status == "failed"
    assert record.error == "RunCancelledError: Run cancelled before stage 'never': user pressed stop"


def test_cancel_must_be_a_token():
    """Anything but a CancelToken is refused before the run starts."""
    chart = flow_chart("Seed", lambda s: None, "seed").build()
    with pytest.raises(TypeError, match=r"^cancel must be a flowchart.CancelToken, got bool$"):
        chart.run(cancel=True)  # type: ignore[arg-type]
