"""``RunResult``: what a run (or a resume) returns, and ``result.trace()``, its file.

The result sits in the engine's layer and the trace beside it (``flowchart/_record/trace.py``
needs nothing above the commit log), so ``trace()`` is a plain call down, not an import
hidden in a function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.commits import Commit
from flowchart._record.record import Record, Reuse
from flowchart._record.trace import Trace

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart
    from flowchart._core.failure import RunFailure
    from flowchart._core.pause import Checkpoint
    from flowchart._core.redaction import Redaction
    from flowchart._engine.run_state import Run, SubflowResults
    from flowchart._engine.traversal import Traverser


@attrs.frozen
class RunResult:
    """The outcome of ``chart.run`` / ``chart.resume``.

    ``state`` is the final top-level state; ``output`` the last stage's return value (the
    pause data when paused); ``commit_log`` one ``Commit`` per executed stage;
    ``checkpoint`` is set when ``paused``; ``subflow_results`` holds each subflow
    execution once, by its mount's runtime id (a mount's path finds its latest one): its own
    state and commit log; ``initial_state`` is what the log folds from (``{}`` for a fresh
    run, the checkpoint's state for a resume);
    ``failure`` is set only on the partial result a failed run's error carries
    (``flowchart._core.failure.failed_run``).
    """

    state: dict[str, Any]
    output: Any
    commit_log: list[Commit]
    paused: bool
    checkpoint: Checkpoint | None
    run_id: str
    subflow_results: SubflowResults
    redacted_paths: list[str]
    initial_state: dict[str, Any]
    args: dict[str, Any]
    chart: FlowChart = attrs.field(repr=False)
    recorders: list[Any] = attrs.field(repr=False, factory=list)
    redaction: Redaction | None = attrs.field(default=None, repr=False)
    failure: RunFailure | None = None
    #: a reuse-fork's stages taken from the record (``chart.fork(..., reuse=True)``)
    reused: tuple[Reuse, ...] = ()

    @classmethod
    def of(
        cls,
        chart: FlowChart,
        run: Run,
        top: Traverser,
        output: Any,
        recorders: list[Any],
        run_input: dict[str, Any],
        checkpoint: Checkpoint | None,
    ) -> RunResult:
        """Assemble the result of a finished or paused traversal."""
        return cls(
            state=top.state,
            output=output,
            commit_log=top.commit_log,
            paused=checkpoint is not None,
            checkpoint=checkpoint,
            run_id=run.run_id,
            subflow_results=run.subflow_results,
            redacted_paths=sorted(run.redacted_paths),
            initial_state=top.initial,
            args=run_input,
            chart=chart,
            recorders=recorders,
            redaction=run.redaction if run.redaction.active else None,
            reused=_reused(run),
        )

    @property
    def execution_tree(self) -> list[dict[str, Any]]:
        """The executed stages in order, each with its subflow's stages nested under it."""
        tree = []
        for commit in self.commit_log:
            entry: dict[str, Any] = {
                "runtime_stage_id": commit.runtime_stage_id,
                "stage_id": commit.stage_id,
                "stage": commit.stage,
            }
            sub = self.subflow_results.get(commit.runtime_stage_id)
            if sub is not None:
                entry["subflow"] = [
                    {"runtime_stage_id": c.runtime_stage_id, "stage_id": c.stage_id, "stage": c.stage}
                    for c in sub.commit_log
                ]
            tree.append(entry)
        return tree

    @property
    def record(self) -> Record:
        """The run's record (``flowchart._record.record``): what this result is, as one frozen value."""
        return Record.of_result(self)

    def trace(self) -> Trace:
        """The run as a ``Trace`` (chart spec, commit log, narrative, checkpoint) to save or snapshot:
        its record, shown."""
        return Trace.of(self.record.shown())


def _reused(run: Run) -> tuple[Reuse, ...]:
    plan = run.reuse
    if plan is None:
        return ()
    return tuple(Reuse(rid, plan.parent_run_id, idx) for rid, idx in plan.reused.items())
