"""The flowchart exception tree.

    FlowchartError(Exception)            every error this package raises on purpose
    ├── BuildError(FlowchartError, ValueError)       a chart's structure is wrong (raised by build())
    ├── RunError(FlowchartError, RuntimeError)       a run cannot go on (unknown branch, loop cap, ...)
    │   ├── LoopLimitError                           a loop target was visited too often
    │   ├── RunTimeoutError(RunError, TimeoutError)  run(timeout=...) expired inside a stage
    │   ├── RunCancelledError (cancel.py)            a CancelToken ended the run
    │   └── ForkError                                reserved: raised by chart.fork (the forks issue)
    │                                                when a fork cannot be made; never raised by a plain run
    ├── ScopeWriteError(FlowchartError, ValueError)  a stage wrote something it may not
    │   └── ReadonlyInputError                       a stage wrote a run-input key
    ├── CheckpointError(FlowchartError, ValueError)  a checkpoint, trace or stored row is malformed,
    │   │                                            foreign, past a limit, or fails its signature
    │   └── TraceError                               a trace file is bad (Trace.load / from_json / from_dict,
    │                                                and the `flowchart` command that reads traces)
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
    """Reserved for ``chart.fork(...)``: a fork of a run cannot be made (the forks issue raises it).

    No plain run raises it today: a failing fork child re-raises its own error. ``errors``
    maps what failed to its error, for the forks engineer's use.
    """

    def __init__(
        self, message: str, *, stage_id: str | None = None, errors: dict[str, BaseException] | None = None
    ) -> None:
        super().__init__(message, stage_id=stage_id)
        self.errors: dict[str, BaseException] = dict(errors or {})


class ScopeWriteError(FlowchartError, ValueError):
    """A stage wrote a value that may not be stored (not JSON-safe, reserved name, ...)."""

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class ReadonlyInputError(ScopeWriteError):
    """A stage tried to write a key that belongs to the read-only run input."""


class CheckpointError(FlowchartError, ValueError):
    """A checkpoint, trace file or stored row is malformed, of an unknown version, from another
    chart, past a limit of ``flowchart.untrusted``, or fails its signature; ``path`` names where."""

    def __init__(self, message: str, *, path: str | None = None, detail: Any = None) -> None:
        super().__init__(message)
        self.path = path
        self.detail = detail


class TraceError(CheckpointError):
    """A trace file is malformed, of an unknown version, or inconsistent; ``path`` names where.

    A ``CheckpointError``, so ``except CheckpointError`` still catches it; raised by
    ``Trace.load`` / ``Trace.from_json`` / ``Trace.from_dict`` and the ``flowchart`` command.
    """
