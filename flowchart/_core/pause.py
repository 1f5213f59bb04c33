"""Pause and resume: the signal that unwinds a paused run, and the checkpoint it leaves.

Laws:
- A pausable stage is two-phase. ``execute`` returning a JSON-safe value pauses (its
  writes are committed first); ``resume(scope, input)`` runs when the run is resumed.
  No stage body ever runs twice.
- The pause unwinds as ``PauseSignal`` (a ``BaseException``, so a stage's
  ``except Exception`` cannot swallow it), collecting one ``ResumeFrame`` per level it
  crosses: the subflow mounts and forks it is inside, down to the paused stage.
- The checkpoint is plain data — no functions, no classes but its own — carried through
  ONE owned cattrs converter (``CONVERTER`` below, made by ``serde.make_converter``) to JSON
  and back. It names the chart it belongs to by fingerprint and carries a schema version.
- Pause data that is not JSON-safe is refused AT THE PAUSE, naming the stage.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Literal

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_unstructure_fn, override

from flowchart._core.errors import CheckpointError
from flowchart._core.serde import check_version, dumps, every_key, json_type, load_error, loads, make_converter
from flowchart._core.signing import refuse_signed, sign, unsign
from flowchart._core.untrusted import check
from flowchart._core.untrusted import step as _step
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
    log still gives the live state. ``finished`` (a failed map only): the children that
    finished before it failed, by item index (``"3"``) → their result; the re-run runs only
    the others (``flowchart._engine.maps``). Absent when empty.
    """

    runtime_stage_id: str
    error_type: str
    message: str
    restore: dict[str, Any] = attrs.Factory(dict)
    discard: list[str] = attrs.Factory(list)
    finished: dict[str, Any] = attrs.Factory(dict)


@attrs.frozen
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
        return unstructure_checkpoint(self)

    def to_json(self, *, key: bytes | None = None) -> str:
        """Compact, deterministic JSON text (keys in field order).

        With ``key`` the text ends with a ``"signature"`` (HMAC-SHA256 of the text, see
        ``flowchart._core.signing``) that ``from_json(text, key=key)`` verifies.
        """

        text = dumps(unstructure_checkpoint(self, copy=False))
        return text if key is None else sign(text, key, SIGNED_PURPOSE)

    @classmethod
    def from_dict(cls, data: Any) -> Checkpoint:
        """Load and validate; raises ``CheckpointError`` naming the bad field path."""
        return structure_checkpoint(data)

    @classmethod
    def from_json(cls, text: str | bytes, *, key: bytes | None = None) -> Checkpoint:
        """Parse JSON text and load it like ``from_dict`` (never executes anything).

        With ``key`` the text must carry a valid signature (``to_json(key=key)``), checked
        before the text is parsed; a missing or wrong one is a ``CheckpointError``. Without
        ``key`` a signed text is refused too: it names the key it needs.
        """

        if key is not None:
            text = unsign(text, key, SIGNED_PURPOSE, what="checkpoint")
        data = loads(text, what="checkpoint")
        if key is None:
            refuse_signed(data, what="checkpoint", how="Checkpoint.from_json(text, key=...)")
        return structure_checkpoint(data, checked=True)


# -- the checkpoint as JSON: one owned converter, fail closed ---------------------------------------
def checkpoint_hooks(converter: cattrs.Converter) -> cattrs.Converter:
    """``converter`` (from ``serde.make_converter``) holding checkpoints: every key required (a
    frame's ``replaces`` and a checkpoint's ``recovery`` only when present), defaults omitted."""
    # ``finished`` came with maps that resume where they failed: absent when empty
    converter.register_structure_hook(Recovery, every_key(Recovery, converter, optional=("finished",)))
    converter.register_unstructure_hook(
        Recovery, make_dict_unstructure_fn(Recovery, converter, finished=override(omit_if_default=True))
    )
    # ``replaces`` came with the fix of failures inside subflows: absent in older checkpoints and when None
    converter.register_structure_hook(ResumeFrame, every_key(ResumeFrame, converter, optional=("replaces",)))
    converter.register_unstructure_hook(
        ResumeFrame, make_dict_unstructure_fn(ResumeFrame, converter, replaces=override(omit_if_default=True))
    )
    # a failed run's checkpoint carries ``recovery``; a pause's has none and serialises as before
    converter.register_structure_hook(Checkpoint, every_key(Checkpoint, converter, optional=("recovery",)))
    converter.register_unstructure_hook(
        Checkpoint, make_dict_unstructure_fn(Checkpoint, converter, recovery=override(omit_if_default=True))
    )
    return converter


CONVERTER = checkpoint_hooks(make_converter())
"""The one owned converter of checkpoints."""


def unstructure_checkpoint(checkpoint: Checkpoint, *, copy: bool = True) -> dict[str, Any]:
    """Checkpoint → JSON-safe dict. State values are deep-copied unless ``copy=False`` — for a
    caller that only serialises the dict at once (``to_json``) and lets it go."""
    data: dict[str, Any] = CONVERTER.unstructure(checkpoint)
    return copy_json(data) if copy else data


def structure_checkpoint(data: Any, *, checked: bool = False) -> Checkpoint:
    """JSON-safe dict → Checkpoint, validated field by field (``checked``: ``data`` came from
    ``loads``, which already held it to the limits)."""
    if not isinstance(data, dict):
        raise CheckpointError(f"Invalid checkpoint: expected an object, got {json_type(data)} @ $", path="$")
    if not checked:
        check(data, what="checkpoint")
    check_version(data, "checkpoint", CHECKPOINT_VERSION, FIRST_VERSION)
    if data.get("version") == FIRST_VERSION:  # before recorder_states: it loads as version 2 without any
        if "recorder_states" in data:
            raise _refuse("unknown key(s) recorder_states (a version-1 checkpoint has none)", "$")
        data = {**data, "version": CHECKPOINT_VERSION, "recorder_states": {}}
    try:
        checkpoint = CONVERTER.structure(data, Checkpoint)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "checkpoint") from None
    check_consistency(checkpoint)
    return checkpoint


def _refuse(message: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid checkpoint: {message} @ {path}", path=path)


def check_consistency(cp: Checkpoint) -> None:
    """The fields that repeat what ``frames`` says must agree with it; counts are not negative."""
    if not cp.frames:
        raise _refuse("frames must not be empty (the last frame is the paused stage)", "$.frames")
    last = len(cp.frames) - 1
    for index, frame in enumerate(cp.frames):
        if index == last and frame.kind != "stage":
            raise _refuse(f"the last frame must be of kind 'stage', got {frame.kind!r}", f"$.frames[{index}].kind")
        if index < last and frame.kind == "stage":
            raise _refuse("only the last frame may be of kind 'stage'", f"$.frames[{index}].kind")
    leaf = cp.frames[-1]
    if leaf.stage_id != cp.paused_stage_id:
        raise _refuse(
            f"the last frame is '{leaf.stage_id}' but paused_stage_id is '{cp.paused_stage_id}'", "$.paused_stage_id"
        )
    if cp.recovery is not None:
        _check_recovery(cp.recovery, leaf.stage_id)
    mounts = [f.stage_id for f in cp.frames if f.kind == "mount"]
    if cp.subflow_path != mounts:
        raise _refuse(f"subflow_path must list the mount frames {mounts}, got {cp.subflow_path}", "$.subflow_path")
    for name in ("invoker_stage_id", "continuation_stage_id"):
        if getattr(cp, name) != getattr(leaf, name):
            raise _refuse(f"{name} must equal the last frame's ({getattr(leaf, name)!r})", f"$.{name}")
    for name in ("subflow_states", "subflow_args"):
        keys = getattr(cp, name)
        missing = [m for m in mounts if m not in keys]
        if missing:
            raise _refuse(f"no {name[:-1]} for mount '{missing[0]}'", f"$.{name}")
        extra = [k for k in keys if k not in mounts]
        if extra:
            raise _refuse(f"'{extra[0]}' is not a subflow the pause is inside ({mounts})", f"$.{name}{_step(extra[0])}")
    if cp.execution_count < 0:
        raise _refuse("execution_count must be >= 0", "$.execution_count")
    for name in ("visit_counts", "loop_counts"):
        for key, count in getattr(cp, name).items():
            if count < 0:
                raise _refuse("a count must be >= 0", f"$.{name}{_step(key)}")


def _check_recovery(recovery: Recovery, leaf: str) -> None:
    """A failed run's recovery names an execution of the leaf stage; restored and discarded keys differ."""
    stage, _, count = recovery.runtime_stage_id.rpartition("#")
    if stage != leaf or not count.isdigit():
        raise _refuse(
            f"recovery.runtime_stage_id must be an execution of '{leaf}' ('{leaf}#N'), "
            f"got {recovery.runtime_stage_id!r}",
            "$.recovery.runtime_stage_id",
        )
    both = [key for key in recovery.discard if key in recovery.restore]
    if both:
        raise _refuse(f"key '{both[0]}' is both restored and discarded", "$.recovery.discard")
    for index in recovery.finished:
        if not (index.isascii() and index.isdigit() and str(int(index)) == index):
            raise _refuse(f"a finished map child's key must be its item index, got {index!r}", "$.recovery.finished")


def check_counters(cp: Checkpoint) -> None:
    """The control fields agree with each other and with the pause: every execution took one
    number from ``execution_count``, so it is at least the number of visits (a lower one would
    hand out runtime ids already used); the paused stage and every level it is inside ran; a
    loop target was looped to no more often than it ran."""
    visits = cp.visit_counts
    total = sum(visits.values())
    if cp.execution_count < total:
        raise _refuse(
            f"execution_count {cp.execution_count} is lower than the {total} stage visits in visit_counts: "
            "the resumed run would repeat runtime ids already used",
            "$.execution_count",
        )
    for index, frame in enumerate(cp.frames):
        if visits.get(frame.stage_id, 0) < 1:
            raise _refuse(
                f"'{frame.stage_id}' is on the resume path (frames[{index}]) but visit_counts says it never ran",
                f"$.visit_counts{_step(frame.stage_id)}",
            )
    for target, loops in cp.loop_counts.items():
        if loops > visits.get(target, 0):
            raise _refuse(
                f"'{target}' was looped to {loops} time(s) but ran {visits.get(target, 0)}",
                f"$.loop_counts{_step(target)}",
            )
