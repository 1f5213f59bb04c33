"""A narrative nobody reads live keeps the run's hook calls and tells them when first read.

What these tests hold: while a run goes, a default narrative (no live reader, default
summaries) makes one call of its own per hook the engine calls — no numbering, wording or
line objects — and the narrative it tells when read is the one a narrative told line by line
(``follow``) tells, entry for entry: numbering across subflows, loops, decisions, a read in
the middle of the run, and every value as it was when its stage ran.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from call_counts import calls_into, module_files

from flowchart import decide, flow_chart
from flowchart import events as ev
from flowchart.events import TraversalContext
from flowchart.recorders.narrative import NarrativeRecorder, narrative

#: the narrative's own code: the recorder, its lazy pieces, its sentences and summaries
_NARRATIVE_FILES = module_files(
    (
        "flowchart.recorders.narrative",
        "flowchart.recorders.narrative_lines",
        "flowchart.recorders.sentences",
        "flowchart._core.summary",
    )
)


def _narrative_calls(run: Callable[[], Any]) -> Counter[str]:
    """The Python calls ``run()`` makes into the narrative's own modules, by function name."""
    return calls_into(_NARRATIVE_FILES, run)


def _count(scope: Any) -> None:
    scope.count = getattr(scope, "count", 0) + 1


def _chain(stages: int) -> Any:
    builder = flow_chart("S0", _count, "s0")
    for index in range(1, stages):
        builder = builder.add_function(f"S{index}", _count, f"s{index}")
    return builder.build()


def _live(rec: NarrativeRecorder) -> NarrativeRecorder:
    """A narrative with ``rec``'s options, told line by line as the run goes (a live reader)."""
    twin = attrs.evolve(rec)
    twin.follow(lambda _entry: None)
    return twin


def test_a_narrative_nobody_reads_yet_makes_one_call_per_hook_while_the_run_goes() -> None:
    """50 linear stages: the engine calls ``take_stage_ops`` and ``take_stage_executed`` once
    each per stage, and that is all the narrative runs of its own (it numbered, qualified and
    built line objects per stage before: nine calls a stage). The words come when read."""
    chart, rec = _chain(50), narrative()
    calls = _narrative_calls(lambda: chart.run(recorders=[rec]))
    assert calls == {"take_stage_ops": 50, "take_stage_executed": 50}
    lines = rec.lines()
    first = ["Stage 1: The process began with S0.", "Step 1: Read count = undefined", "Step 2: Write count = 1"]
    assert lines[:3] == first
    assert lines[-3:] == ["Stage 50: Next, it moved on to S49.", "Step 1: Read count = 49", "Step 2: Write count = 50"]


def _again(scope: Any) -> Any:
    return decide(scope, [{"when": {"count": {"lt": 3}}, "then": "again", "label": "Need more"}], "done")


def _loop_chart() -> Any:
    return (
        flow_chart("Seed", lambda scope: setattr(scope, "items", []), "seed")
        .add_function("Grow", lambda scope: (scope.items.append(len(scope.items)), _count(scope)), "grow")
        .add_decider_function("Check", _again, "check")
        .add_function_branch("again", "Again", lambda scope: None, loop_to="grow")
        .add_function_branch("done", "Done", lambda scope: setattr(scope, "last", scope.items[-1]))
        .end()
        .build()
    )


def test_decisions_and_loops_cost_one_call_each_and_tell_what_a_live_narrative_tells() -> None:
    """A decision and a loop are kept as one call each (the kept event), a list read as its
    length; nothing is numbered or worded during the run. The narrative read afterwards equals,
    record for record, the one told line by line while the same run went."""
    rec = narrative()
    calls = _narrative_calls(lambda: _loop_chart().run(recorders=[rec]))
    live = _live(rec)
    _loop_chart().run(recorders=[live])
    # decide() summarises its evidence itself (summarize_value); a list's length is told once
    # per length in a process (Told's __init__), then shared
    kept = {"take_stage_ops", "take_stage_executed", "keep", "snapshot_view", "told_length"}
    assert kept <= set(calls) <= kept | {"__init__", "summarize_value"}
    assert calls["__init__"] <= 4  # lengths 0 to 3, the first time any narrative meets them
    assert calls["keep"] == 3 + 2  # three decisions, two loops
    assert calls["take_stage_executed"] == 10 and calls["take_stage_ops"] == 8  # Again writes nothing
    assert rec.records() == live.records()
    assert "Step 1: Read items = (2 items)" in rec.lines()  # the list as Grow read it on pass 3


def _note_stage(rec: NarrativeRecorder, seen: list[list[str]]) -> Callable[[Any], None]:
    def middle(scope: Any) -> None:
        seen.append(rec.lines())  # a read while the run goes on
        scope.mid = len(seen)

    return middle


def test_a_read_in_the_middle_of_the_run_then_the_rest_tells_one_narrative() -> None:
    """A stage that reads the narrative mid-run gets the lines told so far; the run goes on
    keeping its calls, and the final narrative equals one told line by line throughout."""
    rec, seen = narrative(), []
    chart = _chain(3)
    spliced = (
        flow_chart("A", _count, "a")
        .add_function("Mid", _note_stage(rec, seen), "mid")
        .add_subflow_chart_next("inner", chart, mount_name="Inner")
        .add_function("Z", _count, "z")
        .build()
    )
    spliced.run(recorders=[rec])
    live = narrative()
    live.follow(lambda _entry: None)
    spliced_live = (
        flow_chart("A", _count, "a")
        .add_function("Mid", _note_stage(live, []), "mid")
        .add_subflow_chart_next("inner", chart, mount_name="Inner")
        .add_function("Z", _count, "z")
        .build()
    )
    spliced_live.run(recorders=[live])
    assert seen == [["Stage 1: The process began with A.", "Step 1: Read count = undefined", "Step 2: Write count = 1"]]
    assert rec.records() == live.records()
    assert "Stage 1: The process began with inner/S0." in rec.lines()


def _grow_topic(scope: Any) -> None:
    scope.topic = scope.topic + "!"


def test_a_subflow_input_is_told_as_it_was_when_the_subflow_was_entered() -> None:
    """The subflow changes the key it was given; its ``Input:`` line, told only when the
    narrative is read after the run, still shows the value the mapper handed in."""
    inner = flow_chart("Shout", _grow_topic, "shout").build()
    chart = (
        flow_chart("Seed", lambda scope: setattr(scope, "topic", "cats"), "seed")
        .add_subflow_chart_next("writer", inner, mount_name="Writer", input_mapper=lambda s: {"topic": s["topic"]})
        .build()
    )
    rec = narrative()
    chart.run(recorders=[rec])
    assert 'Input: topic = "cats"' in rec.lines()
    assert 'Step 2: Write topic = "cats!"' in rec.lines()


def test_save_state_tells_the_kept_calls_first() -> None:
    """``save_state`` (what a checkpoint carries) tells the kept calls first: the stage counts
    and visits are those of every stage so far, as a narrative told line by line has them."""
    rec = narrative()
    _loop_chart().run(recorders=[rec])
    live = _live(rec)
    _loop_chart().run(recorders=[live])
    state = narrative().save_state()
    assert state == {"stages": {}, "started": [], "visits": {}}
    assert rec.save_state() == live.save_state()
    assert rec.save_state()["stages"] == {"": 10}


def test_stage_context_is_the_class_call_filled_faster() -> None:
    """The context the engine fills slot by slot for a stage (``Traverser.context``) is the very
    value ``TraversalContext(...)`` makes: equal, same hash and repr, and still frozen."""

    class Taker:
        def __init__(self) -> None:
            self.seen: list[TraversalContext] = []

        def take_stage_executed(self, ctx: TraversalContext, *_: Any) -> None:
            self.seen.append(ctx)

    def inner(scope: Any) -> None:
        scope.x = 1

    def outer(scope: Any) -> None:
        scope.y = 1

    sub = flow_chart("In", inner, "in").build()
    taker = Taker()
    flow_chart("Out", outer, "out").add_subflow_chart_next("sub", sub).build().run(recorders=[taker])
    assert [c.stage_id for c in taker.seen] == ["out", "sub", "sub/in"]
    for made in taker.seen:
        assert type(made) is TraversalContext
        fields = [getattr(made, f.name) for f in attrs.fields(TraversalContext)]
        called = TraversalContext(*fields)
        assert made == called and hash(made) == hash(called) and repr(made) == repr(called)
    assert taker.seen[2].subflow_id == "sub" and taker.seen[2].depth == 1
    with pytest.raises(attrs.exceptions.FrozenInstanceError, match="can't set attribute"):
        taker.seen[0].stage_id = "other"  # type: ignore[misc]


def test_a_stage_whose_operations_came_in_parts_is_told_as_a_live_narrative_tells_it() -> None:
    """A kept stage's batch and headline are one record; when the stage also had operations fed
    live before its batch, or a second batch, its steps number on across all of them exactly as
    a narrative told line by line numbers them, and the plain stage beside them is unchanged."""

    def feed(rec: NarrativeRecorder) -> None:
        one = TraversalContext("r", "one", "one#0", "One")
        rec.on_read(ev.ReadEvent(one, "live", 1))  # fed live: told before the batch's steps
        rec.take_stage_ops(one, [("read", "a", 2, "", False), ("write", "b", 3, "set", False)])
        rec.take_stage_executed(one, "One", None, "linear")
        two = TraversalContext("r", "two", "two#1", "Two")
        rec.take_stage_ops(two, [("write", "c", 4, "set", False)])
        rec.take_stage_ops(two, [("missing", "d", None, "", False)])  # a second batch, same stage
        rec.take_stage_executed(two, "Two", "adds c", "linear")
        three = TraversalContext("r", "three", "three#2", "Three")
        rec.take_stage_ops(three, [("read", "c", 4, "", False)])
        rec.take_stage_executed(three, "Three", None, "linear")

    kept, live = narrative(), _live(narrative())
    feed(kept)
    feed(live)
    assert (
        kept.lines()
        == live.lines()
        == [
            "Stage 1: The process began with One.",
            "Step 1: Read live = 1",
            "Step 2: Read a = 2",
            "Step 3: Write b = 3",
            "Stage 2: Next step: adds c.",
            "Step 1: Write c = 4",
            "Step 2: Read d = undefined",
            "Stage 3: Next, it moved on to Three.",
            "Step 1: Read c = 4",
        ]
    )
