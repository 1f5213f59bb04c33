"""Map stages: one child run per item, at most ``concurrency`` at once, gathered in item order.

Laws:
- ``items(scope)`` is read through the map's own transaction (its reads are the map's
  reads); it must give a list of JSON-safe items, else the map fails naming what it got.
- Each child is stamped with its own runtime id (``fetch#N``, N in item order) and sees
  ``ctx.item`` / ``ctx.index``. A function child runs over the committed state and writes
  into its own namespace ``runs/<map id>/<index>``; a chart child runs in its own state
  (``{}``; the item is ``ctx.item``), with its own log (``subflow_results`` under its
  runtime id) and its own execution counter under the prefix ``<map id>/<index>/``
  (``fetch/3/first#0``), so its ids do not depend on which child ran first. The child's
  result is the function's return value (a chart's: its last stage's).
- Children run concurrently (bounded by ``concurrency``) when the run has an event loop;
  their commits are appended in ITEM order once all have settled, then the map's own ONE
  commit writes the results, in item order, to ``into`` — the log is the same on every run.
- A function child runs under the map's ``retry=`` policy (else the run's), as any stage:
  each failed attempt is on its one commit (``Commit.attempts``) and told once
  (``on_retry``); only the last attempt's writes commit.
- A child that raises is on the record (its commit, its error event). With ``fail_fast``
  the lowest failing index fails the map with ``MapError`` (its ``index``, the child's
  error as ``__cause__``); without, its slot in ``into`` is ``{"index", "error"}``.
"""

from __future__ import annotations

import asyncio
import copy
from typing import TYPE_CHECKING, Any

from flowchart._core.context import ReadonlyArgs
from flowchart._core.errors import MapError, RunError
from flowchart._core.nodes import StageNode
from flowchart._core.scope import Scope, Transaction
from flowchart._core.values import NotJsonSafe, copy_json
from flowchart._engine.run_state import SubflowResult
from flowchart.events import MapEvent

if TYPE_CHECKING:
    from flowchart._engine.traversal import Hop, Traverser

Outcome = tuple[Any, Transaction | None, Exception | None]


def _items(traverser: Traverser, node: StageNode, txn: Transaction) -> list[Any]:
    full = traverser.prefix + node.id
    got = node.map.items(Scope(txn))
    if not isinstance(got, list | tuple):
        raise RunError(
            f"items of map '{full}' returned {type(got).__name__}; it must return a list (one child per item)",
            stage_id=full,
        )
    try:
        return copy_json(list(got))
    except NotJsonSafe as exc:
        raise RunError(
            f"items of map '{full}' holds {exc.what} at items{exc.where}; items must be JSON-safe", stage_id=full
        ) from None


async def _chart_child(child: Traverser, node: StageNode, rid: str, index: int, item: Any) -> Outcome:
    """Run a chart child in its own state; its one commit in the parent log is empty."""
    mount = node.mount
    assert mount is not None
    parent = child
    full = parent.prefix + node.id
    # its own counter under its own prefix: ids stay unique and do not depend on which
    # child ran first (the run's counts and results are shared)
    own = copy.copy(parent.run)
    own.counter = 0
    inner = type(parent)(
        own, mount.chart, {}, ReadonlyArgs({}), prefix=f"{full}/{index}/", subflow_path=(*parent.subflow_path, full)
    )
    inner.mapped = (index, item)
    inner.loop_limit = parent.loop_limit
    error: Exception | None = None
    output = None
    try:
        output = await inner.walk(mount.chart.root, None, None)
    except Exception as exc:
        error = exc
    run = parent.run
    run.subflow_results.add(
        SubflowResult(full, rid, inner.state, tuple(inner.commit_log), inner.initial, output, node.name),
        by_path=False,
    )
    if inner.stopped and error is None:
        parent.request_stop(inner.stop_reason)
    return output, None, error


async def run_map(
    traverser: Traverser,
    node: StageNode,
    rid: str,
    cont: StageNode | None,
    namespace: tuple[str, ...],
    invoker: str | None = None,
) -> tuple[Any, Hop]:
    """Run the map stage ``node`` (stamped ``rid``): children, their commits, then its own."""
    spec = node.map
    full = traverser.prefix + node.id
    txn = Transaction(traverser.state, namespace, traverser.readonly)
    run = traverser.run
    if run.redacting:
        txn.hides = run.redaction.hides
    if run.observers.has_ops:  # a batch recorder gets the map's own reads and writes at its commit
        txn.oplog = traverser.oplogs[rid] = []
        if not run.redacting:
            txn.snapshot = run.observers.snapshot
    if run.observers.has_data:
        from flowchart._engine.redacting import StageRecorder

        txn.observer = StageRecorder(traverser, traverser.context(node, rid))
    try:
        items = _items(traverser, node, txn)
    except Exception as exc:
        traverser.commit(node, rid, txn)
        traverser.fail(node, rid, exc)
        raise
    kept = _kept(run, full, len(items))  # children a failed run of this map finished: not run again
    rids = [traverser.stamp(node, visit=False) for index in range(len(items)) if index not in kept]
    traverser._rids[id(node)] = rid  # the map's own execution (a failure's recovery names it, not a child's)
    gate = asyncio.Semaphore(spec.concurrency) if traverser.run.concurrent else None

    async def one(index: int, item: Any, child_rid: str) -> tuple[Outcome, Traverser]:
        child = copy.copy(traverser)
        child.mapped = (index, item)
        child.stopped = False
        if node.mount is not None:
            return await _chart_child(child, node, child_rid, index, item), child
        assert node.fn is not None
        ns = (*namespace, "runs", node.id, str(index))
        if node.retry is None and run.retry is None:
            return await child.call_stage(node, node.fn, child_rid, ns), child
        return await child.attempt(node, node.fn, child_rid, ns), child

    async def bounded(index: int, item: Any, child_rid: str) -> tuple[Outcome, Traverser]:
        assert gate is not None
        async with gate:
            return await one(index, item, child_rid)

    work = list(
        zip(
            [i for i in range(len(items)) if i not in kept],
            [x for i, x in enumerate(items) if i not in kept],
            rids,
            strict=True,
        )
    )
    if gate is not None and len(work) > 1:
        settled = await asyncio.gather(*(bounded(*w) for w in work))
    else:
        settled = [await one(*w) for w in work]

    by_index: dict[int, Any] = dict(kept)
    failed: list[int] = []
    first: tuple[int, Exception] | None = None
    for (index, _item, child_rid), ((output, child_txn, error), child) in zip(work, settled, strict=True):
        traverser.commit(node, child_rid, child_txn)
        if child.stopped:
            traverser.request_stop(child.stop_reason)
        if error is not None:
            traverser.fail(node, child_rid, error)
            failed.append(index)
            first = first or (index, error)
            by_index[index] = {"index": index, "error": f"{type(error).__name__}: {error}"}
            continue
        by_index[index] = output
    results = [by_index[index] for index in range(len(items))]
    if first is not None and spec.fail_fast:
        index, error = first
        _keep_finished(run, rid, by_index, failed)
        traverser.commit(node, rid, txn)
        wrapped = MapError(
            f"map '{full}' failed at item {index}: {type(error).__name__}: {error}", stage_id=full, index=index
        )
        traverser.run.reported_errors[id(wrapped)] = traverser.run.reported_errors.get(id(error), (full, rid))
        raise wrapped from error
    try:
        txn.set(spec.into, results)
    except Exception as exc:
        traverser.commit(node, rid, txn)
        traverser.fail(node, rid, exc)
        raise
    traverser.commit(node, rid, txn)
    traverser.executed(node, rid, "linear")
    traverser.flow("on_map", node, rid, lambda c: MapEvent(c, node.name, len(items), tuple(failed)))
    if node.children and not traverser.stopped:  # a fork after the map (add_list_of_function after add_map)
        return await traverser.fork_after(node, rid, results, cont, invoker, namespace, told=True)
    return results, traverser.after_stop_or(node, rid, cont)


def _kept(run: Any, full: str, count: int) -> dict[int, Any]:
    """The children of map ``full`` that a failed run finished (its recovery's ``finished``), by
    index: the re-run of the failed map takes their results and runs only the others."""
    recovery = run.recovery
    if recovery is None or not recovery.finished or recovery.runtime_stage_id.rpartition("#")[0] != full:
        return {}
    return {int(index): result for index, result in recovery.finished.items() if int(index) < count}


def _keep_finished(run: Any, rid: str, by_index: dict[int, Any], failed: list[int]) -> None:
    """Note the children of the failing map execution ``rid`` that finished (JSON-safe results
    only: a checkpoint holds them), for the failure's ``Recovery.finished``."""
    finished: dict[str, Any] = {}
    for index, result in by_index.items():
        if index in failed:
            continue
        try:
            finished[str(index)] = copy_json(result)
        except NotJsonSafe:
            continue  # not kept: it runs again on resume
    run.map_finished[rid] = finished
