"""``record_trace``: a stored run as a ``Trace`` file (for ``flowchart why`` and friends).

Law: the trace holds what the store recorded — the whole commit log across segments
(already redacted by the engine), the input, the narrative, the chart spec — and a
paused run's checkpoint with every key the log reports hiding (or ``hides`` says to
hide) replaced by ``"REDACTED"``, exactly as ``Trace.from_result`` does. Subflow logs
are not stored, so the trace has none. The result is validated by loading it back.
"""

from __future__ import annotations

from collections.abc import Callable

from ..pause import Checkpoint
from ..trace import Trace, _redact
from .protocol import RunRecord, StoreError


def record_trace(record: RunRecord, hides: Callable[[str], bool] | None = None) -> Trace:
    """The trace of stored run ``record`` (``StoreError`` when its chart spec was not stored)."""
    from .. import __version__

    if record.chart_spec is None:
        raise StoreError(f"run '{record.run_id}' has no stored chart spec: it cannot be written as a trace")
    redacted = sorted({path for commit in record.commit_log for path in commit.redacted_paths})
    if hides is None:
        hides = {path.rsplit("/", 1)[-1] for path in redacted}.__contains__
    checkpoint = record.checkpoint
    if checkpoint is not None:
        checkpoint = Checkpoint.from_dict(checkpoint.to_dict())
        checkpoint.shared_state = _redact(checkpoint.shared_state, hides)
        checkpoint.run_input = _redact(checkpoint.run_input, hides)
        checkpoint.subflow_states = {k: _redact(v, hides) for k, v in checkpoint.subflow_states.items()}
        checkpoint.subflow_args = {k: _redact(v, hides) for k, v in checkpoint.subflow_args.items()}
    trace = Trace(
        library_version=__version__,
        run_id=record.run_id,
        chart_fingerprint=record.chart_fingerprint,
        chart_spec=record.chart_spec,
        run_input=_redact(record.input, hides),
        initial_state={},
        commit_log=list(record.commit_log),
        redacted_paths=redacted,
        narrative=list(record.narrative) if record.narrative else None,
        checkpoint=checkpoint,
    )
    return Trace.from_dict(trace.to_dict())
