"""The fluent builder: ``flow_chart(name, fn, id)...build()`` → an immutable ``FlowChart``.

Laws:
- Argument order is footprintjs's: ``(name, fn, id)`` for stages, ``(branch_id, name, fn)``
  for branches; ``description`` is keyword-only everywhere (never silently ignored).
- A structural mistake is collected while building, not raised at the call that made it;
  ``build()`` raises the FIRST one as a ``BuildError`` naming the stage and the fix (fix it
  and build again to see the next) — so a chart either builds whole or not at all.
  Where footprintjs has a message for the mistake, it comes first, in footprintjs's words
  (the stage NAME it quotes, Python method names), then `` — `` and the fix.
- A decider and a selector on one node are mutually exclusive (as in footprintjs): a
  selector right after a decider is refused rather than chained after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from flowchart._chart.branches import BranchList
from flowchart._chart.stage_nodes import StageFn, describe, mount_node, pausable_node
from flowchart._core.errors import BuildError
from flowchart._core.nodes import Pausable, StageCallable, StageNode, iter_nodes
from flowchart._core.retry import Retry

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart, Launcher

_FORBIDDEN_ID_CHARS = ("/", "#")


class FlowChartBuilder:
    """Builds a chart stage by stage. Start with ``flow_chart(...)`` or ``.start(...)``."""

    def __init__(self, launcher: Launcher | None = None) -> None:
        #: what the built chart's entry points run through (``flowchart/_launch.py`` passes itself)
        self._launch = launcher
        self._root: StageNode | None = None
        self._cursor: StageNode | None = None
        self._ids: dict[str, StageNode] = {}
        self._chain_ids: set[str] = set()
        self._problems: list[BuildError] = []
        self._loops: list[tuple[StageNode, str, bool]] = []
        self._closed_by: str | None = None
        self._open_list: BranchList | None = None

    # -- bookkeeping ----------------------------------------------------------------------
    def _problem(self, message: str, stage_id: str | None = None) -> None:
        self._problems.append(BuildError(message, stage_id=stage_id))

    def _register(self, node: StageNode, *, chain: bool) -> StageNode:
        stage_id = node.id
        if not isinstance(stage_id, str) or not stage_id:
            self._problem(f"stage '{node.name}' needs a non-empty string id, got {stage_id!r}")
        elif any(ch in stage_id for ch in _FORBIDDEN_ID_CHARS):
            self._problem(
                f"stage id '{stage_id}' contains '/' or '#', which runtime stage ids use as separators — "
                "choose an id without them",
                stage_id,
            )
        if stage_id in self._ids:
            self._problem(
                f"duplicate stage id '{stage_id}': every stage, branch and child needs its own id — rename one",
                stage_id,
            )
        else:
            self._ids[stage_id] = node
        if chain:
            self._chain_ids.add(stage_id)
        return node

    def _append(self, node: StageNode) -> FlowChartBuilder:
        if self._root is None or self._cursor is None:  # footprintjs refuses at once, in these words
            raise BuildError(
                f"cursor undefined; call start() first — cannot add '{node.id}' before the first stage: "
                "start the chart with flow_chart(name, fn, id) or FlowChartBuilder().start(name, fn, id)",
                stage_id=node.id,
            )
        if self._closed_by is not None:
            self._problem(
                f"cannot add '{node.id}' after loop_to('{self._closed_by}'): a loop ends the chain — "
                "add stages before the loop_to call",
                node.id,
            )
            return self
        self._register(node, chain=True)
        self._cursor.next = node
        self._cursor = node
        return self

    def _node(self, kind: Any, name: str, fn: StageFn | None, stage_id: str, description: str | None) -> StageNode:
        node = StageNode(kind, name, stage_id, describe(description, stage_id, self._problem))
        if fn is not None:
            try:
                node.fn = StageCallable.of(fn, base_arity=1, where=f"stage '{stage_id}'")
            except TypeError as exc:
                self._problem(str(exc), stage_id)
        return node

    def _retry(self, node: StageNode, retry: Any) -> StageNode:
        """Give ``node`` its ``Retry`` policy (``None``: the run's default, if any)."""
        if retry is not None and not isinstance(retry, Retry):
            self._problem(
                f"retry of '{node.id}' must be a flowchart.Retry (e.g. Retry(attempts=3)), got {type(retry).__name__}",
                node.id,
            )
            return node
        node.retry = retry
        return node

    # -- entry ------------------------------------------------------------------------------
    def start(
        self,
        name: str,
        fn: StageFn | Pausable,
        stage_id: str,
        *,
        description: str | None = None,
        retry: Retry | None = None,
    ) -> FlowChartBuilder:
        """Set the root stage (a function or a ``Pausable``)."""
        if self._root is not None:
            self._problem("root already defined; create a new builder with flow_chart(...)", stage_id)
            return self
        node = pausable_node(self._problem, name, fn, stage_id, description) if isinstance(fn, Pausable) else None
        if node is None:
            node = self._node("stage", name, fn if callable(fn) else None, stage_id, description)
            if not callable(fn):
                self._problem(f"stage '{stage_id}' has no function — pass a callable or a Pausable", stage_id)
        self._retry(node, retry)
        self._register(node, chain=True)
        self._root = self._cursor = node
        return self

    # -- linear stages ------------------------------------------------------------------------
    def add_function(
        self, name: str, fn: StageFn, stage_id: str, *, description: str | None = None, retry: Retry | None = None
    ) -> FlowChartBuilder:
        """Append a plain stage ``fn(scope[, ctx])`` (``retry``: its ``Retry`` policy)."""
        if not callable(fn):
            self._problem(f"stage '{stage_id}' has no function — provide a fn argument to add_function", stage_id)
        node = self._node("stage", name, fn if callable(fn) else None, stage_id, description)
        return self._append(self._retry(node, retry))

    def add_map(
        self,
        name: str,
        fn: StageFn | FlowChart,
        stage_id: str,
        *,
        items: Callable[[Any], Any],
        into: str,
        concurrency: int = 8,
        fail_fast: bool = True,
        description: str | None = None,
        retry: Retry | None = None,
    ) -> FlowChartBuilder:
        """Append a map: one run of ``fn`` (a function or a chart) per item of ``items(scope)``,
        ``concurrency`` at a time, results gathered into ``into`` in item order (docs/durable.md).
        ``retry`` is each function child's policy (a chart child's stages take their own)."""
        from flowchart._chart.mapping import map_node

        node = map_node(
            name,
            fn,
            stage_id,
            items=items,
            into=into,
            concurrency=concurrency,
            fail_fast=fail_fast,
            description=describe(description, stage_id, self._problem),
            problem=self._problem,
        )
        if retry is not None and node.mount is not None:
            self._problem(
                f"map '{stage_id}': retry= applies to a function child; its child is a chart, whose "
                "stages take their own retry= (or run(retry=...))",
                stage_id,
            )
            return self._append(node)
        return self._append(self._retry(node, retry))

    def add_pausable_function(
        self,
        name: str,
        pausable: Pausable,
        stage_id: str,
        *,
        description: str | None = None,
        retry: Retry | None = None,
    ) -> FlowChartBuilder:
        """Append a two-phase stage (``Pausable(execute, resume)``); ``retry`` applies to each half."""
        return self._append(self._retry(pausable_node(self._problem, name, pausable, stage_id, description), retry))

    def add_decider_function(
        self, name: str, fn: StageFn, stage_id: str, *, description: str | None = None, retry: Retry | None = None
    ) -> BranchList:
        """Append a decider: ``fn`` returns a branch id or a ``decide()`` result."""
        node = self._retry(self._node("decider", name, fn, stage_id, description), retry)
        self._append(node)
        return BranchList(self, node, "decider")

    def add_selector_function(
        self,
        name: str,
        fn: StageFn,
        stage_id: str,
        *,
        description: str | None = None,
        fail_fast: bool = False,
        retry: Retry | None = None,
    ) -> BranchList:
        """Append a selector: ``fn`` returns branch ids (or a ``select()`` result) to run in parallel."""
        cursor = self._cursor
        if cursor is not None and cursor.kind == "decider":
            self._problem(
                f"decider and selector are mutually exclusive at '{cursor.name}' — add a stage between "
                "them (add_function) if the selector should run after the decider's branch",
                cursor.id,
            )
        node = self._retry(self._node("selector", name, fn, stage_id, description), retry)
        node.fail_fast = fail_fast
        self._append(node)
        return BranchList(self, node, "selector")

    def add_list_of_function(
        self, children: Sequence[tuple[str, str, StageFn]], *, fail_fast: bool = False, retry: Retry | None = None
    ) -> FlowChartBuilder:
        """Fork: run ``(id, name, fn)`` children in parallel after the current stage
        (``retry``: the ``Retry`` policy of each child, retried on its own)."""
        parent = self._cursor
        if parent is None:
            self._problem("add_list_of_function needs a stage before it: call flow_chart(name, fn, id) first")
            return self
        if not children:
            self._problem(f"add_list_of_function under '{parent.id}' needs at least one child", parent.id)
        for entry in children:
            if not (isinstance(entry, tuple | list) and len(entry) == 3):
                self._problem(
                    f"fork children under '{parent.id}' must be (id, name, fn) tuples, got {entry!r}", parent.id
                )
                continue
            child_id, child_name, fn = entry
            if not child_id:
                self._problem(
                    f"child id required under '{parent.name}' — give each (id, name, fn) child a non-empty id",
                    parent.id,
                )
                continue
            if any(c.id == child_id for c in parent.children):
                self._problem(
                    f"duplicate child id '{child_id}' under '{parent.name}' — give each child its own id", parent.id
                )
                continue
            node = self._node("stage", child_name, fn if callable(fn) else None, child_id, None)
            if not callable(fn):
                self._problem(f"fork child '{child_id}' under '{parent.id}' has no function", child_id)
            self._retry(node, retry)
            self._register(node, chain=False)
            parent.children.append(node)
        parent.fail_fast = parent.fail_fast or fail_fast
        return self

    # -- subflows -------------------------------------------------------------------------------
    def add_subflow_chart_next(
        self,
        stage_id: str,
        chart: FlowChart,
        *,
        mount_name: str | None = None,
        input_mapper: Callable[[Any], Any] | None = None,
        output_mapper: Callable[[Any, Any], Any] | None = None,
        propagate_break: bool = False,
        array_merge: Literal["concat", "replace"] = "concat",
        description: str | None = None,
    ) -> FlowChartBuilder:
        """Mount ``chart`` as the next stage; it runs in its own state (see the mappers)."""
        node = mount_node(
            self._problem,
            stage_id,
            chart,
            mount_name,
            input_mapper,
            output_mapper,
            propagate_break,
            array_merge,
            description,
        )
        return self._append(node)

    def add_agent(
        self,
        name: str,
        agent: Any,
        stage_id: str,
        *,
        message: Callable[[Any], str],
        into: str,
        identity: Callable[[Any], Any] | None = None,
        description: str | None = None,
    ) -> FlowChartBuilder:
        """Mount an agent (anything with ``as_subflow(message=, into=, identity=)``, such as
        ``agent.Agent``) as the next stage: its run is a subflow of this chart, sent
        ``message(state)`` and writing its answer to ``into``. flowchart knows no agent: the
        mounted object says which chart runs and how state goes in and out, and (optionally)
        its own ``redaction`` rule, ``hidden_outputs``, ``timeout`` and ``max_iterations`` —
        applied inside the mount — and ``narrate_emits`` (default no)."""
        mount = getattr(agent, "as_subflow", None)
        if not callable(mount):
            self._problem(
                f"add_agent('{name}'): expected an agent (an object with as_subflow(message=, into=)), "
                f"got {type(agent).__name__}",
                stage_id,
            )
            return self
        if not callable(message):
            self._problem(f"add_agent('{name}'): message= must be a function state -> str", stage_id)
            return self
        if not isinstance(into, str) or not into:
            self._problem(f"add_agent('{name}'): into= must name the state key the answer is written to", stage_id)
            return self
        parts = mount(message=message, into=into, identity=identity)
        self.add_subflow_chart_next(
            stage_id,
            parts.chart,
            mount_name=name,
            input_mapper=parts.input_mapper,
            output_mapper=parts.output_mapper,
            description=description,
        )
        node = self._cursor
        if node is not None and node.id == stage_id and node.mount is not None:
            # the agent's events are its listeners': a narrative of this chart leaves them out; its
            # own run options (rule, timeout, loop limit) apply inside the mount
            node.mount = attrs.evolve(
                node.mount,
                quiet_emits=not getattr(parts, "narrate_emits", False),
                redaction=getattr(parts, "redaction", None),
                hidden_outputs=tuple(getattr(parts, "hidden_outputs", ())),
                timeout=getattr(parts, "timeout", None),
                max_iterations=getattr(parts, "max_iterations", None),
            )
        return self

    def add_subflow_chart(
        self,
        stage_id: str,
        chart: FlowChart,
        *,
        mount_name: str | None = None,
        input_mapper: Callable[[Any], Any] | None = None,
        output_mapper: Callable[[Any, Any], Any] | None = None,
        propagate_break: bool = False,
        array_merge: Literal["concat", "replace"] = "concat",
        description: str | None = None,
    ) -> FlowChartBuilder:
        """Mount ``chart`` as a parallel child of the current stage (a fork child)."""
        parent = self._cursor
        if parent is None:
            self._problem("add_subflow_chart needs a stage before it: call flow_chart(name, fn, id) first")
            return self
        if any(c.id == stage_id for c in parent.children):
            self._problem(
                f"duplicate child id '{stage_id}' under '{parent.name}' — give each child its own id", parent.id
            )
            return self
        node = mount_node(
            self._problem,
            stage_id,
            chart,
            mount_name,
            input_mapper,
            output_mapper,
            propagate_break,
            array_merge,
            description,
        )
        self._register(node, chain=False)
        parent.children.append(node)
        return self

    # -- loops and the end ----------------------------------------------------------------------------
    def loop_to(self, stage_id: str) -> FlowChartBuilder:
        """Loop back to an earlier stage of this chart after the current one. Ends the chain."""
        cursor = self._cursor
        if cursor is None:
            self._problem("loop_to needs a stage before it: call flow_chart(name, fn, id) first")
            return self
        if self._closed_by is not None:
            self._problem(
                f"loop_to already defined at '{cursor.name}' — a chain loops once (to '{self._closed_by}'): "
                "remove the second loop_to",
                cursor.id,
            )
            return self
        stub = StageNode("loop", stage_id, stage_id)
        stub.loop_to = stage_id
        cursor.next = stub
        self._loops.append((cursor, stage_id, False))
        self._closed_by = stage_id
        return self

    def build(self) -> FlowChart:
        """Check the whole structure and return the immutable chart (or raise ``BuildError``)."""
        from flowchart._chart.chart import FlowChart

        if self._root is None:
            raise BuildError("empty tree; call start() first — start the chart with flow_chart(name, fn, id)")
        if self._open_list is not None:
            self._open_list._validate()
        for node in self._ids.values():
            if node.children and node.kind in ("decider", "selector"):
                self._problem(
                    f"{node.kind} '{node.id}' also has parallel children "
                    f"({', '.join(c.id for c in node.children)}): a {node.kind} runs only its branches — "
                    "add a stage after it (add_function) and fork from that stage",
                    node.id,
                )
        for source, target, from_branch in self._loops:
            target_node = self._ids.get(target)
            if target_node is None:
                self._problem(
                    f"loop_to('{target}') target not found — did you pass a stage name instead of id? — "
                    f"from '{source.id}', pass the id of a stage declared in this chart",
                    source.id,
                )
            elif target not in self._chain_ids:
                where = "a branch" if from_branch else "'" + source.id + "'"
                self._problem(
                    f"loop_to('{target}') from {where}: '{target}' is a branch or fork child — a loop must "
                    "target a stage on the main chain, declared before the decider",
                    source.id,
                )
        if self._problems:
            raise self._problems[0]
        for node in iter_nodes(self._root):
            node.seal()
        return FlowChart(self._root, dict(self._ids), self._launch)


__all__ = ["BranchList", "FlowChartBuilder", "StageFn"]
