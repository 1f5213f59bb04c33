"""``FlowChart``: a built chart — its graph, spec, description, fingerprint, and how to run it.

Laws:
- Immutable once built. ``graph`` is a ``networkx.DiGraph`` (node key = full stage id,
  subflow stages under ``mount/inner``; edge ``kind`` in ``next | branch | child |
  subflow | loop``); without its ``loop`` edges it is a DAG.
- ``spec`` is JSON-safe and flat (one entry per stage, so a 10,000-stage chart needs no
  recursion); ``fingerprint`` is the SHA-256 of the spec's canonical JSON — the same in
  every process, different when the structure changes. Functions are not part of it.
- The entry points (``run`` / ``arun`` / ``resume`` / ``aresume`` / ``resume_run`` /
  ``stream`` / ``astream``) are thin: each checks its keywords into one ``RunOptions``
  and calls the ``Launcher`` the façade bound (``flowchart/_launch.py``), because the
  structure sits below the engine, the store and the streams. A chart keeps nothing of
  a run: not its store (``resume_run`` finds that by run id), not its options.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from flowchart._chart.scoping import Scopes, mount_scopes, scoped_rule
from flowchart._core.errors import RunError
from flowchart._core.fingerprint import spec_fingerprint
from flowchart._core.nodes import StageNode, iter_nodes
from flowchart._core.options import DEFAULT_MAX_ITERATIONS, RunOptions, stream_options

if TYPE_CHECKING:
    import networkx as nx

    from flowchart._core.cancel import CancelToken
    from flowchart._core.pause import Checkpoint
    from flowchart._core.redaction import Redaction
    from flowchart._core.retry import Retry
    from flowchart._record.result import RunResult
    from flowchart.store.protocol import RunStore
    from flowchart.stream import AsyncRunStream, RunStream

__all__ = ["FlowChart", "Launcher"]


class Launcher(Protocol):
    """How a chart's entry points start a run: ``flowchart/_launch.py``, bound by the façade.

    The structure sits below the engine, the store and the streams, so it cannot import
    them; the layer above that can (``flowchart/_launch.py``) implements these and hands
    itself to each chart it builds: the public ``flow_chart`` / ``FlowChartBuilder`` live
    there and pass ``launcher=`` to the structure's builder. Each takes the chart and the
    ``RunOptions`` its entry point checked.
    """

    def run(self, chart: FlowChart, input: Any, options: RunOptions) -> RunResult: ...
    def arun(self, chart: FlowChart, input: Any, options: RunOptions) -> Awaitable[RunResult]: ...
    def resume(self, chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions) -> RunResult: ...
    def aresume(
        self, chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions
    ) -> Awaitable[RunResult]: ...
    def resume_run(self, chart: FlowChart, run_id: str, input: Any, options: RunOptions) -> RunResult: ...
    def stream(self, chart: FlowChart, input: Any, modes: Any, options: RunOptions) -> RunStream: ...
    def astream(self, chart: FlowChart, input: Any, modes: Any, options: RunOptions) -> AsyncRunStream: ...
    def fork(
        self, chart: FlowChart, source: Any, at: int | tuple[int, ...], patch: Any, options: RunOptions
    ) -> RunResult: ...


class FlowChart:
    """A built chart. Make one with ``flow_chart(...)...build()``."""

    def __init__(self, root: StageNode, nodes: dict[str, StageNode], launcher: Launcher | None = None) -> None:
        self._root = root
        self._nodes = nodes
        self._launch = launcher
        self._loop_stubs: dict[str, StageNode] = {}
        #: its mounts' own rules (``flowchart._chart.scoping``), made once, here: the chart is immutable
        self.mounts: Scopes = mount_scopes(nodes.values())
        self._mount_rule = scoped_rule(self.mounts, None)

    def _rule(self, given: Redaction | None) -> Redaction | None:
        """The rule a run records under: ``given`` with the scopes of its mounts' own rules."""
        mounts = self._mount_rule
        if mounts is None:
            return given
        return mounts if given is None else given.union(mounts)

    def _launcher(self) -> Launcher:
        if self._launch is None:
            raise RunError(
                f"chart '{self.name}' has no entry points: it was built with flowchart._chart.builder's "
                "FlowChartBuilder; build it with flowchart.flow_chart(...) or flowchart.FlowChartBuilder()"
            )
        return self._launch

    # -- structure --------------------------------------------------------------------------
    @property
    def root(self) -> StageNode:
        """The first stage."""
        return self._root

    @property
    def name(self) -> str:
        """The root stage's name (the chart's name in descriptions)."""
        return self._root.name

    def find(self, stage_id: str) -> StageNode:
        """The node with this (chart-local) id; ``KeyError`` naming it when absent."""
        try:
            return self._nodes[stage_id]
        except KeyError:
            raise KeyError(f"stage '{stage_id}' is not in chart '{self.name}'") from None

    def loop_stub(self, target: str) -> StageNode:
        """A loop edge to ``target`` (used when resuming into a loop continuation)."""
        stub = self._loop_stubs.get(target)
        if stub is None:
            self.find(target)
            stub = StageNode("loop", target, target)
            stub.loop_to = target
            self._loop_stubs[target] = stub
        return stub

    @functools.cached_property
    def needs_loop(self) -> bool:
        """True when some stage (here or in a subflow) is async, so runs need an event loop."""
        for node in iter_nodes(self._root):
            if node.is_async or (node.mount is not None and node.mount.chart.needs_loop):
                return True
        return False

    @functools.cached_property
    def subflows(self) -> dict[str, FlowChart]:
        """The mounted subflow charts by mount id (nested ones as ``outer/inner``), footprintjs ``subflows``."""
        found: dict[str, FlowChart] = {}
        for node in iter_nodes(self._root):
            if node.mount is None:
                continue
            inner = node.mount.chart
            found[node.id] = inner
            for nested_id, nested in inner.subflows.items():
                found[f"{node.id}/{nested_id}"] = nested
        return found

    def stage_ids(self) -> list[str]:
        """Every stage id of this chart (not of its subflows), in a stable order."""
        return [n.id for n in iter_nodes(self._root) if n.kind != "loop"]

    @functools.cached_property
    def spec(self) -> dict[str, Any]:
        """A JSON-safe, flat description of the structure (no functions)."""
        stages = []
        for node in iter_nodes(self._root):
            if node.kind == "loop":
                continue
            entry: dict[str, Any] = {"id": node.id, "name": node.name, "kind": node.kind}
            if node.description is not None:
                entry["description"] = node.description
            if node.next is not None:
                if node.next.kind == "loop":
                    entry["loop_to"] = node.next.loop_to
                else:
                    entry["next"] = node.next.id
            if node.branches:
                entry["branches"] = {bid: b.id for bid, b in node.branches.items()}
            if node.default_branch is not None:
                entry["default"] = node.default_branch
            if node.children:
                entry["children"] = [c.id for c in node.children]
            if node.fail_fast:
                entry["fail_fast"] = True
            if node.map is not None:
                entry["map"] = node.map.to_spec()
            if node.mount is not None:
                entry["subflow"] = node.mount.chart.spec
                entry["propagate_break"] = node.mount.propagate_break
                entry["array_merge"] = node.mount.array_merge
            stages.append(entry)
        return {"root": self._root.id, "name": self._root.name, "stages": stages}

    @functools.cached_property
    def fingerprint(self) -> str:
        """SHA-256 of the spec's canonical JSON: stable across processes."""
        return spec_fingerprint(self.spec)

    @functools.cached_property
    def graph(self) -> nx.DiGraph:
        """The chart as a networkx DiGraph (subflow stages under prefixed ids)."""
        from flowchart._chart.drawing import build_graph

        return build_graph(self)

    @functools.cached_property
    def description(self) -> str:
        """``FlowChart: <root>\\nSteps:\\n1. ...`` — the chart in words."""
        from flowchart._chart.drawing import describe

        return describe(self)

    def to_mermaid(self) -> str:
        """A mermaid ``flowchart TD`` of the chart (branches labelled, loops dotted, subflows boxed)."""
        from flowchart._chart.drawing import mermaid

        return mermaid(self)

    def __repr__(self) -> str:
        return f"<FlowChart {self.name!r} stages={len(self._nodes)} fingerprint={self.fingerprint[:12]}>"

    # -- running ------------------------------------------------------------------------------------
    def run(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        store: RunStore | None = None,
        run_id: str | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """Run the chart to its end or its first pause. See ``arun`` for the arguments.

        With ``store`` the run is recorded there (id ``run_id``, else a fresh one, and
        ``result.run_id`` is it): continue a pause with ``resume_run(run_id, input, store=)``.
        Without one, ``run_id`` (when given) is the run's id: ``ctx.run_id``, ``result.run_id``
        and its trace carry it. Either way it follows the run-id rule (``flowchart._core.run_ids``).
        """
        options = RunOptions(
            env, recorders, max_iterations, timeout, self._rule(redaction), cancel, store, run_id, retry
        )
        return self._launcher().run(self, input, options)

    async def arun(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """Run the chart inside the caller's event loop (fork children run concurrently).

        ``input`` is the read-only run input (``ctx.args``); ``env`` an environment that
        is never recorded; ``recorders`` observers; ``max_iterations`` the per-target loop
        cap; ``timeout`` seconds for the whole run; ``redaction`` what to hide in recordings;
        ``cancel`` a ``CancelToken`` whose ``cancel(reason)`` ends the run before its next
        stage with ``RunCancelledError`` (the running stage's writes commit); ``retry`` the
        default ``Retry`` policy of every stage that has none of its own (docs/durable.md).
        """
        options = RunOptions(env, recorders, max_iterations, timeout, self._rule(redaction), cancel, retry=retry)
        return await self._launcher().arun(self, input, options)

    def stream(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        modes: Iterable[str] | str | None = None,
        store: RunStore | None = None,
        run_id: str | None = None,
        **run_options: Any,
    ) -> RunStream:
        """Run the chart and iterate its events as they happen (see docs/streaming.md).

        ``run_options`` are ``run()``'s (env, recorders, max_iterations, timeout,
        redaction); ``modes`` picks event kinds. The last event is ``final``, whose
        ``result`` is the ``RunResult``; leaving the loop early cancels the run.
        """
        options = stream_options(run_options, store, run_id)
        return self._launcher().stream(self, input, modes, options.but(redaction=self._rule(options.redaction)))

    def astream(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        modes: Iterable[str] | str | None = None,
        store: RunStore | None = None,
        run_id: str | None = None,
        **run_options: Any,
    ) -> AsyncRunStream:
        """``stream`` on the caller's event loop: ``async for event in chart.astream(...)``."""
        options = stream_options(run_options, store, run_id)
        return self._launcher().astream(self, input, modes, options.but(redaction=self._rule(options.redaction)))

    def resume(
        self,
        checkpoint: Checkpoint,
        input: Any = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """Resume a paused run: the paused stage's ``resume(scope, input)`` runs, then the rest.

        A failed run's checkpoint (``err.checkpoint``) re-runs the stage that failed, from the
        state before its partial commit, and goes on (docs/durable.md).
        """
        options = RunOptions(env, recorders, max_iterations, timeout, self._rule(redaction), cancel, retry=retry)
        return self._launcher().resume(self, checkpoint, input, options)

    def resume_run(
        self,
        run_id: str,
        input: Any = None,
        *,
        store: RunStore | None = None,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """Answer the pause of the stored run ``run_id`` with ``input`` (once: a second
        answer raises ``AlreadyAnsweredError``) and run on; the outcome is recorded.

        A ``failed`` run is continued at the stage that failed instead (``input`` must be
        ``None``): that stage re-runs from the state before its partial commit, nothing that
        committed runs again, and the store decides races (one process wins).

        ``store`` defaults to the store this process recorded ``run_id`` in (``run(...,
        store=...)``): the memory is per run id, in the store layer (``store_of``), not on the
        immutable chart, so two runs of one chart in two stores each resume from their own.
        """
        options = RunOptions(
            env, recorders, max_iterations, timeout, self._rule(redaction), store=store, run_id=run_id, retry=retry
        )
        return self._launcher().resume_run(self, run_id, input, options)

    def fork(
        self,
        source: Any,
        at: int | tuple[int, ...],
        patch: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        store: RunStore | None = None,
        run_id: str | None = None,
        reuse: bool = False,
    ) -> RunResult:
        """A new run that continues ``source`` (a ``Trace``, a ``RunResult`` or a run id in
        ``store``) after its commit ``at`` — or, with ``at = (m, j)``, after commit ``j`` of the
        subflow whose mount committed at ``m`` — with ``patch`` (state key → JSON value)
        written as the fork's first commit. The options are ``run()``'s; with ``store`` the fork is
        recorded there with its lineage. ``reuse=True``: a stage whose recorded reads did not
        change is taken from the record (``result.reused`` names each). See docs/durable.md."""
        options = RunOptions(
            env, recorders, max_iterations, timeout, self._rule(redaction), cancel, store, run_id, reuse=reuse
        )
        return self._launcher().fork(self, source, at, patch, options)

    async def aresume(
        self,
        checkpoint: Checkpoint,
        input: Any = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = DEFAULT_MAX_ITERATIONS,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """``resume`` inside the caller's event loop."""
        options = RunOptions(env, recorders, max_iterations, timeout, self._rule(redaction), cancel, retry=retry)
        return await self._launcher().aresume(self, checkpoint, input, options)
