"""``record_trace``: a stored run as a ``Trace`` file (for ``flowchart why`` and friends).

Law: the trace holds what the store recorded — the whole commit log across segments
(already redacted by the engine), the input, the narrative, the chart spec — and a
paused run's checkpoint, redacted exactly as ``Trace.from_result`` redacts a live
run's: the trace is built BY ``Trace.from_result`` from the stored pieces, under the
rule stored with the run (``RunRecord.redaction``; without one, every key the log
reports hiding becomes ``"REDACTED"``), which hides values in the stored input too. A
failed run's trace carries its ``failure``, and every segment's subflow logs (their initial
states hidden under the same rule; a run stored before they were kept has none). The
narrative is the stored records (stage ids and all). The result is validated by loading it back.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import attrs

from ..commits import replay
from ..narrative_entry import NarrativeEntry
from ..redaction import Redaction
from ..result import RunResult
from ..trace import Trace
from .protocol import RunRecord, StoreError


class _Records:
    """A stand-in recorder carrying the stored narrative records."""

    def __init__(self, records: tuple[NarrativeEntry, ...]) -> None:
        self._records = list(records)

    def records(self) -> list[NarrativeEntry]:
        return list(self._records)


def record_trace(record: RunRecord, redaction: Redaction | None = None) -> Trace:
    """The trace of stored run ``record`` (``StoreError`` when its chart spec was not stored).

    The store keeps the real input (a queued run must be able to start), so the trace hides
    it under the rule stored with the run; ``redaction`` overrides that rule (for runs
    stored before rules were kept).
    """
    redaction = redaction if redaction is not None else record.redaction
    if record.chart_spec is None:
        raise StoreError(f"run '{record.run_id}' has no stored chart spec: it cannot be written as a trace")
    chart: Any = SimpleNamespace(spec=record.chart_spec, fingerprint=record.chart_fingerprint)
    log = list(record.commit_log)
    # a failed run's checkpoint (its retry point) is not a pause: the trace tells the failure once
    checkpoint = record.checkpoint if record.status == "paused" else None
    result = RunResult(
        state=replay(log), output=record.output, commit_log=log, paused=checkpoint is not None,
        checkpoint=checkpoint, run_id=record.run_id, subflow_results={},
        redacted_paths=sorted({path for commit in log for path in commit.redacted_paths}),
        initial_state={}, args=dict(record.input), chart=cast(Any, chart),
        recorders=[_Records(record.narrative_records)] if record.narrative_records else [], redaction=redaction,
        failure=record.failure if record.status == "failed" else None,
    )  # fmt: skip
    trace = Trace.from_result(result)
    hides = redaction if redaction is not None else Redaction(keys={p.split("/", 1)[0] for p in result.redacted_paths})
    trace.subflows = {
        rid: attrs.evolve(sub, initial_state=hides.scrub_state(sub.initial_state))
        for rid, sub in record.subflows.items()
    }
    return Trace.from_dict(trace.to_dict())
