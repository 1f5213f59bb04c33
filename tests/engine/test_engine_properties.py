"""Properties over random charts: replay equals live state at every commit; runs are deterministic;
a narrative told when read is the one told line by line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from counted_twin import CountedTwin
from engine_charts import StateTape
from engine_strategies import apply_actions, build_random_chart, segments
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowchart import narrative, replay
from flowchart._core.values import copy_json
from flowchart._stream.stream_tap import StreamTap

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def canonical(value: Any) -> str:
    """Type-exact comparison form (``1``, ``1.0`` and ``true`` differ)."""
    return json.dumps(value, sort_keys=True)


class Harness:
    """Builds a random chart whose stages record what they believe the state is."""

    def __init__(self, plan: list[Any]) -> None:
        self.tape = StateTape()
        self.views: dict[str, dict[str, Any]] = {}
        self.chart = build_random_chart(plan, self.root, self.stage)

    def root(self, scope: Any) -> None:
        self.tape.grab(scope)

    def stage(self, todo: list[Any], in_fork: bool) -> Any:
        def fn(scope: Any, ctx: Any) -> None:
            apply_actions(scope, todo)
            if not in_fork:
                self.views[ctx.runtime_stage_id] = {k: copy_json(scope[k]) for k in scope}

        return fn


@SETTINGS
@given(segments)
def test_replay_equals_the_live_state_after_every_commit(plan):
    """For random charts and writes, ``replay(log, i)`` is the live state right after commit ``i``."""
    harness = Harness(plan)
    result = harness.chart.run(recorders=[harness.tape])
    log = result.commit_log
    assert len(harness.tape.snapshots) == len(log)
    for i, snapshot in enumerate(harness.tape.snapshots):
        assert canonical(replay(log, i)) == canonical(snapshot)
    assert canonical(replay(log)) == canonical(result.state)


@SETTINGS
@given(segments)
def test_each_stage_commit_leaves_exactly_the_state_the_stage_saw(plan):
    """What a (non-fork) stage saw at its end is, type for type, the committed state after it."""
    harness = Harness(plan)
    result = harness.chart.run(recorders=[harness.tape])
    by_rid = {c.runtime_stage_id: i for i, c in enumerate(result.commit_log)}
    for rid, view in harness.views.items():
        assert canonical(harness.tape.snapshots[by_rid[rid]]) == canonical(view), rid


@SETTINGS
@given(segments)
def test_two_runs_give_identical_commit_logs(plan):
    """The same chart run twice leaves byte-identical commit logs and states."""
    harness = Harness(plan)
    first = harness.chart.run()
    second = harness.chart.run()
    assert [c.to_dict() for c in first.commit_log] == [c.to_dict() for c in second.commit_log]
    assert canonical(first.state) == canonical(second.state)


def _acting(todo: list[Any], _in_fork: bool) -> Any:
    return lambda scope, ctx: apply_actions(scope, todo)


@SETTINGS
@given(segments, st.booleans())
def test_a_narrative_told_when_read_is_the_one_told_line_by_line(plan, noted):
    """For random charts (every kind of scope mutation, deciders, loops, forks), a narrative
    nobody follows — its calls kept and told when first read — gives the very records of a
    narrative told line by line as the run went; with a noted key too (its teller is called
    with the value as it was written). Counted as a stream reads it, each call announces
    exactly the entries it is told as (``CountedTwin.check``)."""
    notes = {"b": lambda value: f"b is now {canonical(value)}"} if noted else None
    chart = build_random_chart(plan, lambda scope: None, _acting)
    kept, live = narrative(notes=notes), narrative(notes=notes)
    live.follow(lambda _entry: None)
    counted = CountedTwin(kept)
    chart.run(recorders=[kept])
    chart.run(recorders=[live])
    chart.run(recorders=[counted.rec])
    assert kept.records() == live.records()
    counted.check(kept)


def _shape(events: list[Any]) -> list[tuple[str, str, str]]:
    """Each stream event as (kind, runtime stage id, text of a narrative line)."""
    return [(e.kind, e.runtime_stage_id, e.text if e.kind == "narrative" else "") for e in events]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(segments)
def test_a_counted_stream_is_the_stream_told_line_by_line(monkeypatch: pytest.MonkeyPatch, plan: Any) -> None:
    """For random charts (writes, deciders, loops, forks), the counted stream's events are the
    live-told stream's: the same kinds, stages, order and narrative texts."""
    chart = build_random_chart(plan, lambda scope: None, _acting)
    counted = _shape(list(chart.stream()))
    with monkeypatch.context() as patch:
        patch.setattr(StreamTap, "_follow", lambda tap, rec: rec.follow(tap._line, tap._lines))
        live = _shape(list(chart.stream()))
    assert counted == live
    rec = narrative()
    chart.run(recorders=[rec])
    assert [text for kind, _rid, text in counted if kind == "narrative"] == rec.lines()
