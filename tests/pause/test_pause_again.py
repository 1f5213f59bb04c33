"""``pause_again(data)`` from a ``resume`` half: the same stage pauses once more.

``execute`` still runs once; each resume runs ``resume`` once; the frame (continuation,
namespace, subflow path) is kept, so the run goes on where it would have.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import Checkpoint, FlowChart, Pausable, flow_chart
from flowchart._core.pause import pause_again


def collecting(calls: list[str], label: str, wanted: int) -> Pausable:
    """Pauses until it has ``wanted`` answers, asking again from its resume half."""

    def execute(scope: Any) -> Any:
        calls.append(f"{label}:execute")
        scope.got = []
        return {"need": wanted}

    def resume(scope: Any, answer: Any) -> Any:
        calls.append(f"{label}:resume")
        scope.got = [*scope.got, answer]
        if len(scope.got) < wanted:
            return pause_again({"need": wanted - len(scope.got)})
        return None

    return Pausable(execute, resume)


def top(calls: list[str]) -> FlowChart:
    """seed → ask (needs 3 answers) → done."""
    return (
        flow_chart("Seed", lambda s: calls.append("seed"), "seed")
        .add_pausable_function("Ask", collecting(calls, "ask", 3), "ask")
        .add_function("Done", lambda s: calls.append("done"), "done")
        .build()
    )


def in_subflow_branch(calls: list[str]) -> FlowChart:
    """seed → pick (selector) ─ 'sf' (a subflow whose ask needs 2 answers) ─ → done."""
    inner = flow_chart("Ask", collecting(calls, "ask", 2), "ask").add_function(
        "Finish", lambda s: calls.append("finish"), "finish"
    )
    return (
        flow_chart("Seed", lambda s: calls.append("seed"), "seed")
        .add_selector_function("Pick", lambda s: ["sf"], "pick")
        .add_subflow_chart_branch("sf", inner.build(), output_mapper=lambda sub, parent: {"got": sub["got"]})
        .end()
        .add_function("Done", lambda s: calls.append("done"), "done")
        .build()
    )


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (top, [["seed", "ask:execute"], ["ask:resume"], ["ask:resume"], ["ask:resume", "done"]]),
        (in_subflow_branch, [["seed", "ask:execute"], ["ask:resume"], ["ask:resume", "finish", "done"]]),
    ],
    ids=["top", "subflow-in-selector"],
)
def test_pause_again_keeps_the_frame_and_never_reruns_execute(make: Any, expected: list[list[str]]) -> None:
    """Each resume runs the resume half once; after the last answer the run continues."""
    calls: list[str] = []
    result = make(calls).run()
    seen = [list(calls)]
    frames = [result.checkpoint.frames]  # type: ignore[union-attr]
    n = 0
    while result.paused:
        n += 1
        calls.clear()
        cp = Checkpoint.from_json(result.checkpoint.to_json())  # type: ignore[union-attr]
        result = make(calls).resume(cp, n)
        seen.append(list(calls))
        if result.checkpoint is not None:
            frames.append(result.checkpoint.frames)
    assert seen == expected
    assert all(f == frames[0] for f in frames)
    assert result.state["got"] == list(range(1, n + 1))


def test_pause_again_data_is_checked_and_continues_the_counter() -> None:
    """The new pause data is in the new checkpoint, and runtime ids keep counting up."""
    calls: list[str] = []
    first = top(calls).run()
    second = top(calls).resume(first.checkpoint, "a")  # type: ignore[arg-type]
    assert second.checkpoint is not None and first.checkpoint is not None
    assert second.checkpoint.pause_data == {"need": 2}
    assert second.checkpoint.execution_count == first.checkpoint.execution_count + 1
    assert [c.runtime_stage_id for c in second.commit_log] == [f"ask#{first.checkpoint.execution_count}"]


def test_pause_again_needs_data() -> None:
    """``pause_again(None)`` is refused: ``None`` means go on."""
    with pytest.raises(ValueError, match=r"^pause_again\(data\): data must not be None"):
        pause_again(None)
