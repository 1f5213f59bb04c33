"""Recording chart runs into a run store: ``chart.run(..., store=)`` and ``chart.resume_run``.

Laws:
- A stored run advances in segments (see ``protocol``): a segment is run from what the
  store says — the input when the run has no checkpoint, else the checkpoint and the
  recorded answer — and lands with one atomic ``store.commit``. Nothing is written
  while a segment runs, so a process that dies mid-segment leaves the run exactly as
  it was before; advancing it again re-runs that segment from the same place.
- A stage that raises fails the run (``status = failed``, ``error`` = the exception
  type and message) and the error is re-raised unchanged; the run is recorded before.
- An answer is recorded (once, by the database) BEFORE the resume runs; a resume that
  then dies is finished by the next advance with the same recorded answer.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import CheckpointError
from ..values import NotJsonSafe, copy_json
from .protocol import RunRecord, RunStore, Segment, StoreError

if TYPE_CHECKING:
    from ..chart import FlowChart
    from ..result import RunResult


def new_run_id() -> str:
    """A fresh run id (32 hex characters)."""
    return uuid.uuid4().hex


def narrative_lines(recorders: Any) -> tuple[str, ...]:
    """The lines of the first recorder that has ``lines()`` (a narrative), else none."""
    for recorder in recorders:
        lines = getattr(recorder, "lines", None)
        if callable(lines):
            return tuple(lines())
    return ()


def segment_of(result: RunResult, start_seq: int, *, output: Any = None, narrative: tuple[str, ...] = ()) -> Segment:
    """The segment a finished or paused ``result`` writes (``output`` defaults to the result's)."""
    if result.paused:
        return Segment(
            start_seq, "paused", tuple(result.commit_log), result.checkpoint,
            question=result.output, narrative=narrative,
        )  # fmt: skip
    value = result.output if output is None else output
    return Segment(start_seq, "done", tuple(result.commit_log), output=value, narrative=narrative)


def failure_of(exc: BaseException, start_seq: int, result: RunResult | None = None) -> Segment:
    """The segment of a run that failed with ``exc`` (keeping ``result``'s commits if it has one)."""
    commits = () if result is None else tuple(result.commit_log)
    return Segment(start_seq, "failed", commits, error=f"{type(exc).__name__}: {exc}")


def check_chart(record: RunRecord, fingerprint: str) -> None:
    """Refuse to advance a run on a chart other than the one it was started on."""
    if record.chart_fingerprint != fingerprint:
        raise CheckpointError(
            f"run '{record.run_id}' belongs to another chart: its fingerprint is "
            f"{record.chart_fingerprint[:16]}… but this chart's is {fingerprint[:16]}…",
            path="$.chart_fingerprint",
        )


def advance(store: RunStore, run_id: str, fingerprint: str, step: Callable[[RunRecord], RunResult]) -> RunResult:
    """Run the next segment of ``run_id`` with ``step(record)`` and commit it."""
    record = store.get(run_id)
    check_chart(record, fingerprint)
    if record.next_step in ("wait", "finished"):
        raise StoreError(f"run '{run_id}' is {record.status}: there is nothing to advance")
    try:
        result = step(record)
    except Exception as exc:
        store.commit(run_id, failure_of(exc, record.next_seq))
        raise
    store.commit(run_id, segment_of(result, record.next_seq, narrative=narrative_lines(result.recorders)))
    return result


def run_chart(chart: FlowChart, store: RunStore, input: Any, run_id: str | None, **options: Any) -> RunResult:
    """``chart.run(input, store=store)``: record a new run and advance it to its pause or end."""
    from ..engine.runner import _run_input

    run_id = run_id or new_run_id()
    run_input = _run_input(input)
    store.create(run_id, kind="chart", chart_fingerprint=chart.fingerprint, input=run_input, chart_spec=chart.spec)
    return advance_chart(chart, store, run_id, **options)


def advance_chart(chart: FlowChart, store: RunStore, run_id: str, **options: Any) -> RunResult:
    """Advance a stored chart run (start it, or resume it with its recorded answer)."""

    def step(record: RunRecord) -> RunResult:
        if record.checkpoint is None:
            result = chart.run(record.input, **options)
        else:
            result = chart.resume(record.checkpoint, record.answer, **options)
        result.run_id = run_id
        return result

    return advance(store, run_id, chart.fingerprint, step)


def resume_chart(chart: FlowChart, store: RunStore, run_id: str, input: Any, **options: Any) -> RunResult:
    """``chart.resume_run(run_id, input, store=store)``: answer the pause once, then advance."""
    try:
        answer = copy_json(input)
    except NotJsonSafe as exc:
        raise TypeError(f"resume input is not JSON-safe: {exc.what} at input{exc.where}") from None
    record = store.get(run_id)
    check_chart(record, chart.fingerprint)
    store.answer(run_id, record.pause_answer_id(), answer)
    return advance_chart(chart, store, run_id, **options)
