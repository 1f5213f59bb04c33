"""Properties over random charts: splitting a run with pauses changes nothing but the log.

Random charts of plain stages, pausable stages, deciders (whose branches may pause),
pausables inside loops and subflows holding any of these are run three ways:

- *inline*: a twin chart whose pausable ``execute`` does its work, then the ``resume``
  work with the answer the test would give, and returns ``None`` (never pauses);
- *json*: every pause answered by resuming a freshly built chart from
  ``Checkpoint.from_json(checkpoint.to_json())``;
- *memory*: every pause answered on the same chart from the checkpoint object itself.

The stage calls and the final state of all three agree, and *json* and *memory* agree on
every commit log and every checkpoint (but its run id and time).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import Checkpoint, FlowChart, FlowChartBuilder, Pausable, RunResult, flow_chart

Spec = list[tuple[Any, ...]]

simple_segments = st.one_of(
    st.just(("plain",)),
    st.just(("pause",)),
    st.tuples(st.just("decide"), st.lists(st.booleans(), min_size=1, max_size=3), st.integers(0, 2)),
    st.tuples(st.just("loop"), st.integers(1, 3)),
)
segments = st.one_of(simple_segments, st.tuples(st.just("sub"), st.lists(simple_segments, min_size=1, max_size=3)))
specs = st.lists(segments, min_size=1, max_size=6)


def answer(pause_data: Any) -> str:
    """The answer the test gives to a pause (the inline twin computes the same one)."""
    return f"{pause_data['id']}/{pause_data['k']}"


class Builder:
    """Builds the chart of a spec: the pausing one, or its inline twin; records every call."""

    def __init__(self, calls: list[str], *, inline: bool) -> None:
        self.calls = calls
        self.inline = inline

    def plain(self, label: str) -> Callable[[Any], None]:
        def fn(scope: Any) -> None:
            self.calls.append(label)
            scope.trail = [*getattr(scope, "trail", []), label]

        return fn

    def pausable(self, label: str) -> Pausable:
        def execute_work(scope: Any) -> dict[str, Any]:
            self.calls.append(f"{label}:x")
            scope.trail = [*getattr(scope, "trail", []), f"{label}:x"]
            return {"id": label, "k": len(scope.trail)}

        def resume(scope: Any, given: Any) -> None:
            self.calls.append(f"{label}:r")
            scope.trail = [*scope.trail, f"{label}:r:{given}"]

        def execute(scope: Any) -> Any:
            data = execute_work(scope)
            if not self.inline:
                return data
            resume(scope, answer(data))
            return None

        return Pausable(execute, resume)

    def add(self, b: FlowChartBuilder, sid: str, segment: tuple[Any, ...]) -> FlowChartBuilder:
        kind = segment[0]
        if kind == "plain":
            return b.add_function(sid, self.plain(sid), sid)
        if kind == "pause":
            return b.add_pausable_function(sid, self.pausable(sid), sid)
        if kind == "decide":
            flags, choice = segment[1], segment[2] % len(segment[1])

            def decider(scope: Any) -> str:
                self.calls.append(sid)
                return f"{sid}b{choice}"

            branches = b.add_decider_function(sid, decider, sid)
            for j, pauses in enumerate(flags):
                bid = f"{sid}b{j}"
                if pauses:
                    branches.add_pausable_function_branch(bid, bid, self.pausable(bid))
                else:
                    branches.add_function_branch(bid, bid, self.plain(bid))
            return branches.end()
        if kind == "loop":
            passes = segment[1]

            def check(scope: Any) -> str:
                self.calls.append(f"{sid}c")
                return f"{sid}again" if scope.trail.count(f"{sid}:x") < passes else f"{sid}out"

            return (
                b.add_pausable_function(sid, self.pausable(sid), sid)
                .add_decider_function(f"{sid}c", check, f"{sid}c")
                .add_function_branch(f"{sid}again", "again", self.plain(f"{sid}again"), loop_to=sid)
                .add_function_branch(f"{sid}out", "out", self.plain(f"{sid}out"))
                .end()
            )
        assert kind == "sub"
        inner = self.build(segment[1], f"{sid}i")
        return b.add_subflow_chart_next(
            sid,
            inner,
            input_mapper=lambda parent: {"trail": [f"into {sid}"]},
            output_mapper=lambda sub, parent: {f"{sid}_out": dict(sub)},
        )

    def build(self, spec: Spec, prefix: str = "s") -> FlowChart:
        b = flow_chart("start", self.plain(f"{prefix}start"), f"{prefix}start")
        for i, segment in enumerate(spec):
            b = self.add(b, f"{prefix}{i}", segment)
        return b.build()


def run_pausing(spec: Spec, *, via_json: bool) -> tuple[list[RunResult], list[str]]:
    """Run the pausing chart and answer every pause (through JSON on a new chart, or not)."""
    calls: list[str] = []
    chart = Builder(calls, inline=False).build(spec)
    results = [chart.run()]
    while results[-1].paused:
        assert len(results) < 100
        checkpoint = results[-1].checkpoint
        assert checkpoint is not None
        reply = answer(checkpoint.pause_data)
        if via_json:
            chart = Builder(calls, inline=False).build(spec)
            checkpoint = Checkpoint.from_json(checkpoint.to_json())
        results.append(chart.resume(checkpoint, reply))
    return results, calls


def trace_of(result: RunResult) -> dict[str, Any]:
    """Everything a resume recorded, minus its run id and the checkpoint's time."""
    checkpoint = result.checkpoint.to_dict() if result.checkpoint else None
    if checkpoint is not None:
        del checkpoint["run_id"], checkpoint["paused_at"]
    return {
        "state": result.state,
        "log": [c.to_dict() for c in result.commit_log],
        "subflows": {
            k: [c.to_dict() for c in v.commit_log] for k, v in result.subflow_results.items() if k == v.runtime_stage_id
        },
        "checkpoint": checkpoint,
    }


@settings(max_examples=120, deadline=None)
@given(specs)
def test_pauses_answered_through_json_equal_pauses_answered_inline(spec: Spec) -> None:
    """Property: the same calls, in the same order, and the same final state as the twin
    that never pauses."""
    inline_calls: list[str] = []
    inline = Builder(inline_calls, inline=True).build(spec).run()
    assert not inline.paused
    results, calls = run_pausing(spec, via_json=True)
    assert calls == inline_calls
    assert results[-1].state == inline.state
    assert len(results) - 1 == sum(1 for c in calls if c.endswith(":r"))


@settings(max_examples=80, deadline=None)
@given(specs)
def test_resume_after_a_json_round_trip_equals_resume_without(spec: Spec) -> None:
    """Property: resuming from ``from_json(to_json())`` on a new chart records exactly what
    resuming from the checkpoint object on the same chart does."""
    via_json, json_calls = run_pausing(spec, via_json=True)
    in_memory, memory_calls = run_pausing(spec, via_json=False)
    assert json_calls == memory_calls
    assert [trace_of(r) for r in via_json] == [trace_of(r) for r in in_memory]
    runtime_ids = [c.runtime_stage_id for r in in_memory for c in r.commit_log]
    assert len(runtime_ids) == len(set(runtime_ids))
