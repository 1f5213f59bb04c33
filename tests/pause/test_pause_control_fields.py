"""Control fields a resume trusts must agree with the pause: ``execution_count`` never hands
out a runtime id already used, and the stages on the resume path must have run."""

from __future__ import annotations

import attrs
import pause_charts
import pytest

from flowchart import Checkpoint, CheckpointError


def paused(name: str = "nested") -> tuple[Checkpoint, object]:
    """A real checkpoint and a chart to resume it on."""
    calls: list[str] = []
    chart = pause_charts.CHARTS[name](calls)
    cp = chart.run({"who": "ada"}).checkpoint
    assert cp is not None
    return cp, chart


def test_a_lowered_execution_count_is_refused_before_anything_runs() -> None:
    """``execution_count`` below the number of visits would repeat runtime ids: refused at resume."""
    cp, chart = paused()
    total = sum(cp.visit_counts.values())
    cp = attrs.evolve(cp, execution_count=total - 1)
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid checkpoint: execution_count {total - 1} is lower than the {total} stage visits in "
        r"visit_counts: the resumed run would repeat runtime ids already used @ \$\.execution_count$",
    ):
        chart.resume(cp, "yes")  # type: ignore[attr-defined]


def test_a_paused_stage_that_never_ran_is_refused() -> None:
    """``visit_counts`` without a visit of the paused stage contradicts the pause."""
    cp, chart = paused()
    cp = attrs.evolve(cp, visit_counts={k: v for k, v in cp.visit_counts.items() if k != cp.paused_stage_id})
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid checkpoint: '{cp.paused_stage_id}' is on the resume path \(frames\[2\]\) but visit_counts "
        r"says it never ran @ \$\.visit_counts",
    ):
        chart.resume(cp, "yes")  # type: ignore[attr-defined]


def test_more_loops_than_visits_is_refused() -> None:
    """A loop target looped to more often than it ran contradicts the counts."""
    cp, chart = paused()
    target = cp.paused_stage_id
    cp.loop_counts[target] = cp.visit_counts[target] + 1
    with pytest.raises(CheckpointError, match=rf"^Invalid checkpoint: '{target}' was looped to \d+ time\(s\) but ran"):
        chart.resume(cp, "yes")  # type: ignore[attr-defined]


def test_an_untouched_checkpoint_resumes() -> None:
    """The counters a real run writes pass (the checks refuse contradictions only)."""
    cp, chart = paused()
    assert chart.resume(Checkpoint.from_json(cp.to_json()), "yes").paused is False  # type: ignore[attr-defined]
