"""``record_trace``: a stored run as a ``Trace`` file (for ``flowchart why`` and friends).

Law: the trace holds what the store recorded — the whole commit log across segments
(already redacted by the engine), the input, the narrative, the chart spec — and a
paused run's checkpoint, redacted exactly as ``Trace.from_result`` redacts a live
run's: the trace is built BY ``Trace.from_result`` from the stored pieces, under the
rule stored with the run (``RunRecord.redaction``; without one, every key the log
reports hiding becomes ``"REDACTED"``), which hides values in the stored input too. A
failed run's trace carries its ``failure``. Subflow logs are not stored, so the trace
has none. The result is validated by loading it back.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from ..commits import replay
from ..redaction import Redaction
from ..result import RunResult
from ..trace import Trace
from .protocol import RunRecord, StoreError


class _Lines:
    """A stand-in recorder carrying the stored narrative."""

    def __init__(self, lines: tuple[str, ...]) -> None:
        self._lines = list(lines)

    def lines(self) -> list[str]:
        return list(self._lines)


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
    result = RunResult(
        state=replay(log), output=record.output, commit_log=log, paused=record.checkpoint is not None,
        checkpoint=record.checkpoint, run_id=record.run_id, subflow_results={},
        redacted_paths=sorted({path for commit in log for path in commit.redacted_paths}),
        initial_state={}, args=dict(record.input), chart=cast(Any, chart),
        recorders=[_Lines(record.narrative)] if record.narrative else [], redaction=redaction,
        failure=record.failure if record.status == "failed" else None,
    )  # fmt: skip
    return Trace.from_dict(Trace.from_result(result).to_dict())
