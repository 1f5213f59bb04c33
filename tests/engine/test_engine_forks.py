"""Forks (``add_list_of_function``): concurrency, namespaces, declaration-order commits, errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from engine_charts import exact, noop

from flowchart import flow_chart


def sleeper(name: str, delay: float, finished: list[str]):
    async def child(scope):
        scope.started = name
        await asyncio.sleep(delay)
        scope.done = True
        finished.append(name)

    return child


async def test_fork_children_run_concurrently_and_commit_in_declaration_order():
    """Async children overlap (they finish b, c, a) but their commits follow declaration order."""
    finished: list[str] = []
    chart = (
        flow_chart("Seed", noop, "seed")
        .add_list_of_function(
            [
                ("a", "A", sleeper("a", 0.06, finished)),
                ("b", "B", sleeper("b", 0.0, finished)),
                ("c", "C", sleeper("c", 0.03, finished)),
            ]
        )
        .add_function("After", noop, "after")
        .build()
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    result = await chart.arun()
    elapsed = loop.time() - started
    assert finished == ["b", "c", "a"]
    assert elapsed < 0.06 + 0.03  # overlapped, not one after the other
    assert [c.runtime_stage_id for c in result.commit_log] == ["seed#0", "a#1", "b#2", "c#3", "after#4"]
    assert [c.idx for c in result.commit_log] == [0, 1, 2, 3, 4]


def test_sync_run_with_async_children_also_commits_in_declaration_order():
    """``run()`` drives async children on its own loop with the same log."""
    finished: list[str] = []
    chart = flow_chart("Seed", noop, "seed").add_list_of_function(
        [("a", "A", sleeper("a", 0.03, finished)), ("b", "B", sleeper("b", 0.0, finished))]
    )
    result = chart.build().run()
    assert finished == ["b", "a"]
    assert [c.stage_id for c in result.commit_log] == ["seed", "a", "b"]


def test_each_child_writes_into_its_own_runs_namespace():
    """A child's writes land under ``runs/<child_id>``; op paths say so."""

    def x(scope):
        scope.value = 1

    def y(scope):
        scope.value = 2

    result = flow_chart("Seed", noop, "seed").add_list_of_function([("x", "X", x), ("y", "Y", y)]).build().run()
    assert result.state == {"runs": {"x": {"value": 1}, "y": {"value": 2}}}
    assert [[op.to_dict() for op in c.trace] for c in result.commit_log[1:]] == [
        [{"path": ["runs", "x", "value"], "verb": "set", "value": 1}],
        [{"path": ["runs", "y", "value"], "verb": "set", "value": 2}],
    ]


async def test_child_sees_committed_state_and_its_own_writes_but_not_siblings():
    """Reads fall back to committed root state; a sibling's writes are invisible during the fork."""
    seen: dict[str, Any] = {}

    def seed(scope):
        scope.shared = "root"

    def make(name: str, delay: float):
        async def child(scope):
            scope.mine = name
            await asyncio.sleep(delay)
            seen[name] = (scope.shared, scope.mine, "mine" in scope)

        return child

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_list_of_function([("x", "X", make("x", 0.02)), ("y", "Y", make("y", 0.0))])
        .build()
    )
    result = await chart.arun()
    assert seen == {"x": ("root", "x", True), "y": ("root", "y", True)}
    assert result.state == {"shared": "root", "runs": {"x": {"mine": "x"}, "y": {"mine": "y"}}}


def test_stage_after_the_fork_sees_the_children_namespaces():
    """After the fork, every child's writes are committed state under ``runs``."""
    seen: list[Any] = []

    def x(scope):
        scope.value = 1

    def after(scope):
        seen.append(scope.runs["x"]["value"])

    chart = flow_chart("Seed", noop, "seed").add_list_of_function([("x", "X", x)])
    chart.add_function("After", after, "after").build().run()
    assert seen == [1]


def test_fail_fast_false_collects_child_errors_in_the_fork_output():
    """Without fail_fast, a failing child is reported in the output bundle; the run goes on."""

    def ok(scope):
        scope.fine = True
        return "ok"

    def bad(scope):
        scope.partial = 1
        raise ValueError("child broke")

    chart = flow_chart("Seed", noop, "seed").add_list_of_function([("ok", "Ok", ok), ("bad", "Bad", bad)])
    result = chart.build().run()
    failed = result.output["bad"]["result"]
    assert isinstance(failed, ValueError) and str(failed) == "child broke"
    assert result.output == {
        "ok": {"id": "ok", "result": "ok", "is_error": False},
        "bad": {"id": "bad", "result": failed, "is_error": True},
    }
    assert [c.stage_id for c in result.commit_log] == ["seed", "ok", "bad"]
    assert result.state == {"runs": {"ok": {"fine": True}, "bad": {"partial": 1}}}


def test_fail_fast_true_raises_the_first_child_error_after_all_commit():
    """With fail_fast, the first failing child (in declaration order) fails the run."""
    commits: list[str] = []

    class Tape:
        def on_commit(self, event):
            commits.append(event.commit.stage_id)

    def bad(name: str):
        def fn(scope):
            raise ValueError(f"{name} broke")

        return fn

    chart = (
        flow_chart("Seed", noop, "seed")
        .add_list_of_function([("x", "X", bad("x")), ("ok", "Ok", noop), ("y", "Y", bad("y"))], fail_fast=True)
        .add_function("After", noop, "after")
        .build()
    )
    with pytest.raises(ValueError, match=exact("x broke")):
        chart.run(recorders=[Tape()])
    assert commits == ["seed", "x", "ok", "y"]


def test_fork_child_stop_ends_the_run_after_the_fork():
    """``ctx.stop()`` in a child lets its siblings finish, then nothing after the fork runs."""
    order: list[str] = []

    def stopper(scope, ctx):
        order.append("x")
        ctx.stop("enough")

    chart = (
        flow_chart("Seed", noop, "seed")
        .add_list_of_function([("x", "X", stopper), ("y", "Y", lambda s: order.append("y"))])
        .add_function("After", lambda s: order.append("after"), "after")
        .build()
    )
    result = chart.run()
    assert order == ["x", "y"]
    assert [c.stage_id for c in result.commit_log] == ["seed", "x", "y"]
