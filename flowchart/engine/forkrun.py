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
- The fork ends like any run (result, pause with a checkpoint, or the error re-raised).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..commits import Commit
from ..context import ReadonlyArgs
from ..errors import ReadonlyInputError, ScopeWriteError
from ..events import CommitEvent, RunEvent, StageExecutedEvent, StageOpsEvent, TraversalContext
from ..options import RunOptions
from ..pause import PauseSignal
from ..result import RunResult
from ..scope import Transaction
from .entry import _finish, _root_context
from .observers import NO_OBSERVERS, Observers
from .positions import Position
from .run_state import Run
from .traversal import Traverser, _redacted_ops, _StageRecorder

if TYPE_CHECKING:
    from ..chart import FlowChart

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


async def fork_run(
    chart: FlowChart,
    position: Position,
    state: dict[str, Any],
    run_input: dict[str, Any],
    patch: Mapping[str, Any] | None,
    parent_run_id: str,
    options: RunOptions,
    *,
    concurrent: bool,
) -> RunResult:
    """Start the fork of ``parent_run_id`` at ``position`` over ``state`` with ``patch``."""
    readonly = frozenset(run_input)
    txn = patch_ops(state, patch, readonly)  # refused here, before a run exists
    observers = Observers(options.recorders) if options.recorders else NO_OBSERVERS
    run = Run(
        options, observers=observers, concurrent=concurrent, counter=position.counter,
        visit_counts=position.visit_counts, loop_counts=position.loop_counts,
    )  # fmt: skip
    top = Traverser(run, chart, state, ReadonlyArgs(run_input), readonly=readonly)
    if observers.any:
        observers.emit("on_run_start", RunEvent(_root_context(run), run_input))
    _fork_commit(top, txn, parent_run_id, position)
    return await _finish(chart, run, top, lambda: continue_at(top, position), run_input)


def _fork_commit(top: Traverser, txn: Transaction, parent_run_id: str, position: Position) -> Commit:
    ops = txn.commit()
    rid = f"{FORK_STAGE}#{position.counter}"
    ctx = TraversalContext(top.run.run_id, FORK_STAGE, rid, FORK_NAME)
    observers = top.run.observers
    written = [
        ("write", key, top.state[key], "set", False) if key in top.state else ("write", key, None, "delete", False)
        for key in dict.fromkeys(op.path[0] for op in ops)
    ]
    if observers.has_data:  # the patch's writes, redacted as any stage's (the narrative's steps)
        recorder = _StageRecorder(top, ctx)
        for _kind, key, value, operation, _hidden in written:
            recorder.write(key, value, operation)
    redacted: tuple[str, ...] = ()
    if ops and top.run.redacting:
        ops, redacted = top._redact(ops, 0)
    decision = {"forked_from": parent_run_id, "at": position.at}
    commit = Commit(len(top.commit_log), FORK_NAME, FORK_STAGE, rid, tuple(ops), (), redacted, decision)
    top.commit_log.append(commit)
    if observers.has_ops and written:  # the same writes to a batch recorder, once
        batch = _redacted_ops(top.run.redaction, written) if top.run.redacting else written
        observers.emit("on_stage_ops", StageOpsEvent(ctx, batch))
    if observers.wants("on_stage_executed"):
        why = f"forked from run {parent_run_id} at commit {position.at}"
        observers.emit("on_stage_executed", StageExecutedEvent(ctx, FORK_NAME, why, "linear"))
    if observers.wants("on_commit"):
        observers.emit("on_commit", CommitEvent(ctx, commit))
    return commit
