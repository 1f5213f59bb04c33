"""``FlowChart``: a built chart — its graph, spec, description, fingerprint, and how to run it.

Laws:
- Immutable once built. ``graph`` is a ``networkx.DiGraph`` (node key = full stage id,
  subflow stages under ``mount/inner``; edge ``kind`` in ``next | branch | child |
  subflow | loop``); without its ``loop`` edges it is a DAG.
- ``spec`` is JSON-safe and flat (one entry per stage, so a 10,000-stage chart needs no
  recursion); ``fingerprint`` is the SHA-256 of the spec's canonical JSON — the same in
  every process, different when the structure changes. Functions are not part of it.
- ``run()`` needs no event loop when no stage is ``async`` (the traversal coroutine is
  driven directly); otherwise it runs one with ``asyncio.run``. ``arun()`` always awaits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import hashlib
import json
from collections.abc import Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .errors import RunError
from .nodes import StageNode, iter_nodes

if TYPE_CHECKING:
    import networkx as nx

    from .cancel import CancelToken
    from .pause import Checkpoint
    from .redaction import Redaction
    from .result import RunResult
    from .retry import Retry
    from .store.protocol import RunStore
    from .stream import AsyncRunStream, RunStream


def spec_fingerprint(spec: Any) -> str:
    """SHA-256 of a chart spec's canonical JSON (sorted keys, no spaces): the chart's identity."""
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def drive(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run a coroutine that never suspends (a chart with no async stage) without a loop."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RunError("internal: a chart without async stages suspended; please report this with the chart")


def run_coroutine(make: Any, needs_loop: bool) -> Any:
    """Run ``make()``'s coroutine: directly when nothing awaits, else in a fresh event loop.

    When the calling thread already runs a loop (a notebook, a test harness) the fresh loop
    runs in a helper thread, so ``chart.run()`` works there too; ``arun`` is the way to
    share the caller's loop.
    """
    if not needs_loop:
        return drive(make(False))
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make(True))
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowchart-run") as pool:
        # the helper thread runs in a copy of the caller's context (its current span, its contextvars)
        return pool.submit(contextvars.copy_context().run, asyncio.run, make(True)).result()


class FlowChart:
    """A built chart. Make one with ``flow_chart(...)...build()``."""

    def __init__(self, root: StageNode, nodes: dict[str, StageNode]) -> None:
        self._root = root
        self._nodes = nodes
        self._loop_stubs: dict[str, StageNode] = {}
        #: the run store of the last ``run(store=...)``, so ``resume_run(run_id, input)`` finds it
        self._store: RunStore | None = None

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
        from .drawing import build_graph

        return build_graph(self)

    @functools.cached_property
    def description(self) -> str:
        """``FlowChart: <root>\\nSteps:\\n1. ...`` — the chart in words."""
        from .drawing import describe

        return describe(self)

    def to_mermaid(self) -> str:
        """A mermaid ``flowchart TD`` of the chart (branches labelled, loops dotted, subflows boxed)."""
        from .drawing import mermaid

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
        max_iterations: int = 1000,
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
        """
        from .engine.runner import start_run

        if store is not None:
            from .store.runs import run_chart

            self._store = store

            return run_chart(
                self, store, input, run_id, env=env, recorders=recorders, max_iterations=max_iterations,
                timeout=timeout, redaction=redaction, cancel=cancel, retry=retry,
            )  # fmt: skip

        def make(concurrent: bool) -> Coroutine[Any, Any, RunResult]:
            return start_run(
                self, input, env=env, recorders=recorders, max_iterations=max_iterations,
                timeout=timeout, redaction=redaction, concurrent=concurrent, cancel=cancel, retry=retry,
            )  # fmt: skip

        return run_coroutine(make, self.needs_loop or timeout is not None)

    async def arun(
        self,
        input: Mapping[str, Any] | None = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = 1000,
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
        from .engine.runner import start_run

        return await start_run(
            self, input, env=env, recorders=recorders, max_iterations=max_iterations,
            timeout=timeout, redaction=redaction, concurrent=True, cancel=cancel, retry=retry,
        )  # fmt: skip

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
        from .stream import RunStream, chart_plan

        return RunStream(chart_plan(self, input, modes, run_options, store, run_id))

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
        from .stream import AsyncRunStream, chart_plan

        return AsyncRunStream(chart_plan(self, input, modes, run_options, store, run_id))

    def resume(
        self,
        checkpoint: Checkpoint,
        input: Any = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = 1000,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """Resume a paused run: the paused stage's ``resume(scope, input)`` runs, then the rest.

        A failed run's checkpoint (``err.checkpoint``) re-runs the stage that failed, from the
        state before its partial commit, and goes on (docs/durable.md).
        """
        from .engine.runner import resume_run

        def make(concurrent: bool) -> Coroutine[Any, Any, RunResult]:
            return resume_run(
                self, checkpoint, input, env=env, recorders=recorders, max_iterations=max_iterations,
                timeout=timeout, redaction=redaction, concurrent=concurrent, cancel=cancel, retry=retry,
            )  # fmt: skip

        return run_coroutine(make, self.needs_loop or timeout is not None)

    def resume_run(
        self,
        run_id: str,
        input: Any = None,
        *,
        store: RunStore | None = None,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = 1000,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """Answer the pause of the stored run ``run_id`` with ``input`` (once: a second
        answer raises ``AlreadyAnsweredError``) and run on; the outcome is recorded.

        A ``failed`` run is continued at the stage that failed instead (``input`` must be
        ``None``): that stage re-runs from the state before its partial commit, nothing that
        committed runs again, and the store decides races (one process wins).

        ``store`` defaults to the store this chart last ran with (``run(..., store=...)``).
        """
        from .store.runs import resume_chart

        if store is None:
            store = self._store
        if store is None:
            raise RunError(
                f"resume_run('{run_id}'): no run store — pass store=... (or run this chart with store= first)"
            )
        return resume_chart(
            self, store, run_id, input, env=env, recorders=recorders, max_iterations=max_iterations,
            timeout=timeout, redaction=redaction, retry=retry,
        )  # fmt: skip

    async def aresume(
        self,
        checkpoint: Checkpoint,
        input: Any = None,
        *,
        env: Mapping[str, Any] | None = None,
        recorders: Iterable[Any] = (),
        max_iterations: int = 1000,
        timeout: float | None = None,
        redaction: Redaction | None = None,
        cancel: CancelToken | None = None,
        retry: Retry | None = None,
    ) -> RunResult:
        """``resume`` inside the caller's event loop."""
        from .engine.runner import resume_run

        return await resume_run(
            self, checkpoint, input, env=env, recorders=recorders, max_iterations=max_iterations,
            timeout=timeout, redaction=redaction, concurrent=True, cancel=cancel, retry=retry,
        )  # fmt: skip
