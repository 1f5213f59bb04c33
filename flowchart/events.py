"""Recorder events: what the engine tells observers while a run goes on.

A recorder is any object that has some of the hook methods below; hooks it lacks are
skipped (looked up once per run, on the object itself). Every hook takes ONE event
value. Two channels, as in footprintjs:

Data (scope) hooks, fired live while a stage runs:
    on_stage_start(StageEvent) · on_read(ReadEvent) · on_write(WriteEvent)
    on_emit(EmitEvent) · on_stage_end(StageEvent) · on_commit(CommitEvent)

The batch hook, fired once per stage at commit time, right before ``on_commit``:
    on_stage_ops(StageOpsEvent): the stage's reads, writes and emits in arrival order.
A recorder that has ``on_stage_ops`` gets its scope operations in that one batch
instead of one event each: its ``on_read`` / ``on_write`` / ``on_emit`` are not bound
unless it asks for them live with the attribute ``live_operations = True``. The batch
costs a list append per operation while the stage runs; the per-operation events cost
an event object, a dispatch and a hook call each.

Field hooks, for recorders on the hot path (the narrative, a stream's tap): the same points
as the five commonest hooks, with the event's fields as arguments and no event object
built for them:
    take_stage_start(ctx) · take_emit(ctx, name, payload) · take_commit(ctx, commit)
    take_stage_ops(ctx, ops) · take_stage_executed(ctx, stage_name, description, stage_type)
A field hook is called just before the event hooks of its point, under the same rules
(``take_emit`` follows ``on_emit``'s: a batch recorder — one with ``on_stage_ops`` or
``take_stage_ops`` — takes it only with ``live_operations``; a failing one is reported to
the others' ``on_error``). A recorder that has a field form is not called on the event form
of the same point. Why: a narrated stage, or an agent iteration streamed, made two to
fifteen event objects that only a recorder's own code ever read; building and dispatching
them was a fifth of the narrative's cost per stage and of the stream's.

Flow hooks, fired after a stage commits:
    on_run_start(RunEvent) · on_run_end(RunEvent) · on_run_failed(RunEvent)
    on_stage_executed(StageExecutedEvent) · on_next(NextEvent)
    on_decision(DecisionEvent) · on_fork(ForkEvent) · on_map(MapEvent) · on_selected(SelectedEvent)
    on_subflow_entry(SubflowEvent) · on_subflow_exit(SubflowEvent)
    on_loop(LoopEvent) · on_break(BreakEvent) · on_error(ErrorEvent)
    on_pause(PauseEvent) · on_resume(ResumeEvent) · on_retry(RetryEvent)

Event order for one plain stage: on_stage_start → on_read/on_write/on_emit (live) →
on_stage_end → on_commit → on_stage_executed → on_next. A decider fires on_decision
before its on_stage_executed; a stage that raises fires on_commit, then on_error, and
no on_stage_end / on_stage_executed. A pause fires on_commit then on_pause, and
neither on_run_end nor on_run_failed. A stage retried under a ``Retry`` policy fires
on_retry after each failed attempt (whose data events were live, and whose writes are
discarded), then runs again under the same runtime id; only the last attempt commits.

A recorder that raises never breaks the run: the exception is swallowed and reported
to the other recorders' ``on_error`` hook as an ErrorEvent with channel "recorder".
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

StageType = Literal["linear", "decider", "selector", "fork", "subflow-mount", "pausable", "answer"]
"""``answer``: a pausable's ``answer`` half, which recorded the resume input before ``resume`` ran."""

#: hook names per channel; used to bind a recorder's hooks once per run
DATA_HOOKS = (
    "on_stage_start",
    "on_read",
    "on_write",
    "on_emit",
    "on_stage_end",
    "on_commit",
    "on_stage_ops",
)
#: the per-operation hooks that ``on_stage_ops`` replaces unless ``live_operations`` is set
OPERATION_HOOKS = ("on_read", "on_write", "on_emit")
FLOW_HOOKS = (
    "on_run_start",
    "on_run_end",
    "on_run_failed",
    "on_stage_executed",
    "on_next",
    "on_decision",
    "on_fork",
    "on_map",
    "on_selected",
    "on_subflow_entry",
    "on_subflow_exit",
    "on_loop",
    "on_break",
    "on_error",
    "on_pause",
    "on_resume",
    "on_retry",
)
ALL_HOOKS = DATA_HOOKS + FLOW_HOOKS
#: the field form of each hook that has one (see the module docstring)
FIELD_FORMS = {
    "on_stage_start": "take_stage_start",
    "on_emit": "take_emit",
    "on_commit": "take_commit",
    "on_stage_ops": "take_stage_ops",
    "on_stage_executed": "take_stage_executed",
}
FIELD_HOOKS = tuple(FIELD_FORMS.values())
#: how many fields each field hook takes after ``ctx``
FIELD_ARITY = {"take_stage_start": 0, "take_emit": 2, "take_commit": 1, "take_stage_ops": 1, "take_stage_executed": 3}


@attrs.frozen
class TraversalContext:
    """Where in the run an event happened; stamped on every event.

    ``stage_id`` is the full (subflow-prefixed) id, ``subflow_path`` the mounts from the
    top chart down (empty at top level), ``loop_iteration`` the visit number minus one
    (``None`` on the first visit), ``fork_branch`` the child id inside a fork/selector.
    """

    run_id: str
    stage_id: str
    runtime_stage_id: str
    stage_name: str
    subflow_path: tuple[str, ...] = ()
    depth: int = 0
    loop_iteration: int | None = None
    fork_branch: str | None = None

    @property
    def subflow_id(self) -> str | None:
        """The innermost subflow mount id, or ``None`` at top level."""
        return self.subflow_path[-1] if self.subflow_path else None


ROOT_CONTEXT_ID = "__root__"


@attrs.frozen
class StageEvent:
    """A stage body starts or ends (data channel)."""

    ctx: TraversalContext


@attrs.frozen
class ReadEvent:
    """A stage read a state key (``value`` is redacted when the key is).

    ``missing`` is True for a read of a key that is not in the state (footprintjs's
    ``undefined``); ``value`` is then ``None``.
    """

    ctx: TraversalContext
    key: str
    value: Any
    redacted: bool = False
    missing: bool = False


@attrs.frozen
class WriteEvent:
    """A stage wrote a state key. Fired for every write attempt, before net-change filtering."""

    ctx: TraversalContext
    key: str
    value: Any
    operation: Literal["set", "update", "delete"]
    redacted: bool = False


@attrs.frozen
class EmitEvent:
    """``ctx.emit(name, payload)`` was called inside a stage."""

    ctx: TraversalContext
    name: str
    payload: Any


@attrs.frozen
class CommitEvent:
    """A stage's net change was committed; ``commit`` is the (redacted) log entry."""

    ctx: TraversalContext
    commit: Any  # flowchart._core.commits.Commit (Any here to keep this module import-free)


#: one scope operation of a batch: ``(kind, key, value, operation, redacted)``. ``kind``
#: is ``read`` | ``missing`` | ``write`` | ``emit``; ``operation`` is ``set`` | ``update`` |
#: ``delete`` for a write (``""`` otherwise); an emit's ``key`` is its name and ``value``
#: its payload; a ``missing`` read (footprintjs's ``undefined``) carries ``None``
StageOp = tuple[str, str, Any, str, bool]


@attrs.define(slots=True)
class StageOpsEvent:
    """A stage's scope operations, delivered once at commit time (the batch hook).

    ``ops`` lists every read, write and emit of the stage in arrival order, as
    :data:`StageOp` tuples, with the run's redaction applied (as on ``ReadEvent`` /
    ``WriteEvent``). Each value is as it was at the moment of the operation: a dict or
    list the stage went on to change is a snapshot, never the live view. Read-only by
    contract (not frozen, so that building it costs one plain assignment per field).
    """

    ctx: TraversalContext
    ops: list[StageOp]


@attrs.frozen
class RunEvent:
    """Run start (payload = input), end (payload = output) or failure (payload = error info)."""

    ctx: TraversalContext
    payload: Any = None
    error: BaseException | None = None


@attrs.frozen
class StageExecutedEvent:
    """A stage finished and committed; ``stage_type`` says what kind of stage it was."""

    ctx: TraversalContext
    stage_name: str
    description: str | None
    stage_type: StageType


@attrs.frozen
class NextEvent:
    """Control moves along a ``next`` edge."""

    ctx: TraversalContext
    from_stage: str
    to_stage: str
    description: str | None = None


@attrs.frozen
class DecisionEvent:
    """A decider chose a branch. ``chosen`` is the branch stage's NAME, ``chosen_id`` its branch id."""

    ctx: TraversalContext
    decider: str
    chosen: str
    chosen_id: str
    rationale: str | None = None
    description: str | None = None
    evidence: dict[str, Any] | None = None


@attrs.frozen
class ForkEvent:
    """A fork (or a selector's chosen set) is about to run its children (names)."""

    ctx: TraversalContext
    parent: str
    children: tuple[str, ...]


@attrs.frozen
class MapEvent:
    """A map stage ran its children: ``count`` items, ``failed`` the indexes whose child raised."""

    ctx: TraversalContext
    stage_name: str
    count: int
    failed: tuple[int, ...] = ()


@attrs.frozen
class SelectedEvent:
    """A selector chose ``selected`` (branch names) out of ``total`` branches."""

    ctx: TraversalContext
    parent: str
    selected: tuple[str, ...]
    selected_ids: tuple[str, ...]
    total: int
    evidence: dict[str, Any] | None = None


@attrs.frozen
class SubflowEvent:
    """Entry into (``state`` = mapped input) or exit from (``state`` = final subflow state) a subflow.
    ``quiet_emits``: the mount's emits are its owner's (``add_agent``); a narrative leaves them out."""

    ctx: TraversalContext
    name: str
    subflow_id: str
    description: str | None = None
    state: Any = None
    quiet_emits: bool = False


@attrs.frozen
class LoopEvent:
    """A ``loop_to`` edge was taken; ``iteration`` counts loop-backs to ``target`` from 1."""

    ctx: TraversalContext
    target: str
    target_id: str
    iteration: int
    description: str | None = None


@attrs.frozen
class BreakEvent:
    """``ctx.stop(reason)`` ended the run (or a subflow) at ``stage_name``."""

    ctx: TraversalContext
    stage_name: str
    reason: str | None = None
    propagated_from_subflow: str | None = None


@attrs.frozen
class ErrorEvent:
    """A stage raised (channel "flow") or a recorder raised (channel "recorder")."""

    ctx: TraversalContext
    stage_name: str
    message: str
    error: BaseException | None = None
    channel: Literal["flow", "recorder"] = "flow"


@attrs.frozen
class RetryEvent:
    """Attempt ``attempt - 1`` of a stage failed with ``error_type: message``; attempt
    ``attempt`` of ``attempts`` follows after ``delay`` seconds (its writes were discarded)."""

    ctx: TraversalContext
    stage_name: str
    attempt: int
    attempts: int
    error_type: str
    message: str
    delay: float = 0.0


@attrs.frozen
class PauseEvent:
    """A pausable stage paused the run with ``pause_data``."""

    ctx: TraversalContext
    stage_name: str
    stage_id: str
    pause_data: Any
    subflow_path: tuple[str, ...] = ()


@attrs.frozen
class ResumeEvent:
    """A paused run was resumed at ``stage_name``; ``has_input`` says whether input came;
    ``paused_run_id`` is the run id the checkpoint was taken in (the resumed run gets a new one);
    ``recovery`` is set when a FAILED run was resumed: the ``pause.Recovery`` of the execution
    that failed, which runs again from the state before its partial commit."""

    ctx: TraversalContext
    stage_name: str
    stage_id: str
    has_input: bool
    paused_run_id: str = ""
    recovery: Any = None
