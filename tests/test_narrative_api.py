"""The narrative's footprintjs-style API: ``entries_for_step``, ``step_count``, ``id``, ``renderer``."""

from __future__ import annotations

from typing import Any

from flowchart import flow_chart, narrative
from flowchart.recorders.rendering import OpRenderContext, StageRenderContext


def _chart() -> Any:
    def seed(scope: Any) -> None:
        scope.count = 0
        scope._internal = "x"

    def work(scope: Any) -> None:
        scope.count = scope.count + 1

    return flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build()


def test_entries_for_step_groups_one_execution_step():
    """``entries_for_step(rid)`` returns that step's stage line and its steps, in order."""
    rec = narrative()
    _chart().run(recorders=[rec])
    assert [e.text for e in rec.entries_for_step("work#1")] == [
        "Stage 2: Next, it moved on to Work.",
        "Step 1: Read count = 0",
        "Step 2: Write count = 1",
    ]
    assert rec.entries_for_step("nope#9") == []


def test_step_count_counts_distinct_execution_steps():
    """Two stages that produced entries make ``step_count == 2``."""
    rec = narrative()
    _chart().run(recorders=[rec])
    assert rec.step_count == 2


def test_narrative_takes_an_id():
    """``narrative(id=...)`` names the recorder."""
    assert narrative(id="audit").id == "audit"
    assert narrative().id == "narrative"


class Terse:
    """A team's own phrasing: short stage lines, internal keys hidden, other ops default."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def render_stage(self, ctx: StageRenderContext) -> str:
        self.seen.append(ctx)
        return f"#{ctx.stage_number} {ctx.stage_name}"

    def render_op(self, ctx: OpRenderContext) -> str | None:
        self.seen.append(ctx)
        if ctx.key.startswith("_"):
            return ""  # left out
        if ctx.type == "write":
            return f"  {ctx.key} := {ctx.raw_value!r}"
        return None  # footprintjs's default sentence


def test_renderer_rephrases_stages_and_steps_but_keeps_the_structure():
    """``render_stage``/``render_op`` change the words; types, depths and stages stay the engine's."""
    terse = Terse()
    rec = narrative(renderer=terse)
    _chart().run(recorders=[rec])
    assert rec.entries() == [
        ("stage", 0, "#1 Seed"),
        ("step", 1, "  count := 0"),
        ("stage", 0, "#2 Work"),
        ("step", 1, "Step 1: Read count = 0"),
        ("step", 1, "  count := 1"),
    ]
    assert terse.seen[0] == StageRenderContext("Seed", 1, True, None, None)
    assert OpRenderContext("write", "_internal", "x", '"x"', "set", 2) in terse.seen


def test_a_renderer_without_hooks_changes_nothing():
    """An object with no render hooks gives footprintjs's default narrative."""
    plain, custom = narrative(), narrative(renderer=object())
    _chart().run(recorders=[plain])
    _chart().run(recorders=[custom])
    assert custom.entries() == plain.entries()
