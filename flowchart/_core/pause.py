"""Pause and resume: the signal that unwinds a paused run, and the checkpoint it leaves.

Laws:
- A pausable stage is two-phase. ``execute`` returning a JSON-safe value pauses (its
  writes are committed first); ``resume(scope, input)`` runs when the run is resumed.
  No stage body ever runs twice.
- The pause unwinds as ``PauseSignal`` (a ``BaseException``, so a stage's
  ``except Exception`` cannot swallow it), collecting one ``ResumeFrame`` per level it
  crosses: the subflow mounts and forks it is inside, down to the paused stage.
- The checkpoint is plain data — no functions, no classes but its own — carried through
  ONE owned cattrs converter (``flowchart._core.serde``) to JSON and back. It names the chart it
  belongs to by fingerprint and carries a schema version.
- Pause data that is not JSON-safe is refused AT THE PAUSE, naming the stage.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

import attrs

from flowchart._core.errors import CheckpointError
from flowchart._core.values import NotJsonSafe, copy_json

if TYPE_CHECKING:
    from flowchart._core.nodes import StageNode

CHECKPOINT_VERSION = 2
FIRST_VERSION = 1
"""A version-1 checkpoint has no ``recorder_states``: it loads as if they were ``{}``."""
SIGNED_PURPOSE = "pyfootprint checkpoint v1"
FrameKind = Literal["stage", "mount", "fork"]


def pause_data_copy(data: Any, stage_id: str) -> Any:
    """Validate and copy pause data now, so a bad value fails at the pause, not at save time."""
    try:
        return copy_json(data)
    except NotJsonSafe as exc:
        raise CheckpointError(
            f"Stage '{stage_id}' paused with pause data that is not JSON-safe: {exc.what}"
            f"{' at pause_data' + exc.where if exc.where else ''}. Return JSON-safe data from execute().",
            path="$.pause_data" + exc.where,
        ) from None


@attrs.define
class ResumeFrame:
    """One level of a paused run: which stage/mount/fork it was in and where to go after.

    ``kind`` is "stage" (the paused stage itself), "mount" (a subflow mount the pause is
    inside) or "fork" (a fork or selector whose child paused). ``continuation_stage_id``
    is where control goes when the frame's node has no ``next`` of its own (a decider's
    continuation for a branch); ``continuation_is_loop`` marks it as a ``loop_to`` edge.
    ``replaces`` (a mount frame of a failed run, and of every pause or failure after it
    until the mount ends) is the runtime id of the failed mount's commit: the commit the
    mount makes when it ends replaces that one (``Commit.recovers``), as a re-run stage's
    commit replaces its failed one — so the log still walks as the chart does (forks).
    """

    stage_id: str
    kind: FrameKind
    continuation_stage_id: str | None = None
    continuation_is_loop: bool = False
    invoker_stage_id: str | None = None
    namespace: list[str] = attrs.Factory(list)
    replaces: str | None = None

    @classmethod
    def at(
        cls,
        stage_id: str,
        kind: FrameKind,
        cont: StageNode | None,
        invoker: str | None,
        namespace: tuple[str, ...],
        prefix: str,
    ) -> ResumeFrame:
        """A frame for ``stage_id`` whose continuation is the node ``cont``."""
        if cont is None:
            return cls(stage_id, kind, None, False, invoker, list(namespace))
        if cont.kind == "loop":
            return cls(stage_id, kind, prefix + (cont.loop_to or cont.id), True, invoker, list(namespace))
        return cls(stage_id, kind, prefix + cont.id, False, invoker, list(namespace))

    def as_kind(self, kind: FrameKind) -> ResumeFrame:
        """The same frame, of another kind."""
        return attrs.evolve(self, kind=kind)

    def continuation_node(self, chart: Any, prefix: str) -> StageNode | None:
        """Resolve the continuation against ``chart`` (a loop continuation becomes a loop stub)."""
        if self.continuation_stage_id is None:
            return None
        local = self.continuation_stage_id[len(prefix) :]
        if self.continuation_is_loop:
            return chart.loop_stub(local)
        return chart.find(local)


@attrs.frozen
class PauseAgain:
    """Returned by a ``resume`` half to pause again at the same stage with ``data``.

    An extension over footprintjs (whose resume cannot pause): the agent uses it when a
    later call of the same tool batch needs a person too. The next resume runs the
    ``resume`` half again; ``execute`` still never runs twice.
    """

    data: Any


def pause_again(data: Any) -> PauseAgain:
    """``return pause_again(data)`` from a ``resume`` half to pause once more at the same stage."""
    if data is None:
        raise ValueError("pause_again(data): data must not be None (None means 'go on')")
    return PauseAgain(data)


class PauseSignal(BaseException):
    """Unwinds a paused run. Not an ``Exception``: user code must not swallow it."""

    def __init__(self, pause_data: Any, stage_name: str, frame: ResumeFrame) -> None:
        super().__init__(f"paused at {frame.stage_id}")
        self.pause_data = pause_data
        self.stage_name = stage_name
        self.frames: list[ResumeFrame] = [frame]
        self.subflow_states: dict[str, dict[str, Any]] = {}
        self.subflow_args: dict[str, dict[str, Any]] = {}

    def push(self, frame: ResumeFrame) -> None:
        """Add the frame of an enclosing level (outermost ends up first)."""
        self.frames.insert(0, frame)


@attrs.define(eq=True)
class Recovery:
    """The failed execution a resumed failed run re-runs (``Checkpoint.recovery``).

    ``runtime_stage_id`` is the execution that failed, ``error_type`` and ``message`` its
    error. The failed execution's partial commit stays in the log; the re-run starts from
    the state BEFORE it: ``restore`` holds the values the failed commit overwrote (keys of
    the stage's own level, inside its fork namespace if any) and ``discard`` the keys it
    created. The re-run's one commit carries those undo writes with its own, so folding the
    log still gives the live state.
    """

    runtime_stage_id: str
    error_type: str
    message: str
    restore: dict[str, Any] = attrs.Factory(dict)
    discard: list[str] = attrs.Factory(list)


@attrs.define(eq=True)
class Checkpoint:
    """Everything needed to resume a paused run in a fresh process. JSON via ``to_json``.

    Fields (stable keys, documented in docs/pause-resume.md): ``version``,
    ``chart_fingerprint``, ``run_id``, ``shared_state`` (top-level state at the pause),
    ``run_input``, ``paused_stage_id`` (full id, ``sf/ask`` inside a subflow),
    ``subflow_path`` (mount ids from the top), ``pause_data``, ``subflow_states`` and
    ``subflow_args`` (per mount id), ``execution_count``, ``visit_counts``,
    ``loop_counts``, ``invoker_stage_id`` and ``continuation_stage_id`` (of the paused
    stage), ``frames`` (the resume path), ``paused_at`` (seconds since the epoch),
    ``recorder_states`` (per recorder id, what a recorder with ``save_state`` / ``load_state``
    carries across the pause: the narrative's stage count; version 2).

    A checkpoint of a FAILED run (``RunError.checkpoint``, a stored ``failed`` run) also has
    ``recovery``: the leaf frame is the stage that failed, and resuming re-runs it from the
    state before its partial commit (``Recovery``). Absent (and not serialised) otherwise.
    """

    shared_state: dict[str, Any]
    paused_stage_id: str
    subflow_path: list[str]
    pause_data: Any
    subflow_states: dict[str, dict[str, Any]]
    execution_count: int
    visit_counts: dict[str, int]
    invoker_stage_id: str | None
    continuation_stage_id: str | None
    paused_at: float
    chart_fingerprint: str
    version: int = CHECKPOINT_VERSION
    run_id: str = ""
    run_input: dict[str, Any] = attrs.Factory(dict)
    subflow_args: dict[str, dict[str, Any]] = attrs.Factory(dict)
    loop_counts: dict[str, int] = attrs.Factory(dict)
    frames: list[ResumeFrame] = attrs.Factory(list)
    recorder_states: dict[str, Any] = attrs.Factory(dict)
    recovery: Recovery | None = None

    @property
    def failed(self) -> bool:
        """True for the checkpoint of a failed run (resuming re-runs the stage that failed)."""
        return self.recovery is not None

    @classmethod
    def from_signal(
        cls,
        signal: PauseSignal,
        *,
        state: dict[str, Any],
        run_input: dict[str, Any],
        run_id: str,
        execution_count: int,
        visit_counts: dict[str, int],
        loop_counts: dict[str, int],
        fingerprint: str,
        recorder_states: dict[str, Any] | None = None,
    ) -> Checkpoint:
        """Build the checkpoint of a run that unwound with ``signal``."""
        leaf = signal.frames[-1]
        return cls(
            shared_state=dict(state),
            paused_stage_id=leaf.stage_id,
            subflow_path=[f.stage_id for f in signal.frames if f.kind == "mount"],
            pause_data=signal.pause_data,
            subflow_states={k: dict(v) for k, v in signal.subflow_states.items()},
            execution_count=execution_count,
            visit_counts=dict(visit_counts),
            invoker_stage_id=leaf.invoker_stage_id,
            continuation_stage_id=leaf.continuation_stage_id,
            paused_at=time.time(),
            chart_fingerprint=fingerprint,
            run_id=run_id,
            run_input=run_input,
            subflow_args=dict(signal.subflow_args),
            loop_counts=dict(loop_counts),
            frames=list(signal.frames),
            recorder_states=dict(recorder_states or {}),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict with stable keys (through the owned converter)."""
        from flowchart._core.serde import unstructure_checkpoint

        return unstructure_checkpoint(self)

    def to_json(self, *, key: bytes | None = None) -> str:
        """Compact, deterministic JSON text (keys in field order).

        With ``key`` the text ends with a ``"signature"`` (HMAC-SHA256 of the text, see
        ``flowchart._core.signing``) that ``from_json(text, key=key)`` verifies.
        """
        from flowchart._core.serde import dumps, unstructure_checkpoint
        from flowchart._core.signing import sign

        text = dumps(unstructure_checkpoint(self, copy=False))
        return text if key is None else sign(text, key, SIGNED_PURPOSE)

    @classmethod
    def from_dict(cls, data: Any) -> Checkpoint:
        """Load and validate; raises ``CheckpointError`` naming the bad field path."""
        from flowchart._core.serde import structure_checkpoint

        return structure_checkpoint(data)

    @classmethod
    def from_json(cls, text: str | bytes, *, key: bytes | None = None) -> Checkpoint:
        """Parse JSON text and load it like ``from_dict`` (never executes anything).

        With ``key`` the text must carry a valid signature (``to_json(key=key)``), checked
        before the text is parsed; a missing or wrong one is a ``CheckpointError``. Without
        ``key`` a signed text is refused too: it names the key it needs.
        """
        from flowchart._core.serde import loads, structure_checkpoint
        from flowchart._core.signing import refuse_signed, unsign

        if key is not None:
            text = unsign(text, key, SIGNED_PURPOSE, what="checkpoint")
        data = loads(text, what="checkpoint")
        if key is None:
            refuse_signed(data, what="checkpoint", how="Checkpoint.from_json(text, key=...)")
        return structure_checkpoint(data, checked=True)
