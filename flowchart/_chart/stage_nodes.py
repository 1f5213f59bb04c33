"""The nodes a builder makes that carry more than a function: a Pausable, a subflow mount.

Law: a node's own parts (its description, a ``Pausable``'s halves, a mounted chart and
its ``array_merge``) are checked when the node is made. A mistake is handed to the
builder's ``problem`` callback, naming the stage and the fix — collected, never raised,
so ``build()`` reports it (``flowchart/_chart/builder.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowchart._core.nodes import Pausable, StageCallable, StageNode, SubflowMount

StageFn = Callable[..., Any]
Problem = Callable[[str, str], None]
"""How a node reports a mistake: ``problem(message, stage_id)`` (the builder collects it)."""


def describe(description: Any, stage_id: str, problem: Problem) -> str | None:
    """``description`` when it is a string or ``None``; anything else is a problem."""
    if description is None or isinstance(description, str):
        return description
    problem(f"description of '{stage_id}' must be a string, got {type(description).__name__}", stage_id)
    return None


def pausable_node(problem: Problem, name: str, pausable: Any, stage_id: str, description: str | None) -> StageNode:
    """A two-phase stage node from a ``Pausable(execute, resume[, answer])``."""
    node = StageNode("pausable", name, stage_id, describe(description, stage_id, problem))
    if not isinstance(pausable, Pausable):
        problem(f"pausable stage '{stage_id}' needs a Pausable(execute=..., resume=...)", stage_id)
        return node
    try:
        node.execute = StageCallable.of(pausable.execute, base_arity=1, where=f"execute of '{stage_id}'")
        node.resume = StageCallable.of(pausable.resume, base_arity=2, where=f"resume of '{stage_id}'")
        if pausable.answer is not None:
            node.answer = StageCallable.of(pausable.answer, base_arity=2, where=f"answer of '{stage_id}'")
    except TypeError as exc:
        problem(str(exc), stage_id)
    return node


def mount_node(
    problem: Problem,
    stage_id: str,
    chart: Any,
    mount_name: str | None,
    input_mapper: Callable[[Any], Any] | None,
    output_mapper: Callable[[Any, Any], Any] | None,
    propagate_break: bool,
    array_merge: str,
    description: str | None,
) -> StageNode:
    """A subflow node mounting a built ``chart`` (its mappers cross the boundary)."""
    from flowchart._chart.chart import FlowChart

    node = StageNode("subflow", mount_name or stage_id, stage_id, describe(description, stage_id, problem))
    if not isinstance(chart, FlowChart):
        problem(
            f"subflow '{stage_id}' needs a built FlowChart (call .build() on it), got {type(chart).__name__}", stage_id
        )
        return node
    if array_merge not in ("concat", "replace"):
        problem(f"array_merge of subflow '{stage_id}' must be 'concat' or 'replace', got {array_merge!r}", stage_id)
    node.mount = SubflowMount(chart, input_mapper, output_mapper, propagate_break, array_merge)  # type: ignore[arg-type]
    return node


__all__ = ["Problem", "StageFn", "describe", "mount_node", "pausable_node"]
