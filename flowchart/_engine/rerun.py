"""Running a fork: a new run that starts at a commit boundary of another run.

Laws:
- The fork starts from the state the parent's log folds to at commit k; its FIRST commit
  is the fork itself (stage ``Fork``, id ``fork``, runtime id ``fork#N`` with N the counter
  the next stage takes), told to recorders as a stage of its own (its writes, then
  ``on_stage_executed`` described "forked from run R at commit k", then ``on_commit``):
  the patch's writes as ops, and ``decision = {"forked_from": parent run id, "at": k}`` —
  so the record says where the run came from and what was changed, exactly once. The
  patch is validated like a stage's writes (JSON-safe, not a run-input key) before
  anything runs.
- Then the traversal goes on at the position after commit k (``positions``): the stage
  that followed it, or the children of the fork/selector that committed at k, with the
  counters the parent held there; no stage at or before commit k runs again.
- A fork inside a subflow (``MountPoint``) re-enters the mount the way a resume does
  (``subflows.Reentry``: no input mapper, the mount keeps its runtime id): the top-level
  fork commit carries the lineage and no ops (the parent level's state is unchanged);
  the patch is the first commit of the subflow's own log (stage id ``<mount>/fork``),
  then the subflow goes on after its inner commit, then the mount's output mapper and
  the rest of the parent.
- The fork ends like any run (result, pause with a checkpoint, or the error re-raised).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flowchart._core.commits import Commit
from flowchart._core.context import ReadonlyArgs
from flowchart._core.errors import ReadonlyInputError, ScopeWriteError
from flowchart._core.options import RunOptions
from flowchart._core.pause import PauseSignal
from flowchart._core.scope import Transaction
from flowchart._engine.entry import _finish, _root_context
from flowchart._engine.observers import NO_OBSERVERS, Observers
from flowchart._engine.positions import MountPoint, Position
from flowchart._engine.redacting import StageRecorder, redact_log, redacted_ops, shown_state
from flowchart._engine.retrying import unwind
from flowchart._engine.run_state import Run
from flowchart._engine.traversal import Traverser
from flowchart._record.result import RunResult
from flowchart.events import CommitEvent, RunEvent, StageExecutedEvent, StageOpsEvent, TraversalContext

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart

FORK_STAGE = "fork"
FORK_NAME = "Fork"


def patch_ops(state: dict[str, Any], patch: Mapping[str, Any] | None, readonly: frozenset[str]) -> Transaction:
    """Stage ``patch`` as a transaction over ``state`` (validated; nothing applied yet)."""
    txn = Transaction(state, readonly=readonly)
    if patch is None:
        return txn
    if not isinstance(patch, Mapping):
        raise TypeError(f"fork(patch=...) must be a dict of state key -> JSON value, got {type(patch).__name__}")
    for key, value in patch.items():
        if not isinstance(key, str) or not key:
            raise ScopeWriteError(f"fork patch key {key!r} must be a non-empty string (a state key)", key=str(key))
        try:
            txn.set(key, value)
        except ReadonlyInputError:
            raise ReadonlyInputError(
                f"fork patch key '{key}' is run input (ctx.args), which a fork keeps: patch state keys only",
                key=key,
            ) from None
    return txn


async def continue_at(top: Traverser, position: Position) -> Any:
    """Run the chart on from ``position`` (see ``positions``)."""
    node, cont, invoker = position.node, position.cont, position.invoker
    output = None
    if position.children is not None and node is not None:
        parent = node
        try:
            output = await top.run_children(parent, list(position.children), "", ())
        except PauseSignal as signal:
            signal.push(top.frame(parent, "fork", cont, invoker, ()))
            raise
        if top.stopped:
            return output
        node, cont, invoker = top.follow(parent, "", cont)
    if node is None:
        return output
    return await top.walk(node, cont, invoker)


def _lineage(position: Position | MountPoint) -> Any:
    return list(position.at) if isinstance(position, MountPoint) else position.at


def _innermost(point: MountPoint) -> tuple[Position, dict[str, Any]]:
    inner = point.inner
    return (inner, point.inner_state) if isinstance(inner, Position) else _innermost(inner)


async def fork_run(
    chart: FlowChart,
    position: Position | MountPoint,
    state: dict[str, Any],
    run_input: dict[str, Any],
    patch: Mapping[str, Any] | None,
    parent_run_id: str,
    options: RunOptions,
    *,
    concurrent: bool,
    reuse: Any = None,
) -> RunResult:
    """Start the fork of ``parent_run_id`` at ``position`` over ``state`` with ``patch``
    (``reuse``: the ``engine.reusing.ReusePlan`` of a reuse-fork)."""
    readonly = frozenset(run_input)
    if isinstance(position, MountPoint):  # the patch goes into the innermost subflow's state
        txn = patch_ops(_innermost(position)[1], patch, frozenset())  # refused here, before a run exists
    else:
        txn = patch_ops(state, patch, readonly)
    observers = Observers(options.recorders) if options.recorders else NO_OBSERVERS
    run = Run(
        options,
        observers=observers,
        concurrent=concurrent,
        counter=position.counter,
        visit_counts=position.visit_counts,
        loop_counts=position.loop_counts,
    )
    run.reuse = reuse
    top = Traverser(run, chart, state, ReadonlyArgs(run_input), readonly=run_input)
    if observers.any:
        observers.emit("on_run_start", RunEvent(_root_context(run), shown_state(run, run_input)))
    if isinstance(position, MountPoint):
        lineage = _lineage(position)
        _fork_commit(top, Transaction(state, readonly=readonly), parent_run_id, lineage, position.counter)
        entry = ForkEntry(position, txn, parent_run_id)
        return await _finish(chart, run, top, lambda: continue_in_mount(top, position, entry), run_input)
    _fork_commit(top, txn, parent_run_id, position.at, position.counter)
    return await _finish(chart, run, top, lambda: continue_at(top, position), run_input)


class ForkEntry:
    """The ``subflows.Reentry`` of a fork inside a subflow: the subflow's state at the inner
    commit, then (innermost) the patch as its first commit and the walk on from there."""

    def __init__(self, point: MountPoint, txn: Transaction, parent_run_id: str) -> None:
        self.point = point
        self.txn = txn
        self.parent_run_id = parent_run_id

    def seed(self, full: str) -> tuple[dict[str, Any], dict[str, Any]]:
        point = self.point
        if isinstance(point.inner, MountPoint):
            return point.inner.state, dict(point.args)
        return point.inner_state, dict(point.args)  # the state ``txn`` was staged over

    async def enter(self, inner: Traverser) -> Any:
        point = self.point
        if isinstance(point.inner, MountPoint):
            deeper = ForkEntry(point.inner, self.txn, self.parent_run_id)
            return await continue_in_mount(inner, point.inner, deeper)
        _fork_commit(inner, self.txn, self.parent_run_id, list(point.at), point.inner.counter)
        return await continue_at(inner, point.inner)


async def continue_in_mount(top: Traverser, point: MountPoint, entry: ForkEntry) -> Any:
    """Re-enter the mount ``point.node`` under its own runtime id (as a resume does), commit
    its merge-back, then walk on after it."""
    node, rid, cont, invoker = point.node, point.rid, point.cont, point.invoker
    top._rids[id(node)] = rid
    try:
        output, txn, error = await top.run_mount(node, rid, (), entry)
        top.commit(node, rid, txn)
        if error is not None:
            top.fail(node, rid, error)
            raise error
    except PauseSignal as signal:
        signal.push(top.frame(node, "mount", cont, invoker, ()))
        raise
    except Exception as exc:
        unwind(top, node, exc, cont, invoker, ())
        raise
    if top.stopped:
        return output
    nxt, nxt_cont, nxt_invoker = top.follow(node, rid, cont)
    if nxt is None:
        return output
    return await top.walk(nxt, nxt_cont, nxt_invoker)


def _fork_commit(top: Traverser, txn: Transaction, parent_run_id: str, at: Any, counter: int) -> Commit:
    ops = txn.commit()
    full = top.prefix + FORK_STAGE
    rid = f"{full}#{counter}"
    ctx = TraversalContext(
        top.run.run_id, full, rid, FORK_NAME, subflow_path=top.subflow_path, depth=len(top.subflow_path)
    )
    observers = top.run.observers
    written = [
        ("write", key, top.state[key], "set", False) if key in top.state else ("write", key, None, "delete", False)
        for key in dict.fromkeys(op.path[0] for op in ops)
    ]
    if observers.has_data:  # the patch's writes, redacted as any stage's (the narrative's steps)
        recorder = StageRecorder(top, ctx)
        for _kind, key, value, operation, _hidden in written:
            recorder.write(key, value, operation)
    redacted: tuple[str, ...] = ()
    if ops and top.run.redacting:
        ops, redacted = redact_log(top.run, ops, 0)
    decision = {"forked_from": parent_run_id, "at": at}
    commit = Commit(len(top.commit_log), FORK_NAME, full, rid, tuple(ops), (), redacted, decision)
    top.commit_log.append(commit)
    if observers.has_ops and written:  # the same writes to a batch recorder, once
        batch = redacted_ops(top.run.redaction, written) if top.run.redacting else written
        if observers.ops_takers:
            try:
                observers.take_stage_ops(ctx, batch)
            except Exception as exc:  # a recorder must never break a run
                observers.failed("take_stage_ops", exc, ctx)
        if observers.wants("on_stage_ops"):
            observers.emit("on_stage_ops", StageOpsEvent(ctx, batch))
    if observers.executed_takers or observers.wants("on_stage_executed"):
        shown = at if isinstance(at, int) else "(" + ", ".join(str(k) for k in at) + ")"
        why = f"forked from run {parent_run_id} at commit {shown}"
        if top.prefix:
            why = f"the fork of run {parent_run_id} at commit {shown} patched this subflow"
        if observers.executed_takers:
            try:
                observers.take_stage_executed(ctx, FORK_NAME, why, "linear")
            except Exception as exc:  # a recorder must never break a run
                observers.failed("take_stage_executed", exc, ctx)
        if observers.wants("on_stage_executed"):
            observers.emit("on_stage_executed", StageExecutedEvent(ctx, FORK_NAME, why, "linear"))
    if observers.commit_takers:
        try:
            observers.take_commit(ctx, commit)
        except Exception as exc:  # a recorder must never break a run
            observers.failed("take_commit", exc, ctx)
    if observers.wants("on_commit"):
        observers.emit("on_commit", CommitEvent(ctx, commit))
    return commit
