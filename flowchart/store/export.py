"""``record_trace``: a stored run as a ``Trace`` file (for ``flowchart why`` and friends).

Law: the trace is the stored run's record, shown (``RunRecord.record.shown()``: the one place
a run's redaction is applied, ``flowchart.record``) — the whole commit log across segments,
the input and every segment's subflow starting states under the rule stored with the run,
the narrative records, the chart spec, a paused run's checkpoint, a failed run's failure.
The result is validated by loading it back.
"""

from __future__ import annotations

from ..redaction import Redaction
from ..trace import Trace
from .protocol import RunRecord


def record_trace(record: RunRecord, redaction: Redaction | None = None) -> Trace:
    """The trace of stored run ``record`` (``StoreError`` when its chart spec was not stored);
    ``redaction`` overrides the stored rule (for runs stored before rules were kept)."""
    trace = record.record.shown(redaction).trace()
    return Trace.from_dict(trace.to_dict())
