"""Shared charts and helpers for the engine tests (imported by name: no package needed)."""

from __future__ import annotations

import copy
import re
from typing import Any

from flowchart import FlowChart, flow_chart
from flowchart._core.scope import transaction_of


def exact(message: str) -> str:
    """A ``pytest.raises(match=...)`` pattern matching ``message`` exactly."""
    return "^" + re.escape(message) + "$"


def noop(scope: Any) -> None:
    """A stage that does nothing."""


def inner_chart() -> FlowChart:
    """A two-stage subflow: ``inner`` then ``inner2``."""
    return flow_chart("In", noop, "inner").add_function("In2", noop, "inner2").build()


def sample_chart() -> FlowChart:
    """seed → work → check (again: loops to work | done: subflow) → after (fork x, y)."""
    return (
        flow_chart("Seed", noop, "seed", description="seeds state")
        .add_function("Work", noop, "work")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("again", "Again", noop, loop_to="work")
        .add_subflow_chart_branch("done", inner_chart(), mount_name="Sub")
        .set_default("done")
        .end()
        .add_function("After", noop, "after")
        .add_list_of_function([("x", "X", noop), ("y", "Y", noop)])
        .build()
    )


class StateTape:
    """Records a deep copy of the live top-level state at every top-level commit.

    The root stage must call ``tape.grab(scope)`` so the tape can see the live state dict.
    """

    def __init__(self) -> None:
        self.state: dict[str, Any] | None = None
        self.snapshots: list[dict[str, Any]] = []

    def grab(self, scope: Any) -> None:
        if self.state is None:
            self.state = transaction_of(scope).state

    def on_commit(self, event: Any) -> None:
        if event.ctx.subflow_path == () and self.state is not None:
            self.snapshots.append(copy.deepcopy(self.state))


class CommitTape:
    """Records every commit the engine reports (also from runs that raise)."""

    def __init__(self) -> None:
        self.commits: list[Any] = []

    def on_commit(self, event: Any) -> None:
        self.commits.append(event.commit)

    @property
    def ids(self) -> list[str]:
        return [c.runtime_stage_id for c in self.commits]
