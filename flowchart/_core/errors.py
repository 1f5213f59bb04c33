"""The flowchart exception tree.

    FlowchartError(Exception)            every error this package raises on purpose
    ├── BuildError(FlowchartError, ValueError)       a chart's structure is wrong (raised by build())
    ├── RunError(FlowchartError, RuntimeError)       a run cannot go on (unknown branch, loop cap, ...)
    │   ├── LoopLimitError                           a loop target was visited too often
    │   ├── RunTimeoutError(RunError, TimeoutError)  run(timeout=...) expired inside a stage
    │   ├── RunCancelledError (cancel.py)            a CancelToken ended the run
    │   ├── ForkError                                chart.fork cannot continue a run there (another
    │   │                                            chart's run, a commit that is not a fork point)
    │   └── MapError                                 a map child failed (fail_fast): its index
    ├── ScopeWriteError(FlowchartError, ValueError)  a stage wrote something it may not
    │   └── ReadonlyInputError                       a stage wrote a run-input key
    ├── CheckpointError(FlowchartError, ValueError)  a checkpoint, trace or stored row is malformed,
    │   │                                            foreign, past a limit, or fails its signature
    │   └── TraceError                               a trace file is bad (Trace.load / from_json / from_dict,
    │                                                and the `flowchart` command that reads traces)
    ├── RunIdError(FlowchartError, ValueError)       a run id outside the one run-id rule (run_ids.py),
    │                                                refused before anything is written
    └── StoreError (flowchart.store)                 a run store refused; its subtree (not found, exists,
                                                     commit conflict, already answered, schema version)
                                                     is drawn in flowchart/store/protocol.py

Each error carries the context it was raised in (stage id, key) as attributes.
"""

from __future__ import annotations

from typing import Any


class FlowchartError(Exception):
    """Base class for every error raised on purpose by ``flowchart``."""


class BuildError(FlowchartError, ValueError):
    """A chart's structure is wrong; raised by ``build()`` naming the stage and the fix."""

    def __init__(self, message: str, *, stage_id: str | None = None) -> None:
        super().__init__(message)
        self.stage_id = stage_id


class RunError(FlowchartError, RuntimeError):
    """A run cannot go on; carries the stage id it was raised at.

    ``checkpoint`` (set when the error ends a run; ``None`` before, or when the failure has
    no single resume point) resumes the run at the stage that failed:
    ``chart.resume(err.checkpoint)``. Any other error a run raises carries it too.
    """

    checkpoint: Any = None

    def __init__(self, message: str, *, stage_id: str | None = None) -> None:
        super().__init__(message)
        self.stage_id = stage_id


class LoopLimitError(RunError):
    """A ``loop_to`` target was visited more often than ``max_iterations`` allows."""


class RunTimeoutError(RunError, TimeoutError):
    """``run(timeout=...)`` expired while a stage was running."""


class ForkError(RunError):
    """``chart.fork(...)`` cannot continue a run there: a run of another chart (both
    fingerprints named), a commit that is not a fork point (the message names the nearest
    valid commits), a log the chart did not write. No plain run raises it: a failing fork
    child re-raises its own error. ``errors`` maps what failed to its error.
    """

    def __init__(
        self, message: str, *, stage_id: str | None = None, errors: dict[str, BaseException] | None = None
    ) -> None:
        super().__init__(message, stage_id=stage_id)
        self.errors: dict[str, BaseException] = dict(errors or {})


class MapError(RunError):
    """A child of a ``fail_fast`` map failed: ``index`` is its item's position; the child's
    own error is the ``__cause__``."""

    def __init__(self, message: str, *, stage_id: str | None = None, index: int = 0) -> None:
        super().__init__(message, stage_id=stage_id)
        self.index = index


class ScopeWriteError(FlowchartError, ValueError):
    """A stage wrote a value that may not be stored (not JSON-safe, reserved name, ...)."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class RunIdError(FlowchartError, ValueError):
    """A run id breaks the run-id rule (``flowchart._core.run_ids``); ``run_id`` is the refused id."""

    def __init__(self, message: str, *, run_id: str | None = None) -> None:
        super().__init__(message)
        self.run_id = run_id


class ReadonlyInputError(ScopeWriteError):
    """A stage tried to write a key that belongs to the read-only run input."""


class CheckpointError(FlowchartError, ValueError):
    """A checkpoint, trace file or stored row is malformed, of an unknown version, from another
    chart, past a limit of ``flowchart._core.untrusted``, or fails its signature; ``path`` names where."""

    def __init__(self, message: str, *, path: str | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.path = path
        self.detail = detail


class TraceError(CheckpointError):
    """A trace file is malformed, of an unknown version, or inconsistent; ``path`` names where.

    A ``CheckpointError``, so ``except CheckpointError`` still catches it; raised by
    ``Trace.load`` / ``Trace.from_json`` / ``Trace.from_dict`` and the ``flowchart`` command.
    """
