"""The traversal: walks one chart level, one stage at a time, committing each stage.

Laws:
- Exactly one ``Commit`` per executed stage — also when nothing changed, when the stage
  raised (partial writes are kept, then the error propagates unchanged), and when it
  paused. A subflow mount's one commit is its output-mapper merge.
- Deciders commit BEFORE the branch is resolved. A branch continues at the decider's own
  ``next`` (or the decider's continuation), so a decider with a ``next`` and a looping
  branch runs that ``next`` once, after the loop ends.
- Fork and selector children run concurrently when the run has an event loop, each in
  its own namespace ``runs/<child_id>``; their commits are applied and appended in
  DECLARATION order once all have settled, so the log is the same on every run.
- Loops are trampolined (no recursion per pass) and capped per target.
- A pause unwinds as a ``PauseSignal`` that collects one ``ResumeFrame`` per level; the
  resume walks the frames back down without re-running any stage body.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from ..commits import Commit, Op
from ..context import ReadonlyArgs, StageContext
from ..decide import Decision, Selection
from ..errors import LoopLimitError, RunError
from ..events import (
    BreakEvent,
    CommitEvent,
    DecisionEvent,
    EmitEvent,
    ErrorEvent,
    ForkEvent,
    LoopEvent,
    NextEvent,
    PauseEvent,
    ReadEvent,
    ResumeEvent,
    SelectedEvent,
    StageEvent,
    StageExecutedEvent,
    StageType,
    SubflowEvent,
    TraversalContext,
    WriteEvent,
)
from ..nodes import StageCallable, StageNode
from ..pause import PauseAgain, PauseSignal, ResumeFrame, pause_data_copy
from ..redaction import EVENT_PLACEHOLDER, LOG_PLACEHOLDER
from ..scope import Scope, Transaction
from ..values import NotJsonSafe, copy_json
from .run import Run, SubflowResult

_NO_INPUT: Any = object()
Hop = tuple[StageNode | None, StageNode | None, str | None]


class _StageRecorder:
    """Bridges a transaction's reads and writes to the recorders' data hooks."""

    __slots__ = ("ctx", "hides", "observers", "reads", "redacting", "writes")

    def __init__(self, traverser: Traverser, ctx: TraversalContext) -> None:
        self.observers = observers = traverser.run.observers
        self.ctx = ctx
        run = traverser.run
        self.redacting = run.redacting  # when nothing is hidden, no key is asked about
        self.hides = run.redaction.hides
        self.reads = observers.wants("on_read")
        self.writes = observers.wants("on_write")

    def read(self, key: str, value: Any) -> None:
        if self.reads:
            hidden = self.redacting and self.hides(key)
            self.observers.emit("on_read", ReadEvent(self.ctx, key, EVENT_PLACEHOLDER if hidden else value, hidden))

    def write(self, key: str, value: Any, operation: str) -> None:
        if self.writes:
            hidden = self.redacting and self.hides(key)
            shown = EVENT_PLACEHOLDER if hidden and operation != "delete" else value
            self.observers.emit("on_write", WriteEvent(self.ctx, key, shown, operation, hidden))  # type: ignore[arg-type]


def decision_record(output: Any) -> dict[str, Any]:
    """What a decider or selector returned, as recorded on its commit (JSON-safe)."""
    if isinstance(output, Decision):
        record: dict[str, Any] = {"chosen": output.branch, "evidence": output.evidence}
    elif isinstance(output, Selection):
        record = {"selected": list(output.branches), "evidence": output.evidence}
    elif isinstance(output, list | tuple):
        record = {"selected": list(output)}
    else:
        record = {"chosen": output}
    try:
        return copy_json(record)
    except NotJsonSafe:
        return {key: repr(value) for key, value in record.items()}


class _ReadTracking(Mapping[str, Any]):
    """A read-only view of a state dict that remembers which keys were read."""

    __slots__ = ("_data", "keys_read")

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.keys_read: dict[str, None] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        self.keys_read[key] = None
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


class Traverser:
    """Walks one chart (the top level, or one subflow run) over one state dict."""

    def __init__(
        self,
        run: Run,
        chart: Any,
        state: dict[str, Any],
        args: ReadonlyArgs,
        *,
        prefix: str = "",
        subflow_path: tuple[str, ...] = (),
        readonly: frozenset[str] = frozenset(),
    ) -> None:
        self.run = run
        self.chart = chart
        self.state = state
        self.initial = dict(state)
        self.args = args
        self.prefix = prefix
        self.subflow_path = subflow_path
        self.readonly = readonly
        self.commit_log: list[Commit] = []
        self.stopped = False
        self.stop_reason: str | None = None
        #: the last context built, with its node and rid: one stage's events share it
        self._last_context: tuple[StageNode, str, TraversalContext] | None = None

    # -- small helpers -------------------------------------------------------------------
    def full_id(self, node: StageNode) -> str:
        """The stage id as the run sees it (prefixed inside subflows)."""
        return self.prefix + node.id

    def stamp(self, node: StageNode, *, visit: bool = True) -> str:
        """Take the next execution index for ``node`` and count the visit."""
        run = self.run
        index = run.counter
        run.counter = index + 1
        full = self.prefix + node.id
        if visit:
            run.visit_counts[full] = run.visit_counts.get(full, 0) + 1
        return f"{full}#{index}"

    def context(self, node: StageNode, rid: str, fork_branch: str | None = None) -> TraversalContext:
        """The traversal context stamped on events about ``node``.

        The events of one execution (``rid``) share one context, built once: nothing it
        holds changes until ``node`` is stamped again, under a new ``rid``.
        """
        last = self._last_context
        if last is not None and last[0] is node and last[1] == rid and rid and fork_branch is None:
            return last[2]
        full = self.prefix + node.id
        visits = self.run.visit_counts.get(full, 1)
        ctx = TraversalContext(
            run_id=self.run.run_id,
            stage_id=full,
            runtime_stage_id=rid,
            stage_name=node.name,
            subflow_path=self.subflow_path,
            depth=len(self.subflow_path),
            loop_iteration=visits - 1 if visits > 1 else None,
            fork_branch=fork_branch,
        )
        self._last_context = (node, rid, ctx)
        return ctx

    def request_stop(self, reason: str | None) -> None:
        """Stop after the current stage commits; the first reason wins."""
        if not self.stopped:
            self.stopped = True
            self.stop_reason = reason

    def emit(self, ctx: StageContext, name: str, payload: Any) -> None:
        """Deliver ``ctx.emit(name, payload)`` to the emit recorders."""
        observers = self.run.observers
        if observers.wants("on_emit"):
            node = self.chart.find(ctx.stage_id[len(self.prefix) :])
            tctx = self.context(node, ctx.runtime_stage_id)
            observers.emit("on_emit", EmitEvent(tctx, name, payload))

    def flow(self, hook: str, node: StageNode, rid: str, make: Any) -> None:
        """Emit a flow event built by ``make(ctx)`` if anybody listens to ``hook``."""
        observers = self.run.observers
        if observers.wants(hook):
            observers.emit(hook, make(self.context(node, rid)))

    def executed(self, node: StageNode, rid: str, stage_type: StageType) -> None:
        """Emit ``on_stage_executed`` for ``node`` (the event is built only when observed)."""
        observers = self.run.observers
        if observers.wants("on_stage_executed"):
            event = StageExecutedEvent(self.context(node, rid), node.name, node.description, stage_type)
            observers.emit("on_stage_executed", event)

    # -- one stage body ----------------------------------------------------------------------
    async def call_stage(
        self, node: StageNode, call: StageCallable, rid: str, namespace: tuple[str, ...], given: Any = _NO_INPUT
    ) -> tuple[Any, Transaction, Exception | None]:
        """Run one stage function over a fresh transaction. Never commits; returns the error."""
        run = self.run
        txn = Transaction(self.state, namespace=namespace, readonly=self.readonly)
        if run.redacting:
            txn.hides = run.redaction.hides
        args: list[Any] = [Scope(txn)]
        if given is not _NO_INPUT:
            args.append(given)
        if call.takes_extra:
            args.append(StageContext(self, self.prefix + node.id, node.name, rid))
        observers = run.observers
        tctx = None
        if observers.has_data:
            tctx = self.context(node, rid)
            txn.observer = _StageRecorder(self, tctx)
            if observers.wants("on_stage_start"):
                observers.emit("on_stage_start", StageEvent(tctx))
        run.current_stage = self.prefix + node.id
        try:
            output = call.fn(*args)
            if call.is_async:
                output = await output
        except Exception as exc:
            return None, txn, exc
        except BaseException:
            # cancellation (a run timeout) or interpreter exit: keep the partial writes
            self.commit(node, rid, txn)
            raise
        if tctx is not None and observers.wants("on_stage_end"):
            observers.emit("on_stage_end", StageEvent(tctx))
        return output, txn, None

    def commit(
        self, node: StageNode, rid: str, txn: Transaction | None, decision: dict[str, Any] | None = None
    ) -> Commit:
        """Commit ``txn``'s net change as this stage's one log entry (with a decider's choice)."""
        ops = txn.commit() if txn is not None else []
        reads = txn.reads if txn is not None else ()
        redacted: tuple[str, ...] = ()
        if ops and self.run.redacting:
            ops, redacted = self._redact(ops, len(txn.namespace) if txn is not None else 0)
        commit = Commit(
            len(self.commit_log), node.name, self.prefix + node.id, rid, tuple(ops), reads, redacted, decision
        )
        self.commit_log.append(commit)
        observers = self.run.observers
        if observers.wants("on_commit"):
            observers.emit("on_commit", CommitEvent(self.context(node, rid), commit))
        return commit

    def _redact(self, ops: list[Op], depth: int) -> tuple[list[Op], tuple[str, ...]]:
        redaction = self.run.redaction
        out: list[Op] = []
        paths: list[str] = []
        for op in ops:
            key = op.path[depth]
            if op.verb != "delete" and redaction.hides(key):
                out.append(Op(op.path, op.verb, LOG_PLACEHOLDER))
                paths.append("/".join(op.path))
            elif op.verb != "delete" and key in redaction.fields:
                value, hidden = redaction.scrub_fields(key, op.value)
                out.append(Op(op.path, op.verb, value) if hidden else op)
                paths.extend("/".join((*op.path, field)) for field in hidden)
            else:
                out.append(op)
        for path in paths:
            self.run.redacted_paths[path] = None
        return out, tuple(paths)

    def fail(self, node: StageNode, rid: str, error: BaseException) -> None:
        """Tell the recorders that ``node`` raised ``error`` (once per error, at the innermost stage)."""
        reported = self.run.reported_errors
        if id(error) in reported:
            return
        reported.add(id(error))
        self.flow(
            "on_error",
            node,
            rid,
            lambda c: ErrorEvent(c, node.name, f"{type(error).__name__}: {error}", error),
        )

    def pause(self, node: StageNode, rid: str, data: Any, frame: ResumeFrame) -> PauseSignal:
        """Build the signal that unwinds the run when ``node`` paused with ``data``."""
        signal = PauseSignal(pause_data_copy(data, self.prefix + node.id), node.name, frame)
        self.flow(
            "on_pause",
            node,
            rid,
            lambda c: PauseEvent(c, node.name, self.prefix + node.id, signal.pause_data, self.subflow_path),
        )
        return signal

    def frame(
        self, node: StageNode, kind: Any, cont: StageNode | None, invoker: str | None, namespace: tuple[str, ...]
    ) -> ResumeFrame:
        """The resume frame of ``node`` on this level (built only when a pause unwinds)."""
        return ResumeFrame.at(self.prefix + node.id, kind, cont, invoker, namespace, self.prefix)

    # -- walking -------------------------------------------------------------------------------
    async def walk(
        self, node: StageNode | None, cont: StageNode | None, invoker: str | None, namespace: tuple[str, ...] = ()
    ) -> Any:
        """Run ``node`` and everything after it on this level; return the last stage output."""
        output = None
        run = self.run
        while node is not None:
            if node.kind == "loop":
                node, cont, invoker = self.take_loop(node), None, None
                continue
            if run.deadline is not None:
                run.check_deadline(self.prefix + node.id)
            output, (node, cont, invoker) = await self.step(node, cont, invoker, namespace)
            if self.stopped:
                break
        return output

    def follow(self, node: StageNode, rid: str, cont: StageNode | None) -> Hop:
        """Where control goes after ``node``: its ``next`` (or loop stub), else the continuation."""
        nxt = node.next
        if nxt is None:
            return cont, None, None
        if nxt.kind != "loop" and self.run.observers.wants("on_next"):
            self.flow("on_next", node, rid, lambda c: NextEvent(c, node.name, nxt.name, nxt.description))
        return nxt, cont, None

    def take_loop(self, stub: StageNode) -> StageNode:
        """Take a ``loop_to`` edge: count it against the cap and return the target node."""
        target_id = stub.loop_to or stub.id
        full = self.prefix + target_id
        run = self.run
        count = run.loop_counts.get(full, 0) + 1
        if count > run.max_iterations:
            raise LoopLimitError(
                f"Maximum loop iterations ({run.max_iterations}) exceeded for node '{target_id}'. "
                "Set max_iterations to increase the limit.",
                stage_id=full,
            )
        run.loop_counts[full] = count
        target: StageNode = self.chart.find(target_id)
        if run.observers.wants("on_loop"):
            ctx = TraversalContext(
                run_id=run.run_id,
                stage_id=full,
                runtime_stage_id=f"{full}#{run.counter}",
                stage_name=target.name,
                subflow_path=self.subflow_path,
                depth=len(self.subflow_path),
            )
            run.observers.emit("on_loop", LoopEvent(ctx, target.name, full, count, target.description))
        return target

    async def step(
        self, node: StageNode, cont: StageNode | None, invoker: str | None, namespace: tuple[str, ...]
    ) -> tuple[Any, Hop]:
        """Execute ``node`` (commit included) and say where to go next."""
        rid = self.stamp(node)
        kind = node.kind
        if kind == "subflow":
            try:
                output, txn, error = await self.run_mount(node, rid, namespace)
            except PauseSignal as signal:
                signal.push(self.frame(node, "mount", cont, invoker, namespace))
                raise
            self.commit(node, rid, txn)
            if error is not None:
                self.fail(node, rid, error)
                raise error
            if self.stopped:  # a break propagated out of the subflow (its event is already out)
                return output, (None, None, None)
            return output, self.follow(node, rid, cont)

        call = node.execute if kind == "pausable" else node.fn
        assert call is not None
        output, txn, error = await self.call_stage(node, call, rid, namespace)
        choice = decision_record(output) if error is None and (kind == "decider" or kind == "selector") else None
        self.commit(node, rid, txn, choice)
        if error is not None:
            self.fail(node, rid, error)
            raise error
        if kind == "pausable" and output is not None:
            raise self.pause(node, rid, output, self.frame(node, "stage", cont, invoker, namespace))
        if kind == "decider":
            return output, self.choose_branch(node, rid, output, cont)
        if kind == "selector":
            selected = self.choose_selected(node, rid, output)
            if self.stopped:
                return output, (None, None, None)
            try:
                output = await self.run_children(node, selected, rid, namespace)
            except PauseSignal as signal:
                signal.push(self.frame(node, "fork", cont, invoker, namespace))
                raise
            return output, self.follow(node, rid, cont)
        if node.children:
            self.executed(node, rid, "linear")
            if self.stopped:
                return output, self.after_stop(node, rid)
            self.flow("on_fork", node, rid, lambda c: ForkEvent(c, node.name, tuple(ch.name for ch in node.children)))
            self.executed(node, rid, "fork")
            try:
                output = await self.run_children(node, node.children, rid, namespace)
            except PauseSignal as signal:
                signal.push(self.frame(node, "fork", cont, invoker, namespace))
                raise
            return output, self.follow(node, rid, cont)
        self.executed(node, rid, "linear")
        return output, self.after_stop_or(node, rid, cont)

    def after_stop(self, node: StageNode, rid: str) -> Hop:
        """Emit the break event for a stage that called ``ctx.stop``; nothing follows it."""
        self.flow("on_break", node, rid, lambda c: BreakEvent(c, node.name, self.stop_reason))
        return None, None, None

    def after_stop_or(self, node: StageNode, rid: str, cont: StageNode | None) -> Hop:
        """Stop here if the stage asked to, else follow its edge."""
        if self.stopped:
            return self.after_stop(node, rid)
        return self.follow(node, rid, cont)

    # -- deciders and selectors ------------------------------------------------------------------
    def choose_branch(self, node: StageNode, rid: str, output: Any, cont: StageNode | None) -> Hop:
        """Resolve a decider's output to a branch and hop there (the decider already committed)."""
        if self.stopped:
            self.executed(node, rid, "decider")
            return self.after_stop(node, rid)
        evidence = None
        if isinstance(output, Decision):
            branch_id, evidence = output.branch, output.evidence
        else:
            branch_id = output
        branch = node.branches.get(branch_id) if isinstance(branch_id, str) else None
        if branch is None:
            if node.default_branch is None:
                error = RunError(
                    f"Decider '{node.id}' returned branch ID {branch_id!r} which doesn't match any branch "
                    f"({', '.join(node.branches)}) and no default branch is set",
                    stage_id=self.prefix + node.id,
                )
                self.fail(node, rid, error)
                raise error
            branch = node.branches[node.default_branch]
        chosen = branch
        self.flow(
            "on_decision",
            node,
            rid,
            lambda c: DecisionEvent(c, node.name, chosen.name, chosen.id, None, node.description, evidence),
        )
        self.executed(node, rid, "decider")
        after = node.next if node.next is not None else cont
        return branch, after, self.prefix + node.id

    def choose_selected(self, node: StageNode, rid: str, output: Any) -> list[StageNode]:
        """Resolve a selector's output to the branches to run (the selector already committed)."""
        if self.stopped:
            self.executed(node, rid, "selector")
            self.after_stop(node, rid)
            return []
        evidence = None
        if isinstance(output, Selection):
            ids, evidence = list(output.branches), output.evidence
        elif isinstance(output, str):
            ids = [output]
        elif output is None:
            ids = []
        else:
            ids = list(output)
        unknown = [i for i in ids if i not in node.branches]
        if unknown:
            error = RunError(
                f"Selector '{node.id}' returned unknown branch IDs: {', '.join(map(str, unknown))}. "
                f"Available: {', '.join(node.branches)}",
                stage_id=self.prefix + node.id,
            )
            self.fail(node, rid, error)
            raise error
        chosen = [node.branches[i] for i in dict.fromkeys(ids)]
        self.flow(
            "on_selected",
            node,
            rid,
            lambda c: SelectedEvent(
                c, node.name, tuple(b.name for b in chosen), tuple(b.id for b in chosen), len(node.branches), evidence
            ),
        )
        self.executed(node, rid, "selector")
        if chosen:
            self.flow("on_fork", node, rid, lambda c: ForkEvent(c, node.name, tuple(b.name for b in chosen)))
        return chosen

    # -- forks -------------------------------------------------------------------------------------
    async def run_children(
        self, parent: StageNode, children: list[StageNode], parent_rid: str, namespace: tuple[str, ...]
    ) -> dict[str, Any]:
        """Run fork/selector children, then commit them in declaration order."""
        if not children:
            return {}
        rids = [self.stamp(child) for child in children]

        async def one(child: StageNode, rid: str) -> tuple[Any, Transaction | None, BaseException | None]:
            try:
                if child.kind == "subflow":
                    return await self.run_mount(child, rid, namespace)
                call = child.execute if child.kind == "pausable" else child.fn
                assert call is not None
                return await self.call_stage(child, call, rid, (*namespace, "runs", child.id))
            except PauseSignal as signal:  # a subflow child paused inside
                frame = ResumeFrame.at(
                    self.prefix + child.id, "mount", None, self.prefix + parent.id, namespace, self.prefix
                )
                signal.push(frame)
                return None, None, signal

        if self.run.concurrent and len(children) > 1:
            results = await asyncio.gather(*(one(c, r) for c, r in zip(children, rids, strict=True)))
        else:
            results = [await one(c, r) for c, r in zip(children, rids, strict=True)]

        bundle: dict[str, Any] = {}
        pause: PauseSignal | None = None
        also_paused: list[str] = []  # a run pauses at one stage: a second pause is refused below
        first_error: Exception | None = None
        for child, rid, (output, txn, error) in zip(children, rids, results, strict=True):
            if isinstance(error, PauseSignal):
                if pause is None:
                    pause = error
                else:
                    also_paused.append(self.prefix + child.id)
                continue
            self.commit(child, rid, txn)
            if error is not None:
                assert isinstance(error, Exception)
                self.fail(child, rid, error)
                first_error = first_error or error
                bundle[child.id] = {"id": child.id, "result": f"{type(error).__name__}: {error}", "is_error": True}
                continue
            if child.kind == "pausable" and output is not None:
                if pause is not None:
                    also_paused.append(self.prefix + child.id)
                    continue
                ns = (*namespace, "runs", child.id)
                frame = ResumeFrame.at(self.prefix + child.id, "stage", None, self.prefix + parent.id, ns, self.prefix)
                pause = self.pause(child, rid, output, frame)
                continue
            self.executed(child, rid, "subflow-mount" if child.kind == "subflow" else "linear")
            bundle[child.id] = {"id": child.id, "result": output, "is_error": False}
        if first_error is not None and parent.fail_fast:
            raise first_error  # a failed fail-fast fork fails the run, even if a child paused
        if pause is not None:
            if also_paused:
                raise RunError(
                    f"Children {', '.join(repr(c) for c in [pause.frames[0].stage_id, *also_paused])} of "
                    f"'{self.prefix + parent.id}' all paused, but a run pauses at one stage at a time: let at "
                    "most one child of a fork or selector pause (the others' execute returns None)",
                    stage_id=self.prefix + parent.id,
                )
            raise pause
        return bundle

    # -- subflows ------------------------------------------------------------------------------------
    async def run_mount(
        self,
        node: StageNode,
        rid: str,
        namespace: tuple[str, ...],
        resume: tuple[list[ResumeFrame], int, Any, Any] | None = None,
    ) -> tuple[Any, Transaction, Exception | None]:
        """Run a subflow in its own state and log; return the mount's merge-back transaction."""
        mount = node.mount
        assert mount is not None
        full = self.prefix + node.id
        run = self.run
        txn = Transaction(self.state, namespace=namespace, readonly=self.readonly)
        if resume is None:
            try:
                mapped = self._map_input(node, txn)
            except Exception as exc:
                return None, txn, exc
            inner_args = mapped
        else:
            checkpoint = resume[3]
            mapped = copy_json(checkpoint.subflow_states[full])
            inner_args = copy_json(checkpoint.subflow_args.get(full, {}))
        entry_state = mapped if resume is None else {}
        description = mount.chart.root.description or node.description
        self.flow("on_subflow_entry", node, rid, lambda c: SubflowEvent(c, node.name, full, description, entry_state))
        if resume is None:
            self.executed(node, rid, "subflow-mount")
        inner = Traverser(
            run,
            mount.chart,
            mapped,
            ReadonlyArgs(inner_args),
            prefix=full + "/",
            subflow_path=(*self.subflow_path, full),
        )
        error: Exception | None = None
        output = None
        try:
            if resume is None:
                output = await inner.walk(mount.chart.root, None, None)
            else:
                frames, index, given, checkpoint = resume
                output = await inner.resume(frames, index, given, checkpoint)
        except PauseSignal as signal:
            signal.subflow_states[full] = inner.state
            signal.subflow_args[full] = inner.args.to_dict()
            # the paused run's record keeps what the subflow did before the pause
            run.subflow_results[full] = run.subflow_results[rid] = SubflowResult(
                full, rid, inner.state, tuple(inner.commit_log), inner.initial, None
            )
            raise
        except Exception as exc:
            error = exc
        run.subflow_results[full] = run.subflow_results[rid] = SubflowResult(
            full, rid, inner.state, tuple(inner.commit_log), inner.initial, output
        )
        if inner.stopped and mount.propagate_break and error is None:
            self.request_stop(inner.stop_reason)
            self.flow(
                "on_break",
                node,
                rid,
                lambda c: BreakEvent(c, node.name, inner.stop_reason, propagated_from_subflow=full),
            )
        self.flow("on_subflow_exit", node, rid, lambda c: SubflowEvent(c, node.name, full, None, inner.state))
        if error is not None:
            return None, txn, error
        if mount.output_mapper is not None:
            try:
                self._merge_output(node, txn, inner.state)
            except Exception as exc:
                return output, txn, exc
        return output, txn, None

    def _map_input(self, node: StageNode, txn: Transaction) -> dict[str, Any]:
        mount = node.mount
        assert mount is not None
        if mount.input_mapper is None:
            return {}
        # the keys the mapper reads are the mount's reads: they link the subflow's result
        # back to the parent stages that wrote them (causal backtracking)
        view = _ReadTracking(self.state)
        mapped = mount.input_mapper(view)
        txn.note_reads(view.keys_read)
        if mapped is None:
            return {}
        if not isinstance(mapped, dict):
            raise RunError(
                f"input_mapper of subflow '{node.id}' returned {type(mapped).__name__}; it must return a dict "
                "(the subflow's initial state)",
                stage_id=self.prefix + node.id,
            )
        try:
            return copy_json(mapped)
        except NotJsonSafe as exc:
            raise RunError(
                f"input_mapper of subflow '{node.id}' returned {exc.what} at {exc.where}; the subflow's "
                "initial state must be JSON-safe",
                stage_id=self.prefix + node.id,
            ) from None

    def _merge_output(self, node: StageNode, txn: Transaction, inner_state: dict[str, Any]) -> None:
        mount = node.mount
        assert mount is not None and mount.output_mapper is not None
        patch = mount.output_mapper(MappingProxyType(inner_state), MappingProxyType(self.state))
        if patch is None:
            return
        if not isinstance(patch, dict):
            raise RunError(
                f"output_mapper of subflow '{node.id}' returned {type(patch).__name__}; it must return a dict "
                "of parent keys to write",
                stage_id=self.prefix + node.id,
            )
        for key, value in patch.items():
            current = txn.raw(key)
            if mount.array_merge == "concat" and isinstance(value, list) and isinstance(current, list):
                txn.set(key, [*current, *value])
            else:
                txn.set(key, value)

    # -- resume ------------------------------------------------------------------------------------------
    def _announce_resume(self, frames: list[ResumeFrame], given: Any) -> None:
        """Fire ``on_resume`` for the paused stage before anything runs (footprintjs order)."""
        chart, prefix, path = self.chart, self.prefix, list(self.subflow_path)
        for frame in frames[:-1]:
            if frame.kind == "mount":
                mount = chart.find(frame.stage_id[len(prefix) :]).mount
                chart, prefix = mount.chart, frame.stage_id + "/"
                path.append(frame.stage_id)
        leaf = chart.find(frames[-1].stage_id[len(prefix) :])
        full = prefix + leaf.id
        ctx = TraversalContext(
            run_id=self.run.run_id,
            stage_id=full,
            runtime_stage_id=f"{full}#{self.run.counter}",
            stage_name=leaf.name,
            subflow_path=tuple(path),
            depth=len(path),
        )
        self.run.observers.emit("on_resume", ResumeEvent(ctx, leaf.name, full, given is not None))

    async def resume(self, frames: list[ResumeFrame], index: int, given: Any, checkpoint: Any) -> Any:
        """Continue a paused run at ``frames[index]`` (this level) without re-running any body."""
        if index == 0 and self.run.observers.wants("on_resume"):
            self._announce_resume(frames, given)
        frame = frames[index]
        node = self.chart.find(frame.stage_id[len(self.prefix) :])
        cont = frame.continuation_node(self.chart, self.prefix)
        namespace = tuple(frame.namespace)
        repause: PauseSignal | None = None
        hop: Hop = (None, None, None)
        try:
            if frame.kind == "stage":
                rid = self.stamp(node, visit=False)
                assert node.resume is not None
                output, txn, error = await self.call_stage(node, node.resume, rid, namespace, given)
                self.commit(node, rid, txn)
                if error is not None:
                    self.fail(node, rid, error)
                    raise error
                if isinstance(output, PauseAgain):
                    repause = self.pause(node, rid, output.data, frame)
                else:
                    self.executed(node, rid, "linear")
                    hop = self.after_stop_or(node, rid, cont)
            elif frame.kind == "mount":
                rid = self.stamp(node, visit=False)
                inside = (frames, index + 1, given, checkpoint)
                output, mount_txn, error = await self.run_mount(node, rid, namespace, inside)
                self.commit(node, rid, mount_txn)
                if error is not None:
                    self.fail(node, rid, error)
                    raise error
                hop = self.after_stop_or(node, rid, cont)
            else:  # "fork": the paused child is the next frame, on this same level
                output = await self.resume(frames, index + 1, given, checkpoint)
                hop = (None, None, None) if self.stopped else self.follow(node, "", cont)
        except PauseSignal as signal:
            signal.push(frame)
            raise
        if repause is not None:
            raise repause
        nxt, nxt_cont, invoker = hop
        if nxt is None or self.stopped:
            return output
        return await self.walk(nxt, nxt_cont, invoker)
