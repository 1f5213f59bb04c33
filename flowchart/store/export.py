"""``record_trace``: a stored run as a ``Trace`` file (for ``flowchart why`` and friends).

Law: the trace is the stored run's record, shown (``RunRecord.record.shown()``: the one place
a run's redaction is applied, ``flowchart._record.record``) — the whole commit log across segments,
the input and every segment's subflow starting states under the rule stored with the run,
the narrative records, the chart spec, a paused run's checkpoint, a failed run's failure.
The result is validated by loading it back.
"""

from __future__ import annotations

from flowchart._core.redaction import Redaction
from flowchart._record.trace import Trace
from flowchart.store.protocol import RunRecord, StoreError


def record_trace(record: RunRecord, redaction: Redaction | None = None) -> Trace:
    """The trace of stored run ``record`` (``StoreError`` when its chart spec was not stored);
    ``redaction`` overrides the stored rule (for runs stored before rules were kept)."""
    if record.chart_spec is None:
        raise StoreError(f"run '{record.run_id}' has no stored chart spec: it cannot be written as a trace")
    trace = Trace.of(record.record.shown(redaction))
    return Trace.from_dict(trace.to_dict())
