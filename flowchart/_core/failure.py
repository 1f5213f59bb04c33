"""A failed run leaves a record: what was committed before the failure, and why it failed.

Laws:
- A run that raises re-raises the stage's own error unchanged (the engine law), and that
  error carries the run as far as it got: ``failed_run(error)`` gives the partial
  ``RunResult`` (every commit made before the failure — the failing stage's own partial
  commit included —, the recorders with the narrative so far) and its ``RunFailure``.
  Nothing is added to the error's message, type or arguments.
- ``RunFailure`` names the error's class, its message and the stage that raised
  (``stage_id`` and the runtime id ``[subflow/]stage#N`` of the innermost stage; ``None``
  when the run failed between stages, e.g. a timeout before a stage started). With the
  commits, that is what resuming a failed run at the stage that failed needs.
- A failure is read back from untrusted storage through ``RunFailure.from_dict``: the one
  codec (``serde.structure``: the limits of ``untrusted``, then a converter from
  ``serde.make_converter``), so it refuses anything that is not exactly its shape with a
  ``CheckpointError`` naming the path, as a checkpoint or a trace would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.errors import RunError
from flowchart._core.pause import Checkpoint
from flowchart._core.serde import every_key, make_converter, structure

if TYPE_CHECKING:
    from flowchart._record.result import RunResult

_ATTRIBUTE = "_flowchart_failed_run"
_CHECKPOINT = "_flowchart_failed_checkpoint"
_MESSAGE_LIMIT = 2000


@attrs.frozen
class RunFailure:
    """Why a run failed: ``error_type`` (the class name), ``message`` and the stage that raised."""

    error_type: str
    message: str
    stage_id: str | None = None
    runtime_stage_id: str | None = None

    @classmethod
    def of(cls, error: BaseException, stage_id: str | None = None, runtime_stage_id: str | None = None) -> RunFailure:
        """The failure ``error`` is (its message cut to 2,000 characters)."""
        message = str(error)
        if len(message) > _MESSAGE_LIMIT:
            message = message[:_MESSAGE_LIMIT] + "…"
        return cls(type(error).__name__, message, stage_id, runtime_stage_id)

    def format(self) -> str:
        """``ValueError: boom (stage call-llm#1)`` — one line for a CLI or a log."""
        text = f"{self.error_type}: {self.message}" if self.message else self.error_type
        return text + (f" (stage {self.runtime_stage_id})" if self.runtime_stage_id else "")

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (every field, ``None`` included)."""
        return attrs.asdict(self)

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> RunFailure:
        """Inverse of ``to_dict`` (every key required, ``None`` included), through the one codec:
        ``CheckpointError`` (a ``ValueError``) naming the path of each bad field."""
        return structure(_CONVERTER, data, RunFailure, what="run failure", path=path)


_CONVERTER = make_converter()
_CONVERTER.register_structure_hook(RunFailure, every_key(RunFailure, _CONVERTER))


def attach(error: BaseException, result: RunResult, failure: RunFailure, checkpoint: Checkpoint | None = None) -> None:
    """Let ``error`` carry the run it ended (outermost run wins when runs nest), and the
    checkpoint that resumes it at the stage that failed as ``error.checkpoint`` (``None``
    when there is no single resume point; an error class with its own ``checkpoint``
    attribute keeps it, and ``failed_checkpoint(error)`` still finds this one)."""
    # straight into the instance dict: an exception class may forbid setattr (attrs frozen)
    error.__dict__[_ATTRIBUTE] = (result, failure)
    error.__dict__[_CHECKPOINT] = checkpoint
    if isinstance(error, RunError) or "checkpoint" in error.__dict__ or not hasattr(error, "checkpoint"):
        error.__dict__["checkpoint"] = checkpoint


def failed_checkpoint(error: BaseException) -> Checkpoint | None:
    """The checkpoint that resumes the run ``error`` ended at the stage that failed, or ``None``."""
    found = error.__dict__.get(_CHECKPOINT)
    return found if isinstance(found, Checkpoint) else None


def failed_run(error: BaseException) -> tuple[RunResult, RunFailure] | None:
    """The partial result and the failure of the run ``error`` ended, or ``None``."""
    found = error.__dict__.get(_ATTRIBUTE)
    return found if isinstance(found, tuple) else None


__all__ = ["RunFailure", "attach", "failed_checkpoint", "failed_run"]
