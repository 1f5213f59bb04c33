"""Recording a fork in a run store: the new run, its lineage, and its first segment.

Law: a stored fork is a run of its own whose log is the parent's commits ``0..at``
followed by the fork's own (its ``fork`` commit first), so it folds from ``{}`` and
resumes, lists and exports like every stored run; ``parent_run_id`` and ``forked_at``
record where it came from, and ``store.forks(parent)`` lists it. The fork's first
segment lands with one ``commit`` (a failure is recorded ``failed``, as any run's).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from ..failure import failed_run
from .protocol import RunStore
from .runs import failure_of, land, new_run_id

if TYPE_CHECKING:
    from ..chart import FlowChart
    from ..forking import ForkSource
    from ..result import RunResult


def record_fork(
    chart: FlowChart,
    store: RunStore,
    src: ForkSource,
    at: int,
    run_id: str | None,
    run: Callable[[], RunResult],
    kind: str = "chart",
    output: Callable[[RunResult], Any] | None = None,
) -> RunResult:
    """Create the fork's stored run (with lineage), run it, and land its first segment
    (``output(result)`` is stored when it finished)."""
    run_id = run_id or new_run_id()
    record = store.create(
        run_id, kind=kind, chart_fingerprint=chart.fingerprint, input=src.run_input, chart_spec=chart.spec,
        parent_run_id=src.run_id, forked_at=at,
    )  # fmt: skip
    prefix = list(src.commit_log[: at + 1])
    try:
        result = run()
    except Exception as exc:
        failed = failed_run(exc)
        partial = None if failed is None else attrs.evolve(failed[0], commit_log=[*prefix, *failed[0].commit_log])
        store.commit(run_id, failure_of(exc, record.next_seq, partial))
        raise
    result.run_id = run_id
    stored = attrs.evolve(result, commit_log=[*prefix, *result.commit_log])
    land(store, record, stored, output)
    return result


__all__ = ["record_fork"]
