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

This module holds the walk itself (one stage, its commit, the next hop, loops, stop).
The other laws have a module each, bound here as ``Traverser`` methods: ``choices``
(deciders, selectors), ``forks`` (parallel children), ``subflows`` (mounts) and
``resuming`` (the way back into a paused run); ``redacting`` hides what the run's redaction
hides in each commit and data event as it is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowchart._core.commits import Commit, make_commit
from flowchart._core.context import ReadonlyArgs, StageContext
from flowchart._core.errors import LoopLimitError
from flowchart._core.nodes import StageCallable, StageNode
from flowchart._core.pause import PauseSignal, ResumeFrame, pause_data_copy
from flowchart._core.scope import Transaction, scope_of
from flowchart._core.values import slot_setters
from flowchart._engine import choices, maps, parallel, resuming, retrying, subflows
from flowchart._engine.redacting import StageRecorder, hidden_before, redact_log, redacted_ops
from flowchart._engine.reusing import ReusedTransaction, recorded_output
from flowchart._engine.run_state import Run
from flowchart.events import (
    BreakEvent,
    CommitEvent,
    EmitEvent,
    ErrorEvent,
    ForkEvent,
    LoopEvent,
    NextEvent,
    PauseEvent,
    StageEvent,
    StageExecutedEvent,
    StageOpsEvent,
    StageType,
    TraversalContext,
)

# the context's slots' own setters (``values.slot_setters``): ``context`` fills a new context's
# slots directly, the same value as ``TraversalContext(...)`` (equal, hashable, frozen) without
# attrs' frozen ``__init__``, which goes through ``object.__setattr__`` once per field
(_SET_RUN, _SET_STAGE, _SET_RID, _SET_NAME, _SET_PATH, _SET_DEPTH, _SET_LOOP, _SET_BRANCH) = slot_setters(
    TraversalContext
)
_new_object = object.__new__

_NO_INPUT: Any = object()
Hop = tuple[StageNode | None, StageNode | None, str | None]


#: how many runtime ids a level keeps before ``walk`` forgets those of earlier steps (a fork's
#: children are stamped in one step: a step may add more than this, all kept until the next)
_RIDS_KEPT = 16


class Traverser:
    """Walks one chart (the top level, or one subflow run) over one state dict."""

    #: ``(index, item)`` inside a map child (``ctx.index``, ``ctx.item``), else ``None``
    mapped: tuple[int, Any] | None = None
    #: the loop cap on this level when its mount brings its own (``add_agent``), else the run's
    loop_limit: int | None = None

    def __init__(
        self,
        run: Run,
        chart: Any,
        state: dict[str, Any],
        args: ReadonlyArgs,
        *,
        prefix: str = "",
        subflow_path: tuple[str, ...] = (),
        readonly: frozenset[str] | Mapping[str, Any] = frozenset(),
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
        #: the last context built (its runtime id in it) and its node: one stage's events share it
        self._context: TraversalContext | None = None
        self._context_node: StageNode | None = None
        #: the latest runtime id stamped per node, read again only about the step in progress on
        #: this level and the one just before it (a loop event names the stage that looped; a
        #: failure's unwinding names the failed stage, its fork's children, its mount): ``walk``
        #: forgets older ones, so a 30,000-stage run does not keep 30,000 of them
        self._rids: dict[int, str] = {}
        #: the operation logs of the stages running now, by runtime id (batch recorders only)
        self.oplogs: dict[str, list[Any]] = {}
        #: views of top-level lists left by committed stages for the next reader (``flowchart._core.lending``)
        self.shelf: dict[str, Any] = {}

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
        rid = f"{full}#{index}"
        self._rids[id(node)] = rid
        return rid

    def context(self, node: StageNode, rid: str, fork_branch: str | None = None) -> TraversalContext:
        """The traversal context stamped on events about ``node``.

        The events of one execution (``rid``) share one context, built once: nothing it
        holds changes until ``node`` is stamped again, under a new ``rid``.
        """
        ctx = self._context
        if (
            ctx is not None
            and self._context_node is node
            and ctx.runtime_stage_id == rid
            and rid
            and fork_branch is None
        ):
            return ctx
        full = self.prefix + node.id
        visits = self.run.visit_counts.get(full, 1)
        path = self.subflow_path
        # this runs once per observed stage: the slots filled here, directly (no call between)
        ctx = _new_object(TraversalContext)
        _SET_RUN(ctx, self.run.run_id)
        _SET_STAGE(ctx, full)
        _SET_RID(ctx, rid)
        _SET_NAME(ctx, node.name)
        _SET_PATH(ctx, path)
        _SET_DEPTH(ctx, len(path))
        _SET_LOOP(ctx, visits - 1 if visits > 1 else None)
        _SET_BRANCH(ctx, fork_branch)
        self._context, self._context_node = ctx, node
        return ctx

    def request_stop(self, reason: str | None) -> None:
        """Stop after the current stage commits; the first reason wins."""
        if not self.stopped:
            self.stopped = True
            self.stop_reason = reason

    def emit(self, ctx: StageContext, name: str, payload: Any) -> None:
        """Deliver ``ctx.emit(name, payload)`` to the emit recorders."""
        observers = self.run.observers
        if observers.batch_emits:
            log = self.oplogs.get(ctx.runtime_stage_id)
            if log is not None:  # the payload is already a copy (StageContext.emit)
                log.append(("emit", name, payload, "", False))
        takers, hooked = observers.emit_takers, "on_emit" in observers.hooked
        if takers or hooked:
            rid = ctx.runtime_stage_id
            tctx = self._context  # the stage's own context, built at its start
            if tctx is None or tctx.runtime_stage_id != rid or not rid:
                tctx = self.context(self.chart.find(ctx.stage_id[len(self.prefix) :]), rid)
            if takers:
                try:
                    observers.take_emit(tctx, name, payload)
                except Exception as exc:  # a recorder must never break a run
                    observers.failed("take_emit", exc, tctx)
            if hooked:
                observers.emit("on_emit", EmitEvent(tctx, name, payload))

    def flow(self, hook: str, node: StageNode, rid: str, make: Any) -> None:
        """Emit a flow event built by ``make(ctx)`` if anybody listens to ``hook``."""
        observers = self.run.observers
        if hook in observers.hooked:
            observers.emit(hook, make(self.context(node, rid)))

    def described(self, node: StageNode, rid: str) -> str | None:
        """What the narrative tells of ``node``'s execution: its description, or, in a reuse-fork,
        ``<name>, reused from commit N of run R`` when the record stood in for it."""
        if self.run.reuse is not None:
            told = self.run.reuse.told(rid)
            if told is not None:
                return f"{node.name}, {told}"
        return node.description

    def executed(self, node: StageNode, rid: str, stage_type: StageType) -> None:
        """Emit ``on_stage_executed`` for ``node`` (the event is built only when observed)."""
        observers = self.run.observers
        if not observers.any:  # nobody listens: nothing to build or ask
            return
        description = node.description if self.run.reuse is None else self.described(node, rid)
        if observers.executed_takers:
            ctx = self._context  # the stage's context, built at its commit (``context``'s cache)
            if ctx is None or self._context_node is not node or ctx.runtime_stage_id != rid or not rid:
                ctx = self.context(node, rid)
            try:
                observers.take_stage_executed(ctx, node.name, description, stage_type)
            except Exception as exc:  # a recorder must never break a run
                observers.failed("take_stage_executed", exc, ctx)
        if "on_stage_executed" in observers.hooked:
            event = StageExecutedEvent(self.context(node, rid), node.name, description, stage_type)
            observers.emit("on_stage_executed", event)

    # -- one stage body ----------------------------------------------------------------------
    async def call_stage(
        self, node: StageNode, call: StageCallable, rid: str, namespace: tuple[str, ...], given: Any = _NO_INPUT
    ) -> tuple[Any, Transaction, Exception | None]:
        """Run one stage function over a fresh transaction. Never commits; returns the error."""
        run = self.run
        if run.reuse is not None and not namespace and not self.prefix and given is _NO_INPUT:
            taken = run.reuse.take(node.id, node.kind, rid, self.state)
            if taken is not None:  # the record's commit stands in for the call (``engine.reusing``)
                return recorded_output(taken), ReusedTransaction(self.state, taken), None  # type: ignore[return-value]
        txn = Transaction(self.state, namespace, self.readonly)  # by position: one a stage
        txn.shelf = self.shelf  # used at the top of the state only (a namespaced read copies)
        if run.redacting:
            txn.hides = run.redaction.hides
        if run.recovery is not None:  # re-running a failed execution: start from before its commit
            retrying.seed(run, self.prefix + node.id, txn)
        args: list[Any] = [scope_of(txn)]
        if given is not _NO_INPUT:
            args.append(given)
        if call.takes_extra:
            args.append(StageContext(self, self.prefix + node.id, node.name, rid))
        observers = run.observers
        tctx = None
        if observers.has_ops:
            txn.oplog = []
            if observers.batch_emits and call.takes_extra:  # ``emit`` finds the stage's log by its
                self.oplogs[rid] = txn.oplog  # runtime id (a stage emits through its ``StageContext``)
            if not run.redacting:  # redaction scrubs the values it is given: keep them plain
                txn.snapshot = observers.snapshot
        if observers.has_data:
            tctx = self.context(node, rid)
            if observers.live_ops:  # a stream's emits or stage starts alone need no per-operation bridge
                txn.observer = StageRecorder(self, tctx)
            if observers.stage_takers:
                try:
                    observers.take_stage_start(tctx)
                except Exception as exc:  # a recorder must never break a run
                    observers.failed("take_stage_start", exc, tctx)
            if "on_stage_start" in observers.hooked:
                observers.emit("on_stage_start", StageEvent(tctx))
        run.current_stage = self.prefix + node.id
        try:
            output = call.fn(*args)
            if call.is_async:
                output = await output
        except Exception as exc:
            if run.redacting:  # its commit's log will hold placeholders: keep what undoing it restores
                run.failed_before[rid] = hidden_before(run.redaction, txn)
            return None, txn, exc
        except BaseException:
            # cancellation (a run timeout) or interpreter exit: keep the partial writes
            self.commit(node, rid, txn)
            raise
        if tctx is not None and "on_stage_end" in observers.hooked:
            observers.emit("on_stage_end", StageEvent(tctx))
        return output, txn, None

    def commit(
        self,
        node: StageNode,
        rid: str,
        txn: Transaction | None,
        decision: dict[str, Any] | None = None,
        *,
        replaces: str | None = None,
    ) -> Commit:
        """Commit ``txn``'s net change as this stage's one log entry (with a decider's choice;
        ``replaces``: the runtime id of a failed mount's commit this resumed mount's replaces)."""
        ops = txn.commit() if txn is not None else []
        reads = txn.reads if txn is not None else ()
        redacted: tuple[str, ...] = ()
        if ops and self.run.redacting:
            ops, redacted = redact_log(self.run, ops, len(txn.namespace) if txn is not None else 0)
        run = self.run
        attempts = run.retry_log.pop(rid, ()) if run.retry_log else ()
        recovers = replaces or (retrying.recovered(run, self.prefix + node.id) if run.recovery is not None else None)
        # one per executed stage: the slots filled directly (``make_commit``, the same value)
        commit = make_commit(
            len(self.commit_log),
            node.name,
            self.prefix + node.id,
            rid,
            tuple(ops),
            reads,
            redacted,
            decision,
            attempts,
            recovers,
        )
        self.commit_log.append(commit)
        observers = self.run.observers
        if not observers.any:
            return commit
        if observers.has_ops and txn is not None and txn.oplog is not None:
            if self.oplogs:
                self.oplogs.pop(rid, None)
            if txn.oplog:
                ops_log = redacted_ops(self.run.redaction, txn.oplog) if self.run.redacting else txn.oplog
                txn.oplog = None
                tctx = self.context(node, rid)
                if observers.ops_takers:
                    try:
                        observers.take_stage_ops(tctx, ops_log)
                    except Exception as exc:  # a recorder must never break a run
                        observers.failed("take_stage_ops", exc, tctx)
                if "on_stage_ops" in observers.hooked:
                    observers.emit("on_stage_ops", StageOpsEvent(tctx, ops_log))
        if observers.commit_takers:
            cctx = self.context(node, rid)
            try:
                observers.take_commit(cctx, commit)
            except Exception as exc:  # a recorder must never break a run
                observers.failed("take_commit", exc, cctx)
        if "on_commit" in observers.hooked:
            observers.emit("on_commit", CommitEvent(self.context(node, rid), commit))
        return commit

    def fail(self, node: StageNode, rid: str, error: BaseException) -> None:
        """Tell the recorders that ``node`` raised ``error`` (once per error, at the innermost stage)."""
        reported = self.run.reported_errors
        if id(error) in reported:
            return
        reported[id(error)] = (self.prefix + node.id, rid)
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
        source: StageNode | None = None
        while node is not None:
            if node.kind == "loop":
                node, cont, invoker = self.take_loop(node, source), None, None
                continue
            if run.deadline is not None:
                run.check_deadline(self.prefix + node.id)
            if run.cancel is not None:
                run.cancel.check(self.prefix + node.id)
            source = node
            if len(self._rids) > _RIDS_KEPT:  # before the step: the loop event above read the last one
                self._rids.clear()
            try:
                output, (node, cont, invoker) = await self.step(node, cont, invoker, namespace)
            except Exception as exc:  # leave the resume point of a failed run (``retrying``)
                assert source is not None
                retrying.unwind(self, source, exc, cont, invoker, namespace)
                raise
            if self.stopped:
                break
        return output

    def follow(self, node: StageNode, rid: str, cont: StageNode | None) -> Hop:
        """Where control goes after ``node``: its ``next`` (or loop stub), else the continuation."""
        nxt = node.next
        if nxt is None:
            return cont, None, None
        if nxt.kind != "loop" and "on_next" in self.run.observers.hooked:
            self.flow("on_next", node, rid, lambda c: NextEvent(c, node.name, nxt.name, nxt.description))
        return nxt, cont, None

    def take_loop(self, stub: StageNode, source: StageNode | None = None) -> StageNode:
        """Take a ``loop_to`` edge: count it against the cap and return the target node.

        The loop event belongs to ``source``, the stage that took the edge (its id and
        runtime id, as in footprintjs); it names the target.
        """
        target_id = stub.loop_to or stub.id
        full = self.prefix + target_id
        run = self.run
        count = run.loop_counts.get(full, 0) + 1
        limit = run.max_iterations if self.loop_limit is None else self.loop_limit
        if count > limit:
            raise LoopLimitError(
                f"Maximum loop iterations ({limit}) exceeded for node '{target_id}'. "
                "Set max_iterations to increase the limit.",
                stage_id=full,
            )
        run.loop_counts[full] = count
        target: StageNode = self.chart.find(target_id)
        if "on_loop" in run.observers.hooked:
            if source is not None and id(source) in self._rids:
                ctx = self.context(source, self._rids[id(source)])
            else:  # a resumed stage's loop: no stage of this walk took it
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
            if node.children:  # a fork after the mount (add_list_of_function after a subflow)
                return await self.fork_after(node, rid, output, cont, invoker, namespace)
            return output, self.follow(node, rid, cont)

        if node.map is not None:
            return await maps.run_map(self, node, rid, cont, namespace, invoker)
        call = node.execute if kind == "pausable" else node.fn
        assert call is not None
        run = self.run
        if node.retry is None and run.retry is None:  # no policy: no extra coroutine per stage
            output, txn, error = await self.call_stage(node, call, rid, namespace)
        else:
            output, txn, error = await self.attempt(node, call, rid, namespace)
        choice = (
            choices.decision_record(output) if error is None and (kind == "decider" or kind == "selector") else None
        )
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
            return await self.fork_after(node, rid, output, cont, invoker, namespace)
        if run.observers.any:  # nobody listens: no event to build (the plain stage's hot path)
            self.executed(node, rid, "linear")
        if self.stopped:
            return output, self.after_stop(node, rid)
        return output, self.follow(node, rid, cont)

    async def fork_after(
        self,
        node: StageNode,
        rid: str,
        output: Any,
        cont: StageNode | None,
        invoker: str | None,
        namespace: tuple[str, ...],
        *,
        told: bool = False,
    ) -> tuple[Any, Hop]:
        """After ``node``'s own body (a plain stage, a pausable's resume half, a mount, a map): run
        its fork children, then follow it (``told``: the node's own execution was announced)."""
        if not told:
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
    choose_branch = choices.choose_branch

    choose_selected = choices.choose_selected

    # -- retries ---------------------------------------------------------------------------------
    attempt = retrying.attempt

    # -- forks -------------------------------------------------------------------------------------
    run_children = parallel.run_children

    # -- subflows ------------------------------------------------------------------------------------
    run_mount = subflows.run_mount

    # -- resume ------------------------------------------------------------------------------------------
    resume = resuming.resume
