"""``add_map``: one child per item, bounded concurrency, commits and results in item order,
a fixed chart, ``ctx.item`` / ``ctx.index``, failures with their index, chart children."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowchart import BuildError, FlowChart, MapError, Pausable, RunError, Trace, flow_chart, narrative


def seed(scope: Any) -> None:
    scope.urls = [f"u{i}" for i in range(6)]


def chart_of(child: Any, **options: Any) -> FlowChart:
    return (
        flow_chart("Seed", seed, "seed")
        .add_map("Fetch", child, "fetch", items=lambda scope: scope.urls, into="pages", **options)
        .add_function("Done", lambda scope: None, "done")
        .build()
    )


async def slow_fetch(scope: Any, ctx: Any) -> dict[str, Any]:
    """Later items finish first, so completion order is the reverse of item order."""
    await asyncio.sleep(0.002 * (6 - ctx.index))
    scope.seen = ctx.item
    return {"url": ctx.item, "index": ctx.index}


def test_results_and_commits_are_in_item_order_whatever_finishes_first() -> None:
    """Six children that finish in reverse order: ``into`` and the log are still in item order."""
    result = chart_of(slow_fetch).run()
    assert result.state["pages"] == [{"url": f"u{i}", "index": i} for i in range(6)]
    assert [c.runtime_stage_id for c in result.commit_log] == [
        "seed#0",
        "fetch#2",
        "fetch#3",
        "fetch#4",
        "fetch#5",
        "fetch#6",
        "fetch#7",
        "fetch#1",
        "done#8",
    ]
    assert [op.path for op in result.commit_log[1].trace] == [("runs", "fetch", "0", "seen")]
    assert result.commit_log[7].reads == ("urls",)


def test_the_same_run_twice_gives_the_same_log() -> None:
    """Determinism: the concurrent map's commit log is byte-identical across runs."""
    first = chart_of(slow_fetch).run().trace().commit_log
    second = chart_of(slow_fetch).run().trace().commit_log
    assert first == second


def test_concurrency_bounds_how_many_children_run_at_once() -> None:
    """With concurrency=2 never more than two children are inside their body at once."""
    live = {"now": 0, "peak": 0}

    async def child(scope: Any, ctx: Any) -> int:
        live["now"] += 1
        live["peak"] = max(live["peak"], live["now"])
        await asyncio.sleep(0.001)
        live["now"] -= 1
        return ctx.index

    assert chart_of(child, concurrency=2).run().state["pages"] == [0, 1, 2, 3, 4, 5]
    assert live["peak"] == 2


def test_the_fingerprint_does_not_depend_on_the_data() -> None:
    """The spec names the map, its target and limits — never the items."""
    chart = chart_of(slow_fetch, concurrency=3)
    assert chart.spec["stages"][1] == {
        "id": "fetch",
        "name": "Fetch",
        "kind": "stage",
        "next": "done",
        "map": {"into": "pages", "concurrency": 3, "fail_fast": True},
    }
    before = chart.fingerprint
    chart.run()
    assert chart_of(slow_fetch, concurrency=3).fingerprint == before


def failing(scope: Any, ctx: Any) -> str:
    if ctx.index in (2, 4):
        raise ValueError(f"bad {ctx.item}")
    return ctx.item


def test_a_failing_child_fails_the_map_with_its_index() -> None:
    """fail_fast (the default): the lowest failing index, the child's error as the cause."""
    with pytest.raises(MapError, match=r"^map 'fetch' failed at item 2: ValueError: bad u2$") as info:
        chart_of(failing).run()
    assert info.value.index == 2
    assert isinstance(info.value.__cause__, ValueError)


def test_without_fail_fast_the_results_carry_the_errors() -> None:
    """fail_fast=False: every child runs; failed slots say which error, the narrative which items."""
    story = narrative()
    result = chart_of(failing, fail_fast=False).run(recorders=[story])
    assert result.state["pages"] == [
        "u0",
        "u1",
        {"index": 2, "error": "ValueError: bad u2"},
        "u3",
        {"index": 4, "error": "ValueError: bad u4"},
        "u5",
    ]
    assert "[Map]: Mapped Fetch over 6 items; items 2, 4 failed." in story.lines()


def test_the_narrative_summarises_the_map() -> None:
    """One line for the map (ours: footprintjs has no map), after the map's own stage line."""
    story = narrative()
    chart_of(lambda scope, ctx: ctx.index).run(recorders=[story])
    lines = story.lines()
    assert lines[lines.index("Stage 2: Next, it moved on to Fetch.") :][:4] == [
        "Stage 2: Next, it moved on to Fetch.",
        "Step 1: Read urls = (6 items)",
        "Step 2: Write pages = (6 items)",
        "[Map]: Mapped Fetch over 6 items.",
    ]


def test_a_narrated_map_run_saves_and_loads_as_a_trace() -> None:
    """A map's narrative record (type ``map``) is one the trace loader knows: the trace of a
    narrated map run loads back with its map line, placed on the map's commit."""
    story = narrative()
    result = chart_of(lambda scope, ctx: ctx.index).run(recorders=[story])
    loaded = Trace.from_json(result.trace().to_json())
    maps = [record for record in loaded.narrative or () if record.type == "map"]
    assert [record.text for record in maps] == ["[Map]: Mapped Fetch over 6 items."]
    assert loaded.narrative_lines == story.lines()


def test_a_chart_child_runs_in_its_own_state_per_item() -> None:
    """A chart child: its own state and log per item; its result is its last stage's return."""

    def first(scope: Any, ctx: Any) -> None:
        scope.url = ctx.item

    def last(scope: Any, ctx: Any) -> str:
        return f"{scope.url}@{ctx.index}"

    child = flow_chart("First", first, "first").add_function("Last", last, "last").build()
    result = chart_of(child).run()
    assert result.state["pages"] == [f"u{i}@{i}" for i in range(6)]
    assert "url" not in result.state
    inner = result.subflow_results["fetch#2"]
    # each chart child counts its own stages under <map id>/<index>/
    assert [c.runtime_stage_id for c in inner.commit_log] == ["fetch/0/first#0", "fetch/0/last#1"]
    assert [c.runtime_stage_id for c in result.subflow_results["fetch#7"].commit_log][-1] == "fetch/5/last#1"
    assert inner.state == {"url": "u0"}
    trace = Trace.from_json(result.trace().to_json())
    assert trace.chart_spec["stages"][1]["map"] == {"into": "pages", "concurrency": 8, "fail_fast": True}


def test_concurrent_chart_children_leave_the_same_record_every_time() -> None:
    """Async chart children finishing in any order: their logs and ids are the same each run."""

    async def first(scope: Any, ctx: Any) -> None:
        await asyncio.sleep(0.001 * ((ctx.index * 7) % 5))
        scope.url = ctx.item

    async def last(scope: Any, ctx: Any) -> str:
        await asyncio.sleep(0.001 * ((ctx.index * 3) % 4))
        return scope.url

    child = flow_chart("First", first, "first").add_function("Last", last, "last").build()

    def record() -> Any:
        result = chart_of(child, concurrency=3).run()
        return result.trace().to_dict()["subflows"], [c.to_dict() for c in result.commit_log]

    assert record() == record()


def test_ctx_item_outside_a_map_is_an_error() -> None:
    """Only a map child has an item."""
    chart = flow_chart("A", lambda scope, ctx: ctx.item, "a").build()
    with pytest.raises(RunError, match=r"^ctx.item is only set in a map child \(add_map\), not in stage 'a'$"):
        chart.run()


def test_items_must_be_a_json_list() -> None:
    """``items`` returning a non-list fails the map naming it."""
    chart = flow_chart("S", seed, "seed").add_map("M", lambda s: 1, "m", items=lambda s: 3, into="out").build()
    with pytest.raises(RunError, match=r"^items of map 'm' returned int; it must return a list"):
        chart.run()


def test_build_refuses_bad_maps() -> None:
    """Each mistake is a build error naming the map: items, into, concurrency, a pausing child."""
    base = flow_chart("S", seed, "seed")
    with pytest.raises(BuildError, match=r"map 'm' needs items="):
        base.add_map("M", lambda s: 1, "m", items=None, into="out").build()  # type: ignore[arg-type]
    with pytest.raises(BuildError, match=r"map 'm': concurrency must be a positive integer, got 0"):
        flow_chart("S", seed, "seed").add_map("M", lambda s: 1, "m", items=list, into="o", concurrency=0).build()
    with pytest.raises(BuildError, match=r"map 'm' needs into="):
        flow_chart("S", seed, "seed").add_map("M", lambda s: 1, "m", items=list, into="").build()
    pausing = flow_chart("Ask", Pausable(execute=lambda s: {"q": 1}, resume=lambda s, i: None), "ask").build()
    with pytest.raises(BuildError, match=r"its child chart has a pausable stage 'ask', but a map child cannot pause"):
        flow_chart("S", seed, "seed").add_map("M", pausing, "m", items=list, into="o").build()


def test_a_sync_chart_runs_its_map_children_one_after_another() -> None:
    """Without an event loop (all stages sync) the children run in item order, same result."""
    order: list[int] = []

    def child(scope: Any, ctx: Any) -> int:
        order.append(ctx.index)
        return ctx.index * 2

    assert chart_of(child).run().state["pages"] == [0, 2, 4, 6, 8, 10]
    assert order == [0, 1, 2, 3, 4, 5]


def flaky_child(tries: dict[int, int], fail_times: dict[int, int]) -> Any:
    """Item ``i`` raises TimeoutError on its first ``fail_times[i]`` attempts (writing a
    partial value first), then returns its doubled index."""

    def child(scope: Any, ctx: Any) -> int:
        tries[ctx.index] = tries.get(ctx.index, 0) + 1
        scope.attempt = tries[ctx.index]
        if tries[ctx.index] <= fail_times.get(ctx.index, 0):
            raise TimeoutError(f"item {ctx.index} try {tries[ctx.index]}")
        return ctx.index * 2

    return child


def test_map_children_retry_under_the_maps_policy_and_each_attempt_is_recorded() -> None:
    """``add_map(..., retry=Retry(...))``: a flaky child is tried again (no real sleeping);
    its one commit lists its failed attempts and holds only the last attempt's writes; the
    narrative tells each retry once; the results are all there, in item order."""
    from flowchart import Retry

    tries: dict[int, int] = {}
    delays: list[float] = []
    policy = Retry(attempts=3, backoff=0.5, on=(TimeoutError,), sleep=delays.append)
    chart = chart_of(flaky_child(tries, {1: 2, 4: 1}), retry=policy)
    story = narrative()
    result = chart.run(recorders=[story])
    assert result.state["pages"] == [0, 2, 4, 6, 8, 10]
    children = {c.runtime_stage_id: c for c in result.commit_log if c.stage_id == "fetch"}
    one, four = children["fetch#3"], children["fetch#6"]
    assert [(a.attempt, a.error_type, a.message) for a in one.attempts] == [
        (1, "TimeoutError", "item 1 try 1"),
        (2, "TimeoutError", "item 1 try 2"),
    ]
    assert [a.attempt for a in four.attempts] == [1]
    assert children["fetch#2"].attempts == ()
    assert [op.value for op in one.trace if op.path[-1] == "attempt"] == [3]  # failed attempts' writes discarded
    assert delays == [0.5, 1.0, 0.5]
    retried = [line for line in story.lines() if "[Retry]" in line]
    assert len(retried) == 3 and "retried Fetch (attempt 2 of 3) after TimeoutError: item 1 try 1" in retried[0]


def test_a_map_child_that_fails_every_attempt_fails_the_map_with_its_attempts() -> None:
    """When the policy is spent the child fails as without one (``MapError`` with its index),
    and its commit still lists the attempts that failed before the last."""
    from flowchart import Retry, failed_run

    chart = chart_of(flaky_child({}, {2: 5}), retry=Retry(attempts=2, sleep=lambda s: None))
    with pytest.raises(MapError, match=r"map 'fetch' failed at item 2: TimeoutError: item 2 try 2") as info:
        chart.run()
    failed = failed_run(info.value)
    assert failed is not None
    commit = next(c for c in failed[0].commit_log if c.runtime_stage_id == "fetch#4")
    assert [(a.attempt, a.message) for a in commit.attempts] == [(1, "item 2 try 1")]


def test_the_runs_default_retry_reaches_map_children_too() -> None:
    """``run(retry=...)`` is every stage's default, map children included."""
    from flowchart import Retry

    result = chart_of(flaky_child({}, {0: 1})).run(retry=Retry(attempts=2, sleep=lambda s: None))
    assert result.state["pages"][0] == 0
    assert [a.attempt for a in result.commit_log[1].attempts] == [1]


def test_retry_on_a_map_of_a_chart_child_is_a_build_error() -> None:
    """A chart child's stages take their own retry=; the map refuses one at build time."""
    from flowchart import Retry

    child = flow_chart("One", lambda s: None, "one").build()
    with pytest.raises(BuildError, match=r"map 'fetch': retry= applies to a function child; its child is a chart"):
        chart_of(child, retry=Retry())
    with pytest.raises(BuildError, match=r"retry of 'fetch' must be a flowchart.Retry"):
        chart_of(lambda s, c: None, retry=3)
