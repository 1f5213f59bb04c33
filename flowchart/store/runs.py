"""Recording chart runs into a run store: ``chart.run(..., store=)`` and ``chart.resume_run``.

Laws:
- A stored run advances in segments (see ``protocol``): a segment is run from what the
  store says — the input when the run has no checkpoint, else the checkpoint and the
  recorded answer — and lands with one atomic ``store.commit``. Nothing is written
  while a segment runs, so a process that dies mid-segment leaves the run exactly as
  it was before; advancing it again re-runs that segment from the same place.
- A stage that raises fails the run and the error is re-raised unchanged; the run is
  recorded before: ``status = failed``, every commit made before the failure (the
  failing stage's partial commit included), the narrative so far, ``error`` (the
  exception type and message) and ``failure`` (the same, with the stage that raised).
- The run's redaction is stored with it at ``create``, so every reader hides what the
  run hid; a chart run resumed without ``redaction=`` keeps the stored one.
- An answer is recorded (once, by the database) BEFORE the resume runs; a resume that
  then dies is finished by the next advance with the same recorded answer.
- A failed segment stores the failure's checkpoint (``flowchart._core.failure.failed_checkpoint``);
  ``resume_run`` on a failed run flips it back to ``running`` (``store.retry``: one process
  wins) and advances it from that checkpoint, re-running only the stage that failed.
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.errors import CheckpointError
from flowchart._core.failure import RunFailure, failed_checkpoint, failed_run
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.options import RunOptions
from flowchart._core.values import NotJsonSafe, copy_json
from flowchart._engine.entry import _run_input, resume_sync, run_sync
from flowchart.recorders.narrative import narrative
from flowchart.store.protocol import RunRecord, RunStore, Segment, StoreError, append_segment

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart
    from flowchart._core.commits import Commit
    from flowchart._record.result import RunResult


# -- which store a run was recorded in, by run id (this process only) ----------------------------
# ``chart.run(..., store=s)`` then ``chart.resume_run(run_id, input)`` with no ``store=`` is
# promised (API.md). A built chart is immutable, so the memory is not on the chart: it is here,
# keyed by RUN ID, so two runs of one chart in two stores each resume from their own. Stores are
# held weakly (a dropped store is forgotten) and only the most recent ``REMEMBERED_RUNS`` ids are
# kept; in another process, or past that, pass ``store=``.
REMEMBERED_RUNS = 10_000
_stores: OrderedDict[str, Callable[[], RunStore | None]] = OrderedDict()
_stores_lock = threading.Lock()


def remember_store(run_id: str, store: RunStore) -> None:
    """Note that ``run_id`` is recorded in ``store`` (so ``resume_run(run_id)`` can find it)."""
    try:
        ref: Callable[[], RunStore | None] = weakref.ref(store)
    except TypeError:  # a store class with __slots__ and no __weakref__: hold it
        ref = lambda: store  # noqa: E731
    with _stores_lock:
        _stores[run_id] = ref
        _stores.move_to_end(run_id)
        while len(_stores) > REMEMBERED_RUNS:
            _stores.popitem(last=False)


def store_of(run_id: str) -> RunStore | None:
    """The store this process last recorded ``run_id`` in, or ``None``."""
    with _stores_lock:
        ref = _stores.get(run_id)
    return None if ref is None else ref()


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


def narrative_records(recorders: Any) -> tuple[NarrativeEntry, ...]:
    """The records of the first recorder that has ``records()`` (a narrative), else none."""
    for recorder in recorders:
        records = getattr(recorder, "records", None)
        if callable(records):
            return tuple(records())
    return ()


def appended(result: RunResult | None) -> tuple[tuple[Commit, ...], tuple[NarrativeEntry, ...], dict[str, Any]]:
    """What one advance appends to its run's ``Record``, read from the segment's own record
    (``result.record``): its commits, its narrative records (when a recorder keeps records; bare
    lines are stored as lines) and its subflow logs, their starting state under the run's rule."""
    if result is None:
        return (), (), {}
    record = result.record
    keeps = any(callable(getattr(recorder, "records", None)) for recorder in result.recorders)
    records = record.narrative if keeps and record.narrative is not None else ()
    hides = record.redaction
    subflows = dict(record.subflows)
    if hides is not None and hides.active:
        subflows = {
            rid: attrs.evolve(sub, initial_state=hides.within(sub.mount_id).scrub_state(sub.initial_state))
            for rid, sub in subflows.items()
        }
    return record.commits, records, subflows


def segment_of(result: RunResult, start_seq: int, *, output: Any = None, narrative: tuple[str, ...] = ()) -> Segment:
    """The segment a finished or paused ``result`` writes (``output`` defaults to the result's): a
    slice of its record (``appended``) with the run's new status."""
    commits, records, subflows = appended(result)
    if result.paused:
        return Segment(
            start_seq,
            "paused",
            commits,
            result.checkpoint,
            question=result.output,
            narrative=narrative,
            records=records,
            subflows=subflows,
        )
    value = result.output if output is None else output
    return Segment(start_seq, "done", commits, output=value, narrative=narrative, records=records, subflows=subflows)


def failure_of(exc: BaseException, start_seq: int, result: RunResult | None = None) -> Segment:
    """The segment of a run that failed with ``exc``: a slice of the record of ``result`` (else of
    the run ``exc`` carries, ``flowchart._core.failure``), the error and where it arose."""
    failed = failed_run(exc)
    failure = failed[1] if failed is not None else RunFailure.of(exc)
    if result is None and failed is not None:
        result = failed[0]
    commits, records, subflows = appended(result)
    lines = () if result is None else narrative_lines(result.recorders)
    # the failed run's resume point (``flowchart._core.failure.failed_checkpoint``): ``retry`` continues there
    return Segment(
        start_seq,
        "failed",
        commits,
        failed_checkpoint(exc),
        error=f"{type(exc).__name__}: {exc}",
        narrative=lines,
        failure=failure,
        records=records,
        subflows=subflows,
    )


def told(options: RunOptions) -> RunOptions:
    """``options`` with a narrative recorder the store keeps when the caller brought none: a
    stored run always has its story, segment after segment, in any process."""
    if any(callable(getattr(recorder, "records", None)) for recorder in options.recorders):
        return options
    return options.but(recorders=(*options.recorders, narrative()))


def check_chart(record: RunRecord, fingerprint: str) -> None:
    """Refuse to advance a run on a chart other than the one it was started on."""
    if record.chart_fingerprint != fingerprint:
        raise CheckpointError(
            f"run '{record.run_id}' belongs to another chart: its fingerprint is "
            f"{record.chart_fingerprint[:16]}… but this chart's is {fingerprint[:16]}…",
            path="$.chart_fingerprint",
        )


class RefusedOutcome(Exception):
    """Raised by a step whose chart ran but whose caller refuses the outcome (an agent's
    ``MessageDeniedError``): the run's commits are recorded, the run is ``failed`` with
    ``error``, and ``error`` itself is what the caller sees."""

    def __init__(self, error: Exception, result: RunResult) -> None:
        super().__init__(str(error))
        self.error = error
        self.result = result


def begin(store: RunStore, run_id: str, fingerprint: str, known: RunRecord | None = None) -> RunRecord:
    """The run to advance (``known``: its record as its caller just created it, not read again);
    refused when it is another chart's, waiting, or finished."""
    record = known if known is not None and known.run_id == run_id else store.get(run_id)
    check_chart(record, fingerprint)
    if record.next_step in ("wait", "finished"):
        raise StoreError(f"run '{run_id}' is {record.status}: there is nothing to advance")
    return record


def land(
    store: RunStore, record: RunRecord, result: RunResult, output: Callable[[RunResult], Any] | None = None
) -> RunResult:
    """Commit the segment ``result`` ran (``output(result)`` is stored when it finished)."""
    value = None if output is None or result.paused else output(result)
    segment = segment_of(result, record.next_seq, output=value)
    if not segment.records:  # the store keeps the records when there are some, the lines only without
        segment = attrs.evolve(segment, narrative=narrative_lines(result.recorders))
    append_segment(store, record.run_id, segment)
    return result


def fail(store: RunStore, record: RunRecord, exc: Exception) -> BaseException:
    """Record the run failed with ``exc`` (a ``RefusedOutcome`` keeps its commits); return what to raise."""
    if isinstance(exc, RefusedOutcome):
        append_segment(store, record.run_id, failure_of(exc.error, record.next_seq, exc.result))
        return exc.error
    append_segment(store, record.run_id, failure_of(exc, record.next_seq))
    return exc


def advance(store: RunStore, run_id: str, fingerprint: str, step: Callable[[RunRecord], RunResult]) -> RunResult:
    """Run the next segment of ``run_id`` with ``step(record)`` and commit it."""
    record = begin(store, run_id, fingerprint)
    try:
        result = step(record)
    except Exception as exc:
        raise fail(store, record, exc) from None
    return land(store, record, result)


async def aadvance(
    store: RunStore,
    run_id: str,
    fingerprint: str,
    step: Callable[[RunRecord], Awaitable[RunResult]],
    output: Callable[[RunResult], Any] | None = None,
    known: RunRecord | None = None,
) -> RunResult:
    """``advance`` for an async ``step`` (``known``: the run's record as just created)."""
    record = begin(store, run_id, fingerprint, known)
    try:
        result = await step(record)
    except Exception as exc:
        raise fail(store, record, exc) from None
    return land(store, record, result, output)


def run_chart(chart: FlowChart, input: Any, options: RunOptions) -> RunResult:
    """``chart.run(input, store=store)``: record a new run (id ``options.run_id``, else a fresh
    one) in ``options.store`` and advance it to its pause or end."""
    store = options.store
    assert store is not None, "run_chart records into options.store"
    run_id = options.run_id or new_run_id()
    run_input = _run_input(input)
    store.create(
        run_id,
        kind="chart",
        chart_fingerprint=chart.fingerprint,
        input=run_input,
        chart_spec=chart.spec,
        redaction=options.redaction,
    )
    remember_store(run_id, store)
    return advance_chart(chart, store, run_id, options)


def advance_chart(chart: FlowChart, store: RunStore, run_id: str, options: RunOptions | None = None) -> RunResult:
    """Advance a stored chart run (start it, or resume it with its recorded answer)."""
    given = options or RunOptions()

    def step(record: RunRecord) -> RunResult:
        segment = told(given)
        if segment.redaction is None and record.redaction is not None:
            segment = segment.but(redaction=record.redaction)  # the rule the run was started under
        if record.checkpoint is None:
            result = run_sync(chart, record.input, segment)
        else:
            result = resume_sync(chart, record.checkpoint, record.answer, segment)
        return attrs.evolve(result, run_id=run_id)

    return advance(store, run_id, chart.fingerprint, step)


def resume_chart(
    chart: FlowChart, store: RunStore, run_id: str, input: Any, options: RunOptions | None = None
) -> RunResult:
    """``chart.resume_run(run_id, input, store=store)``: answer the pause once, then advance."""
    try:
        answer = copy_json(input)
    except NotJsonSafe as exc:
        raise TypeError(f"resume input is not JSON-safe: {exc.what} at input{exc.where}") from None
    record = store.get(run_id)
    check_chart(record, chart.fingerprint)
    if record.status == "failed":
        if answer is not None:
            raise TypeError(
                f"resume_run('{run_id}', input): the run failed, it is not paused — a failed run is "
                "continued at the stage that failed with resume_run(run_id) and no input"
            )
        store.retry(run_id)
    else:
        store.answer(run_id, record.pause_answer_id(), answer)
    return advance_chart(chart, store, run_id, options)
