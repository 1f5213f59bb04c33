"""The branches of a decider or selector: ``add_decider_function(...)...end()``.

Law: a branch list is checked when it closes (``end()``, the next branch list, or
``build()``): at least one branch, a default that names one of them, unique branch ids,
and only a decider's branches loop or have a default. Like every builder mistake, each is
collected and ``build()`` raises the first (``flowchart/_chart/builder.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal

from flowchart._chart.stage_nodes import StageFn, mount_node, pausable_node
from flowchart._core.nodes import Pausable, StageNode
from flowchart._core.retry import Retry

if TYPE_CHECKING:
    from flowchart._chart.builder import FlowChartBuilder
    from flowchart._chart.chart import FlowChart


class BranchList:
    """The branches of a decider or selector; ``end()`` returns to the chart builder."""

    def __init__(self, builder: FlowChartBuilder, node: StageNode, kind: Literal["decider", "selector"]) -> None:
        self._builder = builder
        self._node = node
        self._kind = kind
        self._validated = False
        if builder._open_list is not None:
            builder._open_list._validate()
        builder._open_list = self

    def _add(self, branch: StageNode, branch_id: str, loop_to: str | None) -> BranchList:
        node = self._node
        if branch_id in node.branches:
            self._builder._problem(
                f"duplicate {self._kind} branch id '{branch_id}' under '{node.name}' — give each branch its own id",
                node.id,
            )
            return self
        branch.branch_id = branch_id
        self._builder._register(branch, chain=False)
        node.branches[branch_id] = branch
        if loop_to is not None:
            if self._kind == "selector":
                self._builder._problem(
                    f"selector branch '{branch_id}' under '{node.id}' cannot loop_to: only decider branches loop",
                    branch_id,
                )
            stub = StageNode("loop", loop_to, loop_to)
            stub.loop_to = loop_to
            branch.next = stub
            self._builder._loops.append((branch, loop_to, True))
        return self

    def add_function_branch(
        self,
        branch_id: str,
        name: str,
        fn: StageFn,
        *,
        description: str | None = None,
        loop_to: str | None = None,
        retry: Retry | None = None,
    ) -> BranchList:
        """A branch running ``fn``; ``loop_to`` jumps back to an earlier stage after it."""
        if not callable(fn):
            self._builder._problem(
                f"{self._kind} branch '{branch_id}' under '{self._node.id}' has no function — provide a fn "
                f"argument to add_function_branch('{branch_id}', ...)",
                branch_id,
            )
        branch = self._builder._node("stage", name, fn if callable(fn) else None, branch_id, description)
        return self._add(self._builder._retry(branch, retry), branch_id, loop_to)

    def add_pausable_function_branch(
        self,
        branch_id: str,
        name: str,
        pausable: Pausable,
        *,
        description: str | None = None,
        loop_to: str | None = None,
        retry: Retry | None = None,
    ) -> BranchList:
        """A two-phase branch (``Pausable(execute, resume)``)."""
        node = pausable_node(self._builder._problem, name, pausable, branch_id, description)
        return self._add(self._builder._retry(node, retry), branch_id, loop_to)

    def add_subflow_chart_branch(
        self,
        branch_id: str,
        chart: FlowChart,
        *,
        mount_name: str | None = None,
        input_mapper: Callable[[Any], Any] | None = None,
        output_mapper: Callable[[Any, Any], Any] | None = None,
        propagate_break: bool = False,
        array_merge: Literal["concat", "replace"] = "concat",
        description: str | None = None,
    ) -> BranchList:
        """A branch that runs a whole subflow chart."""
        node = mount_node(
            self._builder._problem,
            branch_id,
            chart,
            mount_name,
            input_mapper,
            output_mapper,
            propagate_break,
            array_merge,
            description,
        )
        return self._add(node, branch_id, None)

    def add_branch_list(self, branches: Iterable[tuple[str, str, StageFn]]) -> BranchList:
        """Several function branches at once: ``[(branch_id, name, fn), ...]``."""
        for branch_id, name, fn in branches:
            self.add_function_branch(branch_id, name, fn)
        return self

    def set_default(self, branch_id: str) -> BranchList:
        """The branch taken when the decider returns an id no branch has."""
        if self._kind == "selector":
            self._builder._problem(
                f"set_default('{branch_id}') on selector '{self._node.id}': only deciders have a default", self._node.id
            )
        self._node.default_branch = branch_id
        return self

    def _validate(self) -> None:
        if self._validated:
            return
        self._validated = True
        node = self._node
        if not node.branches:
            self._builder._problem(
                f"{self._kind} at '{node.name}' requires at least one branch — add one with add_function_branch",
                node.id,
            )
        if node.default_branch is not None and node.default_branch not in node.branches:
            self._builder._problem(
                f"set_default('{node.default_branch}') under '{node.id}': no such branch "
                f"(branches: {', '.join(node.branches) or 'none'})",
                node.id,
            )
        if self._builder._open_list is self:
            self._builder._open_list = None

    def end(self) -> FlowChartBuilder:
        """Close the branch list and go on building the chart."""
        self._validate()
        return self._builder


__all__ = ["BranchList"]
