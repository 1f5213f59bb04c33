"""``chart.fork``: continue a recorded run from any commit boundary, with an edited state.

Laws:
- The source is a RECORD — a ``Trace``, a ``RunResult`` or a stored run — and must be of
  this chart: fingerprints differ → ``ForkError`` naming both, before anything runs.
- The fork's state is ``replay(log, upto=at)`` with ``patch`` applied as the fork's
  first commit; it continues at the stage that followed commit ``at`` (``engine.positions``)
  with the parent's counters there. No stage at or before ``at`` runs again.
- ``at`` may be a path ``(m, j)``: commit ``j`` of the log of the subflow whose mount
  committed at ``m`` (``(m, j, k)`` one subflow deeper). The patch is then applied to
  that subflow's state, ``replay(subflow log, upto=j, initial=its mapped input)``.
- A source whose log does not start at the chart's root (a resumed segment, a fork's own
  result) is refused naming what to fork instead; a stored run has the whole log.
- ``reuse=True`` (``options.reuse``): every stage after ``at`` whose recorded reads hold the
  values they held in the parent is taken from the record (``flowchart._engine.reusing``); a
  patch to a key no later stage read is refused.
- With a store the fork is recorded there as a run of its own whose log is the parent's
  commits ``0..at`` followed by the fork's (so it folds from ``{}`` like every stored
  run), with its lineage (``parent_run_id``, ``forked_at``); ``store.forks(run_id)``
  lists a run's forks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.commits import Commit, replay
from flowchart._core.coroutines import run_coroutine
from flowchart._core.errors import ForkError

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart
    from flowchart._core.options import RunOptions
    from flowchart._record.result import RunResult
    from flowchart.store.protocol import RunStore


@attrs.frozen
class ForkSource:
    """What a fork needs from a record: its log (from the root), input and how it ended."""

    run_id: str
    fingerprint: str
    commit_log: tuple[Commit, ...]
    run_input: dict[str, Any]
    subflows: Mapping[str, Sequence[Commit]] | None
    ended_early: str | None
    initial_state: dict[str, Any]
    #: each subflow execution's initial state (its mapped input), by mount runtime id
    subflow_initials: Mapping[str, Mapping[str, Any]] = attrs.Factory(dict)


def source_of(source: Any, store: RunStore | None) -> ForkSource:
    """Read ``source`` (a ``Trace``, a ``RunResult`` or a stored run id) as a ``ForkSource``."""
    from flowchart._record.result import RunResult
    from flowchart._record.trace import Trace

    if isinstance(source, Trace):
        ended = "the run paused there" if source.checkpoint is not None else None
        if source.failure is not None:
            ended = "that stage failed: fork at the commit before it to run it again"
        subs = {rid: tuple(sub.commit_log) for rid, sub in source.subflows.items()}
        initials = {rid: sub.initial_state for rid, sub in source.subflows.items()}
        return ForkSource(
            source.run_id,
            source.chart_fingerprint,
            tuple(source.commit_log),
            dict(source.run_input),
            subs,
            ended,
            dict(source.initial_state),
            initials,
        )
    if isinstance(source, RunResult):
        ended = "the run paused there" if source.paused else None
        if source.failure is not None:
            ended = "that stage failed: fork at the commit before it to run it again"
        mine = {k: v for k, v in source.subflow_results.items() if k == v.runtime_stage_id}
        subs = {k: tuple(v.commit_log) for k, v in mine.items()}
        return ForkSource(
            source.run_id,
            source.chart.fingerprint,
            tuple(source.commit_log),
            dict(source.args),
            subs,
            ended,
            dict(source.initial_state),
            {k: v.initial for k, v in mine.items()},
        )
    if isinstance(source, str):
        if store is None:
            raise ForkError(f"fork('{source}'): a run id needs store=... (the store the run is recorded in)")
        record = store.get(source)
        ended = {"paused": "the run paused there", "failed": "that stage failed: fork at the commit before it"}.get(
            record.status
        )
        subs = {rid: tuple(sub.commit_log) for rid, sub in record.subflows.items()}
        initials = {rid: sub.initial_state for rid, sub in record.subflows.items()}
        return ForkSource(
            record.run_id,
            record.chart_fingerprint,
            tuple(record.commit_log),
            dict(record.input),
            subs or None,
            ended,
            {},
            initials,
        )
    raise TypeError(f"fork(source): expected a Trace, a RunResult or a stored run id, got {type(source).__name__}")


def address(at: Any) -> int | tuple[int, ...]:
    """``at`` as a commit index, or a path into subflow logs: ``(9, 1)`` is commit 1 of the
    log of the subflow whose mount committed at commit 9 (``(9, 1, 0)`` one level deeper)."""
    if isinstance(at, (tuple, list)):
        if not at or not all(isinstance(k, int) and not isinstance(k, bool) for k in at):
            raise TypeError(f"fork(at=...) as a path must be commit indexes (ints), got {at!r}")
        return at[0] if len(at) == 1 else tuple(at)
    if isinstance(at, bool) or not isinstance(at, int):
        raise TypeError(
            f"fork(at=...) must be a commit index (an int), got {type(at).__name__}; a commit inside a "
            "subflow is a tuple of ints, e.g. (9, 1): commit 1 of the subflow mounted at commit 9"
        )
    return at


def prepare(chart: FlowChart, source: Any, at: Any, store: RunStore | None) -> tuple[ForkSource, Any, dict[str, Any]]:
    """Check ``source`` against ``chart`` and locate ``at``: (source, position, state at ``at``)."""
    from flowchart._engine.positions import locate, locate_inside

    at = address(at)

    src = source_of(source, store)
    if src.fingerprint != chart.fingerprint:
        raise ForkError(
            f"cannot fork run '{src.run_id}' on this chart: the run's chart fingerprint is {src.fingerprint[:16]}… "
            f"but this chart's is {chart.fingerprint[:16]}…; fork it with the chart it ran on"
        )
    if src.initial_state or (src.commit_log and src.commit_log[0].stage_id == "fork" and store is None):
        raise ForkError(
            f"run '{src.run_id}' did not start at the chart's root (it is a resumed segment or a fork): "
            "its log cannot be walked from the start; fork the stored run (store=...) or the original run"
        )
    if isinstance(at, tuple):
        inside = locate_inside(
            chart,
            src.commit_log,
            at,
            initial={},
            ended_early=src.ended_early,
            subflows=src.subflows,
            initials=src.subflow_initials,
        )
        return src, inside, inside.state
    position = locate(chart, src.commit_log, at, ended_early=src.ended_early, subflows=src.subflows)
    state = replay(src.commit_log, upto=at) if at >= 0 else {}
    return src, position, state


def reuse_plan(src: ForkSource, at: int | tuple[int, ...], patch: Mapping[str, Any] | None) -> Any:
    """The plan of a reuse-fork (``engine.reusing``): refused inside a subflow, and for a patch
    to a key no stage after ``at`` read (the fork would change nothing a stage sees)."""
    from flowchart._engine.reusing import ReusePlan

    if isinstance(at, tuple):
        raise ForkError("fork(..., reuse=True) forks at a top-level commit: a fork inside a subflow re-runs it")
    later = {key for commit in src.commit_log[at + 1 :] for key in commit.reads}
    unread = sorted(key for key in (patch or {}) if key not in later)
    if unread:
        raise ForkError(
            f"fork(..., reuse=True): no stage after commit {at} of run '{src.run_id}' read "
            f"{', '.join(repr(k) for k in unread)}: the patch changes nothing a stage sees (every stage would be "
            "reused); patch a key the chart reads, or fork without reuse"
        )
    return ReusePlan(src.run_id, src.commit_log, at, src.initial_state)


def fork_chart(
    chart: FlowChart,
    source: Any,
    at: int | tuple[int, ...],
    patch: Mapping[str, Any] | None,
    options: RunOptions,
    *,
    kind: str = "chart",
    output: Any = None,
) -> RunResult:
    """``chart.fork``: see the module law. With ``options.store`` the fork is recorded there
    as a run of ``kind`` (an agent's fork is ``"agent"`` and stores ``output(result)``)."""
    from flowchart._engine.rerun import fork_run

    store = options.store
    at = address(at)
    src, position, state = prepare(chart, source, at, store)

    plan = reuse_plan(src, at, patch) if options.reuse else None

    def make(concurrent: bool) -> Any:
        return fork_run(
            chart, position, state, src.run_input, patch, src.run_id, options, concurrent=concurrent, reuse=plan
        )

    needs_loop = chart.needs_loop or options.timeout is not None
    if store is None:
        return run_coroutine(make, needs_loop)
    from flowchart.store.forks import record_fork

    return record_fork(chart, store, src, at, options.run_id, lambda: run_coroutine(make, needs_loop), kind, output)
