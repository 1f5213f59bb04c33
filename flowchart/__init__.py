"""pyfootprint's flowchart engine: charts of stages over a transactional scope.

Every executed stage commits its net change as one entry of the run's commit log, so a
run can be replayed, narrated, backtracked and snapshot-tested. See docs/concepts.md.
"""

from flowchart import launch as _launch
from flowchart._version import package_version
from flowchart.analysis import commit_value_at, find_commit, find_commits, find_last_writer
from flowchart.builder import BranchList, FlowChartBuilder, flow_chart
from flowchart.cancel import CancelToken, RunCancelledError
from flowchart.causal import causal_chain
from flowchart.chart import FlowChart
from flowchart.chart import bind_launcher as _bind_launcher
from flowchart.commits import Commit, Op, replay
from flowchart.context import StageContext
from flowchart.decide import Decision, Selection, decide, select
from flowchart.errors import (
    BuildError,
    CheckpointError,
    FlowchartError,
    ForkError,
    LoopLimitError,
    MapError,
    ReadonlyInputError,
    RunError,
    RunTimeoutError,
    ScopeWriteError,
    TraceError,
)
from flowchart.failure import RunFailure, failed_checkpoint, failed_run
from flowchart.nodes import Pausable
from flowchart.pause import Checkpoint, pause_again
from flowchart.record import Lineage, Record, ShownRecord
from flowchart.recorders.narrative import narrative
from flowchart.redaction import Redaction
from flowchart.result import RunResult
from flowchart.retry import Retry
from flowchart.scope import Scope
from flowchart.trace import Trace

# The structure (flowchart.chart) sits below the engine, the store and the streams, so its
# entry points run through flowchart.launch, which the façade binds into it here, once.
_bind_launcher(_launch)


def __getattr__(name: str) -> str:
    """``flowchart.__version__``, read from the distribution's metadata when first asked for."""
    if name == "__version__":
        return package_version()
    raise AttributeError(f"module 'flowchart' has no attribute {name!r}")


__all__ = [
    "BranchList",
    "BuildError",
    "CancelToken",
    "Checkpoint",
    "CheckpointError",
    "Commit",
    "Decision",
    "FlowChart",
    "FlowChartBuilder",
    "FlowchartError",
    "ForkError",
    "Lineage",
    "LoopLimitError",
    "MapError",
    "Op",
    "Pausable",
    "ReadonlyInputError",
    "Record",
    "Redaction",
    "Retry",
    "RunCancelledError",
    "RunError",
    "RunFailure",
    "RunResult",
    "RunTimeoutError",
    "Scope",
    "ScopeWriteError",
    "Selection",
    "ShownRecord",
    "StageContext",
    "Trace",
    "TraceError",
    "__version__",
    "causal_chain",
    "commit_value_at",
    "decide",
    "failed_checkpoint",
    "failed_run",
    "find_commit",
    "find_commits",
    "find_last_writer",
    "flow_chart",
    "narrative",
    "pause_again",
    "replay",
    "select",
]
