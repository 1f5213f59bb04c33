"""Loops, ctx.stop, timeouts, sync and async stages, and recorders that fail."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from engine_charts import CommitTape, exact, noop

from flowchart import LoopLimitError, RunTimeoutError, flow_chart

# -- loops --------------------------------------------------------------------------------------


def counting_loop(limit: int | None, order: list[str] | None = None):
    """work (n += 1) → check (again: loop to work | done) → after."""
    order = order if order is not None else []

    def work(scope):
        order.append("work")
        scope.n = getattr(scope, "n", 0) + 1

    def check(scope):
        order.append("check")
        return "again" if limit is None or scope.n < limit else "done"

    return (
        flow_chart("Work", work, "work")
        .add_decider_function("Check", check, "check")
        .add_function_branch("again", "Again", lambda s: order.append("again"), loop_to="work")
        .add_function_branch("done", "Done", lambda s: order.append("done"))
        .end()
        .add_function("After", lambda s: order.append("after"), "after")
        .build()
    )


def test_loop_carries_state_forward_and_runs_the_decider_next_once():
    """Each pass sees the last pass's writes; the decider's own next stage runs once, at the end."""
    order: list[str] = []
    result = counting_loop(3, order).run()
    assert result.state == {"n": 3}
    assert order == ["work", "check", "again", "work", "check", "again", "work", "check", "done", "after"]


def test_linear_loop_to_repeats_the_chain_until_stop():
    """A chain ending in ``loop_to`` goes back to the target; ``ctx.stop`` ends it."""

    def tick(scope, ctx):
        scope.ticks = getattr(scope, "ticks", 0) + 1
        if scope.ticks == 3:
            ctx.stop("three")

    chart = flow_chart("Seed", noop, "seed").add_function("Tick", tick, "tick").loop_to("tick").build()
    result = chart.run()
    assert [c.runtime_stage_id for c in result.commit_log] == ["seed#0", "tick#1", "tick#2", "tick#3"]
    assert result.state == {"ticks": 3}


def test_loop_cap_defaults_to_1000_with_the_footprintjs_message():
    """An endless loop fails after 1000 passes back to its target, naming it."""
    tape = CommitTape()
    with pytest.raises(
        LoopLimitError,
        match=exact(
            "Maximum loop iterations (1000) exceeded for node 'work'. Set max_iterations to increase the limit."
        ),
    ) as info:
        counting_loop(None).run(recorders=[tape])
    assert info.value.stage_id == "work"
    assert sum(1 for c in tape.commits if c.stage_id == "work") == 1001


def test_max_iterations_sets_the_cap():
    """``run(max_iterations=N)`` allows N passes back to the target, then raises."""
    order: list[str] = []
    with pytest.raises(
        LoopLimitError,
        match=exact("Maximum loop iterations (3) exceeded for node 'work'. Set max_iterations to increase the limit."),
    ):
        counting_loop(None, order).run(max_iterations=3)
    assert order.count("work") == 4
    assert order[-1] == "again"


def test_max_iterations_must_be_positive():
    """A zero or negative cap is refused before anything runs."""
    with pytest.raises(ValueError, match=exact("max_iterations must be a positive integer, got 0")):
        counting_loop(1).run(max_iterations=0)


# -- stop ---------------------------------------------------------------------------------------


def test_stop_commits_the_stage_and_nothing_after_runs_first_reason_wins():
    """``ctx.stop`` ends the run after the stage commits; a second reason is ignored."""
    order: list[str] = []
    reasons: list[Any] = []

    class Breaks:
        def on_break(self, event):
            reasons.append(event.reason)

    def halt(scope, ctx):
        ctx.stop("first")
        ctx.stop("second")
        scope.after_stop_call = True  # still part of this stage's commit
        order.append("halt")

    chart = (
        flow_chart("Seed", lambda s: order.append("seed"), "seed")
        .add_function("Halt", halt, "halt")
        .add_function("Never", lambda s: order.append("never"), "never")
        .build()
    )
    result = chart.run(recorders=[Breaks()])
    assert order == ["seed", "halt"]
    assert reasons == ["first"]
    assert [c.stage_id for c in result.commit_log] == ["seed", "halt"]
    assert result.state == {"after_stop_call": True}


def test_ctx_stopped_says_whether_this_stage_asked_to_stop():
    """``ctx.stopped`` is read-only and turns True once the stage calls ``ctx.stop`` (a stage
    driving a batch reads it to leave the rest undone)."""
    seen: list[bool] = []

    def halt(scope, ctx):
        seen.append(ctx.stopped)
        ctx.stop("enough")
        seen.append(ctx.stopped)

    flow_chart("Seed", lambda s, ctx: seen.append(ctx.stopped), "seed").add_function("Halt", halt, "halt").build().run()
    assert seen == [False, False, True]

    def write(scope, ctx):
        ctx.stopped = True

    with pytest.raises(AttributeError, match="stopped"):
        flow_chart("Write", write, "write").build().run()


def test_stop_in_a_decider_takes_no_branch():
    """A decider that stops commits, and neither a branch nor its next stage runs."""
    order: list[str] = []

    def check(scope, ctx):
        ctx.stop("no branch")
        return "a"

    chart = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", check, "check")
        .add_function_branch("a", "A", lambda s: order.append("a"))
        .end()
        .add_function("After", lambda s: order.append("after"), "after")
        .build()
    )
    result = chart.run()
    assert order == []
    assert [c.stage_id for c in result.commit_log] == ["seed", "check"]


# -- timeout ------------------------------------------------------------------------------------


async def test_timeout_names_the_stage_and_commits_its_partial_writes():
    """``run(timeout=...)`` interrupts an async stage: its partial writes commit, then it raises."""
    tape = CommitTape()

    async def slow(scope):
        scope.partial = "written before the wait"
        await asyncio.sleep(5)
        scope.never = True

    chart = flow_chart("Seed", noop, "seed").add_function("Slow", slow, "slow").build()
    with pytest.raises(RunTimeoutError, match=exact("Run timed out after 0.05 s in stage 'slow'")) as info:
        await chart.arun(timeout=0.05, recorders=[tape])
    assert isinstance(info.value, TimeoutError)
    assert info.value.stage_id == "slow"
    assert tape.ids == ["seed#0", "slow#1"]
    assert [op.to_dict() for op in tape.commits[1].trace] == [
        {"path": ["partial"], "verb": "set", "value": "written before the wait"}
    ]


def test_timeout_in_a_sync_run_fails_before_the_next_stage():
    """A sync stage cannot be interrupted; the deadline is checked before the next stage.

    The stage sleeps until the deadline has surely passed, measured from before the run (a
    deadline short enough to pass on a loaded machine before the first stage would test the load).
    """
    started = time.monotonic()

    def slow(scope):
        time.sleep(max(0.0, started + 0.55 - time.monotonic()))

    chart = flow_chart("Slow", slow, "slow").add_function("Next", noop, "next").build()
    with pytest.raises(RunTimeoutError, match=exact("Run timed out after 0.5 s before stage 'next'")):
        chart.run(timeout=0.5)


# -- sync and async ------------------------------------------------------------------------------


def test_sync_and_async_stages_mix_in_run():
    """``run()`` runs sync and async stages (and async deciders) in order."""
    order: list[str] = []

    async def fetch(scope):
        await asyncio.sleep(0)
        scope.fetched = True
        order.append("fetch")

    async def check(scope):
        order.append("check")
        return "a"

    chart = (
        flow_chart("Seed", lambda s: order.append("seed"), "seed")
        .add_function("Fetch", fetch, "fetch")
        .add_decider_function("Check", check, "check")
        .add_function_branch("a", "A", lambda s: order.append("a"))
        .end()
        .build()
    )
    result = chart.run()
    assert order == ["seed", "fetch", "check", "a"]
    assert result.state == {"fetched": True}


async def test_arun_gives_the_same_log_as_run():
    """``arun`` and ``run`` produce identical commit logs for the same chart."""

    async def fetch(scope):
        scope.n = 1

    def build():
        return flow_chart("Seed", noop, "seed").add_function("Fetch", fetch, "fetch").build()

    async_log = [c.to_dict() for c in (await build().arun()).commit_log]
    sync_chart = build()
    sync_log = await asyncio.to_thread(lambda: [c.to_dict() for c in sync_chart.run().commit_log])
    assert async_log == sync_log


async def test_run_inside_an_event_loop_with_async_stages_runs_in_a_helper_thread():
    """``run()`` inside a running loop (a notebook) runs the chart on a loop of its own."""
    seen = []

    async def fetch(scope):
        await asyncio.sleep(0)
        seen.append(threading.current_thread().name)
        scope.fetched = True

    chart = flow_chart("Fetch", fetch, "fetch").build()
    assert chart.run().state == {"fetched": True}
    assert seen[0].startswith("flowchart-run")


async def test_sync_only_chart_runs_inside_an_event_loop():
    """A chart without async stages needs no loop, so ``run()`` works inside one."""
    assert flow_chart("Seed", lambda s: setattr(s, "x", 1), "seed").build().run().state == {"x": 1}


# -- recorders ------------------------------------------------------------------------------------


def test_a_failing_recorder_never_breaks_a_run():
    """A recorder that raises in every hook is reported to the others; the run completes."""
    reported: list[Any] = []

    class Broken:
        def on_commit(self, event):
            raise RuntimeError("recorder bug")

        def on_stage_executed(self, event):
            raise RuntimeError("recorder bug")

        def on_read(self, event):
            raise RuntimeError("recorder bug")

    class Listener:
        def on_error(self, event):
            reported.append((event.channel, event.message))

    def seed(scope):
        scope.x = 1
        _ = scope.x

    result = flow_chart("Seed", seed, "seed").build().run(recorders=[Broken(), Listener()])
    assert result.state == {"x": 1}
    assert reported == [
        ("recorder", "recorder Broken.on_read raised RuntimeError: recorder bug"),
        ("recorder", "recorder Broken.on_commit raised RuntimeError: recorder bug"),
        ("recorder", "recorder Broken.on_stage_executed raised RuntimeError: recorder bug"),
    ]
