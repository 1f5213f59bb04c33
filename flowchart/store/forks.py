"""Recording a fork in a run store: the new run, its lineage, and its first segment.

Law: a stored fork is a run of its own whose log is the parent's commits ``0..at``
followed by the fork's own (its ``fork`` commit first), so it folds from ``{}`` and
resumes, lists and exports like every stored run; ``parent_run_id`` and ``forked_at``
record where it came from, and ``store.forks(parent)`` lists it. The fork's first
segment lands with one ``commit`` (a failure is recorded ``failed``, as any run's).
A fork inside a subflow (``at = (m, ..., j)``) keeps the same law at every level: its
log is the parent's commits ``0..m-1`` then the fork's (``forked_at = m - 1``; the fork
commit's decision holds the whole address), and each subflow log on the path is the
parent's inner commits up to the boundary then the fork's, from the parent's initial state,
numbered by position (so the run's trace, its page and ``agent runs trace`` load it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.failure import failed_run
from flowchart.store.protocol import RunStore, renumber
from flowchart.store.runs import failure_of, land, new_run_id

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart
    from flowchart._record.result import RunResult
    from flowchart._rerun import ForkSource


def record_fork(
    chart: FlowChart,
    store: RunStore,
    src: ForkSource,
    at: int | tuple[int, ...],
    run_id: str | None,
    run: Callable[[], RunResult],
    kind: str = "chart",
    output: Callable[[RunResult], Any] | None = None,
) -> RunResult:
    """Create the fork's stored run (with lineage), run it, and land its first segment
    (``output(result)`` is stored when it finished)."""
    run_id = run_id or new_run_id()
    record = store.create(
        run_id,
        kind=kind,
        chart_fingerprint=chart.fingerprint,
        input=src.run_input,
        chart_spec=chart.spec,
        parent_run_id=src.run_id,
        forked_at=at if isinstance(at, int) else at[0] - 1,
    )
    try:
        result = run()
    except Exception as exc:
        failed = failed_run(exc)
        partial = None if failed is None else _whole(src, at, failed[0])
        store.commit(run_id, failure_of(exc, record.next_seq, partial))
        raise
    result = attrs.evolve(result, run_id=run_id)
    stored = _whole(src, at, result)
    land(store, record, stored, output)
    return result


def _whole(src: ForkSource, at: int | tuple[int, ...], result: RunResult) -> RunResult:
    """``result`` with the parent's commits before the fork put in front, at every level."""
    if isinstance(at, int):
        return attrs.evolve(result, commit_log=[*src.commit_log[: at + 1], *result.commit_log])
    subs: dict[str, Any] = {}
    log: Any = src.commit_log
    for depth, k in enumerate(at[:-1]):
        rid = log[k].runtime_stage_id
        log = (src.subflows or {})[rid]
        keep = at[depth + 1] + 1 if depth == len(at) - 2 else at[depth + 1]
        sub = result.subflow_results.get(rid)
        if sub is not None and sub.runtime_stage_id == rid:
            joined = renumber((*log[:keep], *sub.commit_log), 0)  # idx == position, as a trace holds it
            subs[rid] = attrs.evolve(sub, commit_log=joined, initial=dict(src.subflow_initials[rid]))
    whole = result.subflow_results.replaced(subs)
    return attrs.evolve(result, commit_log=[*src.commit_log[: at[0]], *result.commit_log], subflow_results=whole)


__all__ = ["record_fork"]
