"""Retries and failure recovery: every commit boundary is a resume point.

Laws:
- A stage with a ``Retry`` policy (its own ``retry=``, else the run's ``run(retry=...)``)
  runs its body again when it raises an error the policy names, each attempt over a fresh
  transaction: a failed attempt's writes are discarded, never committed. The execution
  keeps ONE runtime id and leaves ONE commit — the last attempt's — which lists the
  failed attempts before it (``Commit.attempts``); each failed attempt is told once to
  recorders (``on_retry``: the narrative's ``[Retry]: retried X (attempt 2 of 3) after
  TimeoutError: ...``). When every attempt fails, the last one's partial writes commit
  and its error fails the run, as without a policy. Waiting goes through the policy's
  deterministic ``delay`` and its ``sleep`` seam.
- A failed run leaves a resume point. While the error unwinds, the level where it arose
  records the failed execution (the leaf) and each enclosing level adds its frame (a
  subflow mount, a fork), as a pause does; the runner turns that into a ``Checkpoint``
  whose ``recovery`` says which execution failed and how to undo its partial commit.
  Resuming re-runs that stage from the state BEFORE its partial commit (a LangGraph
  node re-runs from the last good checkpoint), and nothing that committed runs again:
  the re-run's one commit carries the undo writes with its own (``Commit.recovers``
  names the execution it replaces), so the log still folds to the live state.
- Where no single resume point exists (two children of one fork failed), the run has
  no checkpoint and the failure says why.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowchart._core.commits import replay
from flowchart._core.nodes import StageCallable, StageNode
from flowchart._core.pause import Recovery, ResumeFrame
from flowchart._core.retry import Attempt, Retry, error_message
from flowchart.events import RetryEvent

if TYPE_CHECKING:
    from flowchart._core.scope import Transaction
    from flowchart._engine.run_state import Run
    from flowchart._engine.traversal import Traverser


# -- retries -----------------------------------------------------------------------------------
async def attempt(
    traverser: Traverser, node: StageNode, call: StageCallable, rid: str, namespace: tuple[str, ...], *given: Any
) -> tuple[Any, Transaction, Exception | None]:
    """``call_stage`` under ``node``'s retry policy: try again while the policy allows."""
    run = traverser.run
    policy: Retry | None = node.retry if node.retry is not None else run.retry
    if policy is None:
        return await traverser.call_stage(node, call, rid, namespace, *given)
    failed: list[Attempt] = []
    number = 1
    key = traverser.prefix + node.id
    while True:
        output, txn, error = await traverser.call_stage(node, call, rid, namespace, *given)
        if error is None or number >= policy.attempts or not policy.retries(error):
            break
        record = Attempt.of(number, error)
        failed.append(record)
        delay = policy.delay(number, key)
        number += 1
        if run.observers.wants("on_retry"):
            event = RetryEvent(
                traverser.context(node, rid),
                node.name,
                number,
                policy.attempts,
                record.error_type,
                record.message,
                delay,
            )
            run.observers.emit("on_retry", event)
        await policy.wait(delay)
    if failed:
        run.retry_log[rid] = tuple(failed)
    return output, txn, error


# -- recovery: re-running a failed execution ------------------------------------------------------
def seed(run: Run, stage_id: str, txn: Transaction) -> None:
    """Stage the undo of the failed execution in the re-run's transaction (before it runs)."""
    recovery: Recovery = run.recovery
    if recovery.runtime_stage_id.rpartition("#")[0] != stage_id:
        return
    for key, value in recovery.restore.items():
        txn.set(key, value)
    for key in recovery.discard:
        txn.delete(key)


def recovered(run: Run, stage_id: str) -> str | None:
    """The failed runtime id the commit of ``stage_id`` replaces (once), else ``None``."""
    recovery: Recovery = run.recovery
    if recovery.runtime_stage_id.rpartition("#")[0] != stage_id:
        return None
    run.recovery = None
    run.failure_site = _Replaced(recovery)
    return recovery.runtime_stage_id


class _Replaced:
    """Remembers the recovery a re-run consumed, in case the re-run fails too."""

    __slots__ = ("recovery",)
    error = None

    def __init__(self, recovery: Recovery) -> None:
        self.recovery = recovery


async def rerun(traverser: Traverser, node: StageNode, frame: ResumeFrame, cont: Any, recovery: Recovery) -> Any:
    """Run the failed stage ``node`` again from the state before its failed commit, then go on."""
    run = traverser.run
    full = traverser.prefix + node.id
    # the failed visit is replaced, not repeated: the re-run takes its place in the counts
    run.visit_counts[full] = max(run.visit_counts.get(full, 1) - 1, 0)
    run.recovery = recovery
    return await traverser.walk(node, cont, frame.invoker_stage_id, tuple(frame.namespace))


# -- recording where a run failed -----------------------------------------------------------------
class FailureSite:
    """Where a run failed, built level by level while the error unwinds."""

    __slots__ = ("broken", "error", "frames", "pending_mount", "recovery", "subflow_args", "subflow_states")

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.frames: list[ResumeFrame] = []
        self.recovery: Recovery | None = None
        self.subflow_states: dict[str, dict[str, Any]] = {}
        self.subflow_args: dict[str, dict[str, Any]] = {}
        #: a subflow mount whose inner run failed, waiting for its frame
        self.pending_mount: str | None = None
        #: why there is no single resume point (``None``: there is one)
        self.broken: str | None = None


def unwind(
    traverser: Traverser,
    node: StageNode,
    error: Exception,
    cont: StageNode | None,
    invoker: str | None,
    namespace: tuple[str, ...],
) -> None:
    """Record ``node``'s part of the failure ``error`` as it leaves this level (never raises)."""
    run = traverser.run
    site = run.failure_site
    if site is not None and site.error is error:
        _enclose(traverser, site, node, cont, invoker, namespace)
        return
    previous = site.recovery if isinstance(site, _Replaced) else None
    site = run.failure_site = FailureSite(error)
    full = traverser.prefix + node.id
    where = run.reported_errors.get(id(error))
    failed_id = where[0] if where is not None else full
    if failed_id != full and (node.children or node.kind == "selector"):
        child = next((c for c in node.children or node.branches.values() if traverser.prefix + c.id == failed_id), None)
        others = _failed_children(traverser, node, where[1] if where else "")
        if child is None or len(others) > 1:
            site.broken = (
                f"children {', '.join(repr(o) for o in others)} of '{full}' all failed: resume one fork child at a time"
            )
            return
        ns = namespace if child.kind == "subflow" else (*namespace, "runs", child.id)
        leaf = ResumeFrame.at(failed_id, "stage", node.next, full, ns, traverser.prefix)
        site.recovery = _recovery(traverser, child, ns, error, previous)
        site.frames = [traverser.frame(node, "fork", cont, invoker, namespace), leaf]
        return
    site.recovery = _recovery(traverser, node, namespace, error, previous)
    site.frames = [traverser.frame(node, "stage", cont, invoker, namespace)]


def _enclose(
    traverser: Traverser,
    site: FailureSite,
    node: StageNode,
    cont: StageNode | None,
    invoker: str | None,
    namespace: tuple[str, ...],
) -> None:
    """An inner level recorded the failure: add this level's frame (a mount, a fork)."""
    if site.broken is not None or not site.frames:
        return
    full = traverser.prefix + node.id
    if node.kind == "subflow" and site.pending_mount == full:
        site.frames.insert(0, traverser.frame(node, "mount", cont, invoker, namespace))
        site.pending_mount = None
        _failed_mount(traverser, site, node, 0)
        return
    if node.children or node.kind == "selector":
        kids = {traverser.prefix + c.id for c in (*node.children, *node.branches.values())}
        pending = site.pending_mount
        if pending in kids:  # a subflow child of this fork failed inside
            mount = ResumeFrame.at(pending, "mount", None, full, namespace, traverser.prefix)
            site.frames[:0] = [traverser.frame(node, "fork", cont, invoker, namespace), mount]
            site.pending_mount = None
            child = next(c for c in (*node.children, *node.branches.values()) if traverser.prefix + c.id == pending)
            _failed_mount(traverser, site, child, 1)
            return
        if site.frames[0].stage_id in kids:  # a re-run child of this fork failed again
            site.frames.insert(0, traverser.frame(node, "fork", cont, invoker, namespace))
            return
    if site.frames[0].stage_id == full:
        return  # the leaf's own level, seen again on the way out of a resume
    site.broken = f"the failure at '{site.frames[-1].stage_id}' left '{full}' in an unknown state"


def _failed_mount(traverser: Traverser, site: FailureSite, node: StageNode, index: int) -> None:
    """Note on the mount frame ``site.frames[index]`` the runtime id of the failed mount ``node``'s
    commit: the commit of the resumed mount replaces it."""
    rid = traverser._rids.get(id(node))
    if rid is not None:
        site.frames[index].replaces = rid


def unresumable(run: Run, error: Exception, why: str) -> None:
    """Record that the failure ``error`` has no resume point, and why."""
    site = run.failure_site
    if not (isinstance(site, FailureSite) and site.error is error):
        site = run.failure_site = FailureSite(error)
    site.broken = site.broken or why


def note_subflow(run: Run, error: Exception, mount_id: str, inner: Traverser) -> None:
    """A subflow's inner run failed with ``error``: keep its state for the resume."""
    site = run.failure_site
    if isinstance(site, FailureSite) and site.error is error and site.frames:
        site.subflow_states[mount_id] = inner.state
        site.subflow_args[mount_id] = inner.args.to_dict()
        site.pending_mount = mount_id
    else:  # it failed between stages in there (a cancel, the loop cap): re-running the mount would repeat them
        unresumable(run, error, f"the run failed between stages inside subflow '{mount_id}'")


def _failed_children(traverser: Traverser, node: StageNode, rid: str) -> list[str]:
    """The children of ``node`` (this level) that failed in the same batch as ``rid``."""
    ids = {traverser.prefix + c.id for c in (*node.children, *node.branches.values())}
    batch = {traverser._rids.get(id(c)) for c in (*node.children, *node.branches.values())}
    return [sid for sid, r in traverser.run.reported_errors.values() if sid in ids and r in batch]


def _recovery(
    traverser: Traverser, node: StageNode, namespace: tuple[str, ...], error: Exception, previous: Recovery | None
) -> Recovery:
    """How to undo the failed commit of ``node`` on this level (its values before the commit)."""
    rid = traverser._rids.get(id(node), f"{traverser.prefix}{node.id}#{traverser.run.counter}")
    log = traverser.commit_log
    position = next((i for i in range(len(log) - 1, -1, -1) if log[i].runtime_stage_id == rid), None)
    recovery = Recovery(rid, type(error).__name__, error_message(error))
    finished = traverser.run.map_finished.get(rid)
    if finished:  # a failed map: its finished children are kept, the resume runs the others
        recovery.finished.update(finished)
    if (
        previous is not None
        and previous.finished
        and previous.runtime_stage_id.rpartition("#")[0] == rid.rpartition("#")[0]
    ):
        for index, result in previous.finished.items():  # a re-run that failed again keeps the first's
            recovery.finished.setdefault(index, result)
    if position is None:
        return recovery
    if previous is not None and log[position].recovers == previous.runtime_stage_id:
        # a re-run failed again: undo back to before the FIRST failure
        recovery.restore.update(previous.restore)
        recovery.discard.extend(previous.discard)
    depth = len(namespace)
    keys = [op.path[depth] for op in log[position].trace if len(op.path) > depth]
    if not keys:
        return recovery
    before: Any = replay(log, upto=position - 1, initial=traverser.initial)
    for part in namespace:
        before = before.get(part) if isinstance(before, dict) else None
    before = before if isinstance(before, dict) else {}
    real = traverser.run.failed_before.get(rid, {})  # the log holds placeholders for hidden values
    for key in dict.fromkeys(keys):
        if key in recovery.restore or key in recovery.discard:
            continue
        if key in real:
            recovery.restore[key] = real[key]
        elif key in before:
            recovery.restore[key] = before[key]
        else:
            recovery.discard.append(key)
    return recovery


__all__ = ["FailureSite", "attempt", "note_subflow", "recovered", "rerun", "seed", "unresumable", "unwind"]
