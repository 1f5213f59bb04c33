"""Map stages: the structure of ``add_map`` — one child run per item of a list in state.

Laws:
- A map is ONE stage of a fixed chart: its spec (``"map": {"into", "concurrency",
  "fail_fast"}``, and the child chart's spec as ``subflow`` when the child is a chart)
  does not depend on the data, so neither does the fingerprint.
- Its mistakes are build errors naming the stage: no ``items`` callable, an ``into`` that
  is not a state key, a concurrency below 1, a child that is neither a function nor a
  built chart, and a child chart that could pause (a map child cannot: see
  docs/durable.md, "Maps").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.nodes import StageCallable, StageNode, SubflowMount, iter_nodes

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart


@attrs.frozen(slots=True)
class MapSpec:
    """How a map stage runs: ``items(scope)`` lists the items, each child's result lands in
    ``into`` (item order), at most ``concurrency`` children run at once, and with
    ``fail_fast`` the first failing child (by index) fails the map."""

    items: Callable[[Any], Any]
    into: str
    concurrency: int
    fail_fast: bool

    def to_spec(self) -> dict[str, Any]:
        """The JSON-safe part of the spec (no functions)."""
        return {"into": self.into, "concurrency": self.concurrency, "fail_fast": self.fail_fast}


def _can_pause(chart: FlowChart) -> str | None:
    for node in iter_nodes(chart.root):
        if node.kind == "pausable":
            return node.id
        if node.mount is not None:
            inner = _can_pause(node.mount.chart)
            if inner is not None:
                return f"{node.id}/{inner}"
    return None


def map_node(
    name: str,
    child: Any,
    stage_id: str,
    *,
    items: Any,
    into: Any,
    concurrency: Any,
    fail_fast: Any,
    description: str | None,
    problem: Callable[[str, str], None],
) -> StageNode:
    """The node of ``add_map``; every mistake is reported through ``problem(message, stage_id)``."""
    from flowchart._chart.chart import FlowChart

    node = StageNode("stage", name, stage_id, description)
    if not callable(items):
        problem(f"map '{stage_id}' needs items=<function of the scope returning a list>, got {items!r}", stage_id)
    if not isinstance(into, str) or not into:
        problem(f"map '{stage_id}' needs into=<state key the results are written to>, got {into!r}", stage_id)
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        problem(f"map '{stage_id}': concurrency must be a positive integer, got {concurrency!r}", stage_id)
        concurrency = 1
    if isinstance(child, FlowChart):
        paused = _can_pause(child)
        if paused is not None:
            problem(
                f"map '{stage_id}': its child chart has a pausable stage '{paused}', but a map child cannot "
                "pause (the run pauses at one stage) — pause before or after the map instead",
                stage_id,
            )
        node.mount = SubflowMount(child)
    elif callable(child):
        try:
            node.fn = StageCallable.of(child, base_arity=1, where=f"map '{stage_id}'")
        except TypeError as exc:
            problem(str(exc), stage_id)
    else:
        problem(
            f"map '{stage_id}' needs a child: a function fn(scope, ctx) or a built FlowChart, "
            f"got {type(child).__name__}",
            stage_id,
        )
    node.map = MapSpec(items, into if isinstance(into, str) else "", concurrency, bool(fail_fast))
    return node
