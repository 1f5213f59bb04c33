"""pyfootprint's flowchart engine: charts of stages over a transactional scope.

Every executed stage commits its net change as one entry of the run's commit log, so a
run can be replayed, narrated, backtracked and snapshot-tested. See docs/concepts.md.
"""

from flowchart._chart.branches import BranchList
from flowchart._chart.chart import FlowChart
from flowchart._core.cancel import CancelToken, RunCancelledError
from flowchart._core.commits import Commit, Op, replay
from flowchart._core.context import StageContext
from flowchart._core.decide import Decision, Selection, decide, select
from flowchart._core.errors import (
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
from flowchart._core.failure import RunFailure, failed_checkpoint, failed_run
from flowchart._core.nodes import Pausable
from flowchart._core.pause import Checkpoint, pause_again
from flowchart._core.redaction import Redaction
from flowchart._core.retry import Retry
from flowchart._core.scope import Scope
from flowchart._launch import FlowChartBuilder, flow_chart
from flowchart._record.analysis import commit_value_at, find_commit, find_commits, find_last_writer
from flowchart._record.causal import causal_chain, format_causal_chain
from flowchart._record.diff import DiffError, RunDiff, diff_runs
from flowchart._record.record import Lineage, Record, Reuse, ShownRecord
from flowchart._record.result import RunResult
from flowchart._record.subtree import SubtreeSnapshot, get_subtree_snapshot, list_subflow_paths
from flowchart._record.trace import Trace
from flowchart._version import package_version as _package_version
from flowchart.recorders.narrative import narrative


def __getattr__(name: str) -> str:
    """``flowchart.__version__``, read from the distribution's metadata when first asked for."""
    if name == "__version__":
        return _package_version()
    raise AttributeError(f"module 'flowchart' has no attribute {name!r}")


__all__ = [
    "BranchList",
    "BuildError",
    "CancelToken",
    "Checkpoint",
    "CheckpointError",
    "Commit",
    "Decision",
    "DiffError",
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
    "Reuse",
    "RunCancelledError",
    "RunDiff",
    "RunError",
    "RunFailure",
    "RunResult",
    "RunTimeoutError",
    "Scope",
    "ScopeWriteError",
    "Selection",
    "ShownRecord",
    "StageContext",
    "SubtreeSnapshot",
    "Trace",
    "TraceError",
    "__version__",
    "causal_chain",
    "commit_value_at",
    "decide",
    "diff_runs",
    "failed_checkpoint",
    "failed_run",
    "find_commit",
    "find_commits",
    "find_last_writer",
    "flow_chart",
    "format_causal_chain",
    "get_subtree_snapshot",
    "list_subflow_paths",
    "narrative",
    "pause_again",
    "replay",
    "select",
]
