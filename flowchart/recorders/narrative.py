"""The narrative recorder: a run told in footprintjs's plain-English sentences.

The law: for the same run, :func:`narrative` produces the same ``(type, depth, text)``
entries, byte for byte, as footprintjs 9.24.0's ``narrative()`` recorder. How:

* Scope operations (reads, writes, emits) arrive in one batch per stage at commit time
  (``on_stage_ops``; the engine logs them as they happen, with each value as it was then,
  so the narrative pays no event per operation). Fed live instead (``on_read`` /
  ``on_write`` / ``on_emit``, called directly or with ``live_operations = True``) they are
  told the same way. They are buffered per ``runtime_stage_id`` and numbered in arrival order (``Step 1`` ...,
  reads, writes and emits share one count), then flushed as depth-1 entries right
  after the stage's ``Stage N:`` line — which is written when the stage's linear
  ``on_stage_executed`` arrives, or its ``on_decision`` for a decider.
* Nobody reading live (no ``follow``), with the default summaries and no renderer, the
  frequent hooks are not told as they come: each call (a stage's batch, its headline, a
  decision, a loop, a break, ...) is kept as it came, one append, and the kept calls are told
  in order, worded at once, the first time the narrative is read (``lines()``, ``entries()``,
  ``save_state()``, ``follow()``). Every value a kept call holds is one nobody changes
  afterwards (a summary made at the operation, a committed value, an event's names and
  counts); what is not — a subflow's mapped input, a live operation, an error with its
  traceback — is told when it comes, after the calls kept before it.
* Selector and subflow-mount stages get no ``Stage N:`` line, and their buffered
  reads are never printed; neither are those of a stage that raised or paused.
* ``Stage N`` counts per subflow and restarts when that subflow is entered; the first
  stage of a flow "began", a linear stage seen again "looped back (pass k)" — k counts
  earlier visits of that stage id in this recorder, across subflow re-entries.
* Inside a subflow footprintjs prints stage names prefixed with the subflow's full id
  (``writer/deep/DeepStart``); names are qualified here from ``ctx.subflow_id``,
  unless the engine already qualified them.

* Across a pause (``save_state`` / ``load_state``, carried in the checkpoint's
  ``recorder_states``), a resumed run's narrative goes on numbering where the paused one
  stopped, as footprintjs's same-executor resume does, even in a fresh process.
* A pausable's ``answer`` half (not in footprintjs) is told as ``Recorded the answer at X.``
  followed by its operations, without a stage number: the resumed stage keeps its own.
* ``notes`` (not in footprintjs) tells a sentence of the caller's right after the write of a
  noted key — ``notes={"human_decisions": tell}`` makes ``tell(value)`` a depth-1 ``note``
  entry without a step number (``None`` tells nothing; a teller that raises tells nothing).
  The value is the one the write event carries, so the run's redaction applies to it.

* Every reader — ``entries``, ``records``, ``lines``, ``entries_for_step``, ``step_count``, a
  live reader that ``follow``s, ``save_state`` — sees the same entries in run order: whatever
  was kept untold is told first, once, and then shared. Across a pause, ``save_state`` /
  ``load_state`` carry the ``Stage N`` counts, the flows begun and the visits per stage
  (checked as untrusted input when loaded).
* A reader that ``follow_counted``s is handed, as each hook call comes, how many entries that
  call makes and where they start (``announce(ctx, start, count)``) — exactly the entries the
  narrative has when read, in order, each announced once — while the calls stay kept (a
  stream's one event per line costs one dictionary update per stage). A call whose count is
  known only by telling it is told at once, after everything kept before it; a narrative whose
  told entries differ from what it announced raises ``NarrativeCountError`` instead of
  letting a reader see a line in the wrong place.

One class in one module: its parts (keeping calls, telling steps, answering readers, counting
for a stream) share every field and call one another. The lazy entry pieces (``Told``,
``Batch``, ``Line``, ``Followed``) are :mod:`flowchart.recorders.narrative_lines`.
Sentence wording lives in :mod:`flowchart.recorders.sentences`; a ``renderer`` (see
:mod:`flowchart.recorders.rendering`) may rephrase stage lines and steps.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.summary import js_object_keys, summarize_value
from flowchart._core.tracked import plain
from flowchart.events import (
    BreakEvent,
    DecisionEvent,
    EmitEvent,
    ErrorEvent,
    ForkEvent,
    LoopEvent,
    MapEvent,
    PauseEvent,
    ReadEvent,
    ResumeEvent,
    RetryEvent,
    SelectedEvent,
    StageExecutedEvent,
    StageOpsEvent,
    SubflowEvent,
    TraversalContext,
    WriteEvent,
)
from flowchart.recorders import sentences
from flowchart.recorders.narrative_lines import Batch, Followed, Line, Told, summary_of, told_length
from flowchart.recorders.narrative_lines import Entry as _Entry
from flowchart.recorders.rendering import OpRenderContext, StageRenderContext, hook

__all__ = ["NarrativeCountError", "NarrativeEntry", "NarrativeRecorder", "narrative"]

#: a buffered scope operation waiting for its stage's headline:
#: ``(kind, key, summary, step, operation, raw)``, kind one of read | write | emit; ``raw``
#: is the value itself, kept only when a renderer's ``render_op`` will ask for it
Op = tuple[str, str, str, int, str, Any]

#: ``announce(ctx, start, count)``: ``count`` entries at ``start`` in the entry list, of the stage ``ctx``
Announce = Callable[[TraversalContext, int, int], None]


class NarrativeCountError(RuntimeError):
    """The narrative told a different number of entries than it announced to a counted reader."""


class ToldView:
    """What a counted reader's line reads its entry from: ``entries()`` is the narrative's entry
    list, every kept call told first (the index of an entry never changes once announced)."""

    __slots__ = ("entries",)

    def __init__(self, entries: Callable[[], list[Any]]) -> None:
        self.entries = entries


#: the stage types whose ``on_stage_executed`` writes a ``Stage N:`` line; a resumed
#: pausable stage counts as linear, as footprintjs reports it
_LINE_STAGE_TYPES = frozenset({"linear", "pausable"})
#: the stage types ``take_stage_executed`` tells anything of (an answer: its line, no number)
_TOLD_STAGE_TYPES = _LINE_STAGE_TYPES | {"answer"}


def _qualify(name: str, ctx: TraversalContext) -> str:
    """``name`` with the subflow prefix footprintjs puts before stage names (none at top level).

    The prefix is the innermost subflow's full id (``writer/deep``), i.e. ``ctx.subflow_id``.
    """
    path = ctx.subflow_path  # ``subflow_id`` without the property call: this runs for every line
    if not path:
        return name
    prefix = path[-1]
    if not prefix or name.startswith(prefix + "/"):
        return name
    return f"{prefix}/{name}"


#: the tags of the two field hooks' calls a narrative keeps until it is read
#: (``NarrativeRecorder._log``; an event hook's call is kept under its own body, ``_kept``),
#: and of a stage's headline kept together with the batch kept just before it (one record)
_OPS, _EXECUTED, _STAGE = "ops", "executed", "stage"

_Recorder = TypeVar("_Recorder", bound="NarrativeRecorder")
_Event = TypeVar("_Event")


def _kept(hook: Callable[[_Recorder, _Event], None]) -> Callable[[_Recorder, _Event], None]:
    """An event hook whose call is kept until the narrative is read (``_log``), when no
    live reader follows: its event's fields are names, counts and committed values."""

    name = hook.__name__

    @functools.wraps(hook)
    def keep(self: _Recorder, event: _Event) -> None:
        log = self._log
        if log is None:
            hook(self, event)
        else:
            log.append((hook, event))
            if self._announce is not None:  # a counted reader: how many entries this call makes
                self._count_kept(name, event)

    return keep


@attrs.define
class NarrativeRecorder:
    """Builds the narrative from recorder events; attach with ``run(recorders=[rec])``.

    Read it back with :meth:`entries` (``(type, depth, text)`` tuples), :meth:`lines`
    (the text) or :meth:`records` (:class:`NarrativeEntry` with stage ids and keys).
    """

    include_step_numbers: bool = True
    include_values: bool = True
    max_value_length: int = 80
    format_value: Callable[[Any, int], str] = summarize_value
    id: str = "narrative"
    notes: Mapping[str, Callable[[Any], str | None]] = attrs.field(factory=dict, repr=False)
    renderer: Any = None
    _records: list[_Entry] = attrs.field(factory=list, init=False, repr=False)
    _pending: dict[str, list[Op]] = attrs.field(factory=dict, init=False, repr=False)
    #: the batches of stages whose headline has not come yet, by runtime id (raw ``StageOp``s)
    _batches: dict[str, list[Any]] = attrs.field(factory=dict, init=False, repr=False)
    #: True while ``_records`` holds a :class:`Batch` not yet told in sentences
    _lazy: bool = attrs.field(default=False, init=False, repr=False)
    _stage_counters: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    _started: set[str] = attrs.field(factory=set, init=False, repr=False)
    _visits: dict[str, int] = attrs.field(factory=dict, init=False, repr=False)
    #: the subflows whose emits are their owner's (``SubflowEvent.quiet_emits``): not told
    _quiet: set[str] = attrs.field(factory=set, init=False, repr=False)
    _render_op: Any = attrs.field(default=None, init=False, repr=False)
    _render_stage: Any = attrs.field(default=None, init=False, repr=False)
    #: the run as it came, told when first read: the frequent hooks' calls (a stage's batch,
    #: its headline, a decision, a loop) kept as ``(tag, *fields)``. ``None``: every hook is
    #: told at once (a live reader follows, a renderer or a custom ``format_value`` is set)
    _log: list[tuple[Any, ...]] | None = attrs.field(default=None, init=False, repr=False)
    #: True while ``_settle`` tells the kept calls: every line is worded at once, no lazy piece
    _wording: bool = attrs.field(default=False, init=False, repr=False)
    #: a counted reader (``follow_counted``), the step counts of kept batches, entries announced
    _announce: Any = attrs.field(default=None, init=False, repr=False)
    _counts: dict[str, int | None] = attrs.field(factory=dict, init=False, repr=False)
    _announced: int | None = attrs.field(default=0, init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        self._render_op = hook(self.renderer, "render_op")
        self._render_stage = hook(self.renderer, "render_stage")
        if self._summarizes and self._render_stage is None and not self.live_operations:
            self._log = []

    # ── data channel: buffered until the stage's headline ──────────────────────

    #: False: the engine hands this recorder a stage's operations in one batch
    #: (``on_stage_ops``) rather than one event each; True asks for the live events
    live_operations = False
    #: whether emits are told (and numbered); the ``include_emits=False`` narrative says no
    _tells_emits = True

    def snapshot_view(self, key: str, view: Any) -> Any:
        """How the engine keeps a live view for this narrative's batch: its summary, told now.

        The step shows the value as it was at that operation, and a summary is all a
        default narrative prints: summarising now costs what footprintjs's live event does,
        where a copy of a growing list would cost its length at every append. A noted key,
        a renderer or a custom ``format_value`` gets the plain value as it was.
        """
        # ``_summarizes`` inline: this runs for every container a narrated stage reads
        if self._render_op is not None or self.format_value is not summarize_value or key in self.notes:
            return plain(view)
        if isinstance(view, list):  # a list's summary is its length: keep that, word it when read
            return told_length(len(view))
        return Told(summarize_value(view, self.max_value_length))

    def take_stage_ops(self, ctx: TraversalContext, ops: list[Any]) -> None:
        """Keep a stage's reads, writes and emits (one batch at commit time) for its headline.

        Nothing is summarised here: the batch is told in sentences when the narrative is
        read (``lines()``, ``entries()``, ...), or at the headline when a live reader follows.
        (The engine calls this field form; ``on_stage_ops`` is the same for an event.)
        """
        if self._quiet and self._hushed(ctx):
            ops = [op for op in ops if op[0] != "emit"]
        log = self._log
        if log is not None:
            log.append((_OPS, ctx, ops))
            if self._announce is not None:
                self._count_ops(ctx.runtime_stage_id, ops)
            return
        rid = ctx.runtime_stage_id
        if rid in self._pending:  # operations fed live came first: number on after them
            self._buffer_batch(rid, ops)
        elif rid in self._batches:
            self._batches[rid] = self._batches[rid] + list(ops)
        else:
            self._batches[rid] = ops

    def on_stage_ops(self, event: StageOpsEvent) -> None:
        """``take_stage_ops`` for a ``StageOpsEvent`` (replaying recorded events)."""
        self.take_stage_ops(event.ctx, event.ops)

    def on_read(self, event: ReadEvent) -> None:
        """Buffer a read (a read without a key is not narrated; a missing key reads ``undefined``)."""
        if self._log:
            self._settle()
        if event.key:
            summary = "undefined" if event.missing else None
            self._buffer(event.ctx.runtime_stage_id, "read", event.key, event.value, summary=summary)

    def on_write(self, event: WriteEvent) -> None:
        """Buffer a set, update or delete (and the note of a noted key)."""
        if self._log:
            self._settle()
        self._buffer(event.ctx.runtime_stage_id, "write", event.key, event.value, event.operation)
        tell = self.notes.get(event.key) if self.notes else None
        if tell is not None and event.operation != "delete":
            self._note(event.ctx.runtime_stage_id, event.key, tell, event.value)

    def _hushed(self, ctx: TraversalContext) -> bool:
        """The stage runs inside a subflow whose emits are not told."""
        return any(path in self._quiet for path in ctx.subflow_path)

    def on_emit(self, event: EmitEvent) -> None:
        """Buffer an emitted event; it takes a step number like reads and writes (not inside a
        subflow whose emits are its owner's: ``SubflowEvent.quiet_emits``)."""
        if self._quiet and self._hushed(event.ctx):
            return
        if self._log:
            self._settle()
        self._buffer(event.ctx.runtime_stage_id, "emit", event.name, event.payload)

    # ── flow channel ───────────────────────────────────────────────────────────

    def take_stage_executed(
        self, ctx: TraversalContext, stage_name: str, description: str | None, stage_type: str
    ) -> None:
        """Write the ``Stage N:`` line of a linear stage, then flush its operations."""
        log = self._log
        if log is not None:
            if stage_type in _TOLD_STAGE_TYPES:  # the others write nothing here
                if log and (last := log[-1])[1] is ctx and last[0] is _OPS:
                    # the stage's own batch was the call kept just before: one record for both
                    log[-1] = (_STAGE, ctx, stage_name, description, stage_type, last[2])
                else:
                    log.append((_EXECUTED, ctx, stage_name, description, stage_type))
                if self._announce is not None:  # its headline, then its steps
                    self._count_headline(ctx, 1)
            return
        if stage_type in _TOLD_STAGE_TYPES:  # deciders write theirs in on_decision; selector/mount/fork none
            self._tell_stage(ctx, stage_name, description, stage_type, None)

    def _tell_stage(
        self, ctx: TraversalContext, stage_name: str, description: str | None, stage_type: str, batch: Any
    ) -> None:
        """Tell a stage's headline — ``take_stage_executed``'s call, or a decider's from
        ``on_decision`` (``stage_type`` ``"decider"``, its name qualified, no visit counted) —
        then its steps (``batch``: its operations when handed with the call, else ``None``:
        the ones filed for it)."""
        if stage_type == "linear" or stage_type == "pausable":  # ``_LINE_STAGE_TYPES``
            visit_key = ctx.stage_id or stage_name
            passes = self._visits.get(visit_key, 0)
            self._visits[visit_key] = passes + 1
            # ``_qualify`` only inside a subflow: at the top level a stage's name is its own
            name = _qualify(stage_name, ctx) if ctx.subflow_path else stage_name
        elif stage_type == "decider":
            name, passes = stage_name, 0
        elif stage_type == "answer":  # not a stage of its own: no number, no visit
            name, passes = _qualify(stage_name, ctx), -1
            self._push("answer", 0, sentences.answer(name), ctx, stage_name=name)
        else:
            return  # a selector, mount or fork gets no line
        if passes >= 0:  # a numbered ``Stage N:`` line
            flow_key = ctx.subflow_path[-1] if ctx.subflow_path else ""
            number = self._stage_counters.get(flow_key, 0) + 1
            self._stage_counters[flow_key] = number
            first = flow_key not in self._started
            if first:
                self._started.add(flow_key)
            text = None
            if self._render_stage is not None:
                stage_ctx = StageRenderContext(name, number, first, description, passes if passes > 0 else None)
                text = self._render_stage(stage_ctx)
            if text is None and self._wording:  # told now (the kept calls replayed): worded at once
                line = sentences.stage(number, name, description, first, passes)
                self._records.append(("stage", 0, line, name, ctx, None, None))
            elif text is None:
                self._push_line("stage", 0, ctx, name, sentences.stage, (number, name, description, first, passes))
            else:
                self._push("stage", 0, text, ctx, stage_name=name)
        # then its steps: its batch, then the operations fed live
        if batch is None and self._batches:
            batch = self._batches.pop(ctx.runtime_stage_id, None)
        if batch:
            if self._wording or not self._summarizes:  # told now (no value outlives its stage)
                self._tell_batch(ctx, name, batch, self._records.append)
            else:
                self._file_batch(ctx, name, batch)
        if self._pending:
            self._flush_pending(ctx, name)

    def on_stage_executed(self, event: StageExecutedEvent) -> None:
        """``take_stage_executed`` for a ``StageExecutedEvent`` (replaying recorded events)."""
        self.take_stage_executed(event.ctx, event.stage_name, event.description, event.stage_type)

    @_kept
    def on_decision(self, event: DecisionEvent) -> None:
        """Write the decider's ``Stage N:`` line, its operations, then ``[Condition]``."""
        ctx = event.ctx
        decider = _qualify(event.decider, ctx)
        self._tell_stage(ctx, decider, event.description, "decider", None)
        args = (_qualify(event.chosen, ctx), event.description, event.rationale, event.evidence)
        self._push_line("condition", 1, ctx, decider, sentences.decision, args)

    @_kept
    def on_fork(self, event: ForkEvent) -> None:
        """``[Parallel]: Forking into N parallel paths: ...``."""
        children = [_qualify(c, event.ctx) for c in event.children]
        self._push("fork", 0, sentences.fork(children), event.ctx)

    @_kept
    def on_map(self, event: MapEvent) -> None:
        """``[Map]: Mapped X over N items.`` (ours: footprintjs has no map stage)."""
        name = _qualify(event.stage_name, event.ctx)
        self._push("map", 0, sentences.mapped(name, event.count, event.failed), event.ctx, stage_name=name)

    def on_selected(self, event: SelectedEvent) -> None:
        """``[Selected]: k of N paths selected ...`` (with the rules when evidence came)."""
        if self._log:
            self._settle()
        selected = [_qualify(s, event.ctx) for s in event.selected]
        self._push("selector", 0, sentences.selected(selected, event.total, event.evidence), event.ctx)

    def on_subflow_entry(self, event: SubflowEvent) -> None:
        """``Entering ...``, one ``Input:`` step per mapped input key; numbering restarts."""
        if event.quiet_emits:
            self._quiet.add(event.subflow_id)
        # the inputs are told now: the mapped state is the subflow's own, which it goes on to change
        inputs: list[tuple[str, str]] = []
        mapped = event.state if isinstance(event.state, dict) else {}
        render = self._render_op
        for number, key in enumerate(js_object_keys(mapped), 1):
            value = mapped[key]
            summary = self.format_value(value, self.max_value_length)
            text = sentences.subflow_input(key, summary, include_values=self.include_values)
            if render is not None:
                custom = render(OpRenderContext("write", key, value, summary, "set", number))
                if custom == "":
                    continue
                text = text if custom is None else custom
            inputs.append((key, text))
        log = self._log
        if log is None:
            self._subflow_entry(event, inputs)
        else:
            log.append((NarrativeRecorder._subflow_entry, event, inputs))
            if self._announce is not None:
                self._announce_lines(event.ctx, 1 + len(inputs))

    def _subflow_entry(self, event: SubflowEvent, inputs: list[tuple[str, str]]) -> None:
        self._stage_counters.pop(event.subflow_id, None)
        self._started.discard(event.subflow_id)
        ctx, name = event.ctx, event.name
        self._push("subflow", 0, sentences.subflow_entry(name, event.description), ctx, stage_name=name)
        for key, text in inputs:
            self._push("step", 1, text, ctx, stage_name=name, key=key)

    @_kept
    def on_subflow_exit(self, event: SubflowEvent) -> None:
        """``Exiting the X subflow.``."""
        self._push("subflow", 0, sentences.subflow_exit(event.name), event.ctx, stage_name=event.name)

    @_kept
    def on_loop(self, event: LoopEvent) -> None:
        """``On pass N through X.`` (or ``On pass N: <description> again.``)."""
        target = _qualify(event.target, event.ctx)
        self._push_line("loop", 0, event.ctx, None, sentences.loop, (target, event.iteration, event.description))

    @_kept
    def on_break(self, event: BreakEvent) -> None:
        """``Execution stopped at X.``."""
        name = event.stage_name if event.propagated_from_subflow else _qualify(event.stage_name, event.ctx)
        self._push("break", 0, sentences.stopped(name), event.ctx, stage_name=name)

    def on_error(self, event: ErrorEvent) -> None:
        """``[Error]: An error occurred at X: <message>.`` for stage errors only."""
        if self._log:  # told now, not kept: the event holds the error and its traceback
            self._settle()
        if event.channel != "flow":
            return  # a recorder's failure is not part of the run's story
        self._pending.pop(event.ctx.runtime_stage_id, None)  # never flushed, as in footprintjs
        self._batches.pop(event.ctx.runtime_stage_id, None)
        self._counts.pop(event.ctx.runtime_stage_id, None)
        name = _qualify(event.stage_name, event.ctx)
        self._push("error", 0, sentences.error(name, event.message), event.ctx, stage_name=name)

    @_kept
    def on_retry(self, event: RetryEvent) -> None:
        """``[Retry]: retried X (attempt 2 of 3) after TimeoutError: <message>`` — the failed
        attempt's buffered reads and writes are dropped (they were discarded, not committed)."""
        self._pending.pop(event.ctx.runtime_stage_id, None)
        name = _qualify(event.stage_name, event.ctx)
        text = sentences.retry(name, event.attempt, event.attempts, event.error_type, event.message)
        self._push("retry", 0, text, event.ctx, stage_name=name)

    @_kept
    def on_pause(self, event: PauseEvent) -> None:
        """``Execution paused at X.``; the paused stage's operations are never told."""
        self._pending.pop(event.ctx.runtime_stage_id, None)
        self._batches.pop(event.ctx.runtime_stage_id, None)
        name = _qualify(event.stage_name, event.ctx)
        self._push("pause", 0, sentences.paused(name), event.ctx, stage_name=name)

    @_kept
    def on_resume(self, event: ResumeEvent) -> None:
        """``Execution resumed at X with input.`` / ``Execution resumed at X.``."""
        name = _qualify(event.stage_name, event.ctx)
        recovery = event.recovery
        if recovery is not None:  # a failed run, continued where it failed
            text = sentences.recovered(name, recovery.error_type, recovery.message)
            self._push("resume", 0, text, event.ctx, stage_name=name)
            return
        self._push("resume", 0, sentences.resumed(name, event.has_input), event.ctx, stage_name=name)

    # ── helpers ────────────────────────────────────────────────────────────────

    def _settle(self) -> None:
        """Tell the kept hook calls now, in the order they came (see ``_log``).

        Each call is told exactly as it would have been when it came: the numbering is the
        order of the calls, and every value a call holds is one nobody changes afterwards
        (a summary made at the operation, a committed value, an event's fields). Any other
        hook settles first, so the calls it follows are told before it.
        """
        log = self._log
        assert log is not None
        self._log = None  # told at once while the kept calls are replayed, and worded
        self._wording = True
        pending, batches = self._pending, self._batches
        try:
            for record in log:
                tag = record[0]
                try:  # as the engine calls a hook: one that fails does not stop the others
                    if tag is _STAGE:  # a stage's batch and headline, kept as one record
                        ctx = record[1]
                        rid = ctx.runtime_stage_id
                        if (pending and rid in pending) or (batches and rid in batches):
                            self.take_stage_ops(ctx, record[5])  # numbered on after what came first
                            self._tell_stage(ctx, record[2], record[3], record[4], None)
                        else:  # its first batch: handed to its headline, never filed
                            self._tell_stage(ctx, record[2], record[3], record[4], record[5])
                    elif tag is _OPS:
                        rid = record[1].runtime_stage_id
                        if rid in pending or rid in batches:
                            self.take_stage_ops(record[1], record[2])
                        else:  # ``take_stage_ops`` of a stage's first batch, inline
                            batches[rid] = record[2]
                    elif tag is _EXECUTED:
                        self._tell_stage(record[1], record[2], record[3], record[4], None)
                    else:  # an event hook's own body (``_kept``), or ``_subflow_entry``
                        tag(self, *record[1:])
                except Exception:  # told at once, the engine would have reported it and gone on
                    continue
        finally:
            log.clear()
            self._log = log
            self._wording = False
        if self._announce is not None:
            self._check_counted()

    # ── writing entries: a stage's operations as numbered steps, its headline ─────

    @property
    def _summarizes(self) -> bool:
        """True when a summary is all this narrative prints of a value (the default options).

        Only then is a batch kept untold until read: it holds summaries and values the
        commits share. Otherwise it is told at its headline, so no value outlives its stage.
        """
        return self._render_op is None and self.format_value is summarize_value

    def _buffer_batch(self, rid: str, batch: list[Any]) -> None:
        ops = self._pending[rid]
        append = ops.append
        step = ops[-1][3] if ops else 0
        fmt, max_len = self.format_value, self.max_value_length
        keep_raw = self._render_op is not None
        for kind, key, value, operation, _hidden in batch:
            if kind == "read" or kind == "missing":
                if key:
                    step += 1
                    summary = "undefined" if kind == "missing" else summary_of(fmt, value, max_len)
                    append(("read", key, summary, step, "set", value if keep_raw else None))
            elif kind == "write":
                step += 1
                append(("write", key, summary_of(fmt, value, max_len), step, operation, value if keep_raw else None))
                tell = self.notes.get(key) if self.notes else None
                if tell is not None and operation != "delete":
                    self._note(rid, key, tell, value)
                    step = ops[-1][3]
            elif kind == "emit" and self._tells_emits:
                step += 1
                append(("emit", key, fmt(value, max_len), step, "set", value if keep_raw else None))

    def _countable(self, batch: list[Any]) -> int | None:
        """How many entries ``_tell_batch`` makes of ``batch`` (default summaries), or ``None``
        when that is only known by wording it (a noted key is written: its teller decides)."""
        # one operation at a time: for the few operations a stage makes (two to ten in W1 and
        # W6) this loop costs fewer instructions, and less time, than counting the kinds in C
        # with ``map``/``list.count`` (docs/performance.md, "Round six")
        notes, emits = self.notes, self._tells_emits
        count = 0
        for kind, key, _value, operation, _hidden in batch:
            if kind == "write":
                if notes and key in notes and operation != "delete":
                    return None
                count += 1
            elif kind == "read" or kind == "missing":
                if key:
                    count += 1
            elif kind == "emit" and emits:
                count += 1
        return count

    def _tell_batch(
        self, ctx: TraversalContext, stage_name: str, batch: list[Any], push: Callable[[_Entry], Any]
    ) -> None:
        """Tell one stage's batch as its depth-1 entries, exactly as ``_flush_pending`` tells live operations."""
        fmt, max_len = self.format_value, self.max_value_length
        numbered, values = self.include_step_numbers, self.include_values
        describe = sentences.operation
        render = self._render_op
        notes = self.notes
        step = 0
        for kind, key, value, operation, _hidden in batch:
            if kind == "write":
                step += 1
                summary = value.text if type(value) is Told else fmt(value, max_len)
            elif kind == "read":
                if not key:
                    continue
                step += 1
                summary = value.text if type(value) is Told else fmt(value, max_len)
                operation = "set"
            elif kind == "missing":
                if not key:
                    continue
                step += 1
                kind, summary, operation, value = "read", "undefined", "set", None
            elif kind == "emit":
                if not self._tells_emits:
                    continue
                step += 1
                push(("emit", 1, f"[emit] {key}: {fmt(value, max_len)}", stage_name, ctx, None, step))
                continue
            else:
                continue
            if render is None:
                text = describe(kind, operation, key, summary, values, step if numbered else None)
                push(("step", 1, text, stage_name, ctx, key, step))
            else:
                text = render(OpRenderContext(kind, key, value, summary, operation, step))
                if text is None:  # the renderer words only some steps: this one as usual
                    text = describe(kind, operation, key, summary, values, step if numbered else None)
                if text != "":  # "": the renderer leaves this step out
                    push(("step", 1, text, stage_name, ctx, key, step))
            if notes and kind == "write" and operation != "delete":  # no notes: one test
                tell = notes.get(key)
                if tell is not None:
                    try:
                        note = tell(value)
                    except Exception:
                        continue
                    if isinstance(note, str) and note:
                        push(("note", 1, note, stage_name, ctx, key, None))

    def _buffer(
        self,
        runtime_stage_id: str,
        kind: str,
        key: str,
        value: Any,
        operation: str = "set",
        summary: str | None = None,
    ) -> None:
        # summarised now, not at flush: a value read from the scope may be a live view
        # that the stage goes on to mutate, and the step must show it as it was read
        if summary is None:
            summary = self.format_value(value, self.max_value_length)
        ops = self._pending.get(runtime_stage_id)
        if ops is None:
            ops = self._pending[runtime_stage_id] = []
        step = ops[-1][3] + 1 if ops else 1
        ops.append((kind, key, summary, step, operation, value if self._render_op is not None else None))

    def _note(self, runtime_stage_id: str, key: str, tell: Callable[[Any], str | None], value: Any) -> None:
        try:
            text = tell(value)
        except Exception:
            return
        if isinstance(text, str) and text:
            ops = self._pending.setdefault(runtime_stage_id, [])
            ops.append(("note", key, text, ops[-1][3] if ops else 0, "set", None))

    def _file_batch(self, ctx: TraversalContext, stage_name: str, batch: list[Any]) -> None:
        """Keep a stage's batch after its line, worded when first read (a ``Batch``); a live
        reader is handed it at once (with its count when it takes batches)."""
        records = self._records
        if type(records) is not Followed:
            records.append(Batch(ctx, stage_name, batch, self))  # type: ignore[arg-type]
            self._lazy = True
            return
        on_batch = records.on_batch
        count = self._countable(batch) if on_batch is not None else None
        if on_batch is None or count is None:  # a reader of entries only, or a note due
            self._tell_batch(ctx, stage_name, batch, records.append)
        else:  # a live reader told how many entries, worded when it reads them
            told = Batch(ctx, stage_name, batch, self)
            list.append(records, told)
            self._lazy = True
            if count:
                on_batch(told, count)

    def _flush_pending(self, ctx: TraversalContext, stage_name: str) -> None:
        """Tell the operations fed live (``on_read`` / ``on_write`` / ``on_emit``) after the stage's line."""
        ops = self._pending.pop(ctx.runtime_stage_id, None)
        if not ops:
            return
        push = self._records.append
        numbered, values = self.include_step_numbers, self.include_values
        describe = sentences.operation
        render = self._render_op
        for kind, key, summary, step, operation, raw in ops:
            if kind == "emit":
                push(("emit", 1, sentences.emit(key, summary), stage_name, ctx, None, step))
                continue
            if kind == "note":
                push(("note", 1, summary, stage_name, ctx, key, None))
                continue
            if render is not None:
                op_kind: Any = kind
                custom = render(OpRenderContext(op_kind, key, raw, summary, operation, step))
                if custom == "":
                    continue  # the renderer leaves this step out
                if custom is not None:
                    push(("step", 1, custom, stage_name, ctx, key, step))
                    continue
            text = describe(kind, operation, key, summary, values, step if numbered else None)
            push(("step", 1, text, stage_name, ctx, key, step))

    def _push_line(
        self,
        kind: str,
        depth: int,
        ctx: TraversalContext,
        stage_name: str | None,
        word: Callable[..., str],
        args: tuple[Any, ...],
    ) -> None:
        """Push an entry whose sentence is ``word(*args)``, worded when first read (a ``Line``).

        The numbering and everything the sentence depends on are fixed now (the arguments
        are values nobody changes afterwards); only the wording waits. A live reader (a
        stream) is handed the line at once, worded when it reads the text. While the kept
        calls are told (``_settle``: somebody reads), the sentence is worded at once.
        """
        if self._wording:
            self._records.append((kind, depth, word(*args), stage_name, ctx, None, None))
            return
        line = Line(kind, depth, ctx, stage_name, word, args)
        records = self._records
        self._lazy = True
        if type(records) is Followed:
            list.append(records, line)
            if records.on_batch is not None:
                records.on_batch(line, 1)
            else:
                records.on_entry(line.entries()[0])
        else:
            records.append(line)  # type: ignore[arg-type]

    def _push(
        self,
        kind: str,
        depth: int,
        text: str,
        ctx: TraversalContext,
        *,
        stage_name: str | None = None,
        key: str | None = None,
        step: int | None = None,
    ) -> None:
        self._records.append((kind, depth, text, stage_name, ctx, key, step))
        if self._announce is not None and not self._wording:  # told now, outside the kept calls
            self._announce_lines(ctx, 1)

    # ── reading back, and the counts across a pause ────────────────────────────

    def entries(self) -> list[tuple[str, int, str]]:
        """All entries in run order as ``(type, depth, text)``."""
        return [(kind, depth, text) for kind, depth, text, *_ in self._told()]

    def records(self) -> list[NarrativeEntry]:
        """All entries in run order, with stage ids, subflow id and key."""
        return [
            NarrativeEntry(
                type=kind,
                depth=depth,
                text=text,
                stage_name=stage_name,
                stage_id=ctx.stage_id,
                runtime_stage_id=ctx.runtime_stage_id,
                subflow_id=ctx.subflow_id,
                key=key,
                step_number=step,
            )
            for kind, depth, text, stage_name, ctx, key, step in self._told()
        ]

    def entries_for_step(self, runtime_stage_id: str) -> list[NarrativeEntry]:
        """The entries one execution step produced (footprintjs ``getEntriesForStep``)."""
        return [r for r in self.records() if r.runtime_stage_id == runtime_stage_id]

    def get_entries_for_step(self, runtime_stage_id: str) -> list[NarrativeEntry]:
        """``entries_for_step`` under footprintjs's own name (``getEntriesForStep``)."""
        return self.entries_for_step(runtime_stage_id)

    @property
    def step_count(self) -> int:
        """How many distinct execution steps produced entries (footprintjs ``stepCount``)."""
        return len({entry[4].runtime_stage_id for entry in self._told()})

    def lines(self) -> list[str]:
        """The narrative text, one line per entry."""
        return [entry[2] for entry in self._told()]

    def _told(self) -> list[_Entry]:
        """The entries, with every stage batch told in sentences now (once: the text is kept)."""
        if self._log:
            self._settle()
        if self._lazy:
            told: list[_Entry] = []
            push, extend = told.append, told.extend
            for entry in self._records:
                if type(entry) is tuple:
                    push(entry)
                else:  # a Batch or a Line: worded now, once
                    extend(entry.entries())  # type: ignore[attr-defined]
            if type(self._records) is Followed:
                self._records[:] = told  # keep following: the stream goes on after a mid-run read
            else:
                self._records = told
            self._lazy = False
        return self._records

    def follow(
        self, on_entry: Callable[[tuple[Any, ...]], Any], on_batch: Callable[[Any, int], Any] | None = None
    ) -> None:
        """Also hand every entry to ``on_entry`` the moment it is written (a live reader: a stream).

        The entry is the record tuple ``(type, depth, text, stage_name, ctx, key, step)``.
        With ``on_batch``, a stage's steps whose number is known before they are worded (the
        default summaries, no note due) come as ``on_batch(batch, count)`` instead, at the same
        moment: ``batch.ctx`` is the stage's context and ``batch.entries()`` words its ``count``
        entries the first time it is called (then keeps them; ``lines()`` shares them).
        """
        self._records = Followed(self._told(), on_entry, on_batch)
        self._log = None  # a live reader is told each line as the run makes it
        self._announce = None

    def clear(self) -> None:
        """Forget everything: entries, buffered operations, counters and visits."""
        self._records.clear()
        if self._log is not None:
            self._log.clear()
        self._lazy = False
        self._pending.clear()
        self._batches.clear()
        self._counts.clear()
        if self._announce is not None:
            self._announced = 0
        self._stage_counters.clear()
        self._started.clear()
        self._visits.clear()

    # ── across a pause: the checkpoint carries the counts ──────────────────────

    def save_state(self) -> dict[str, Any]:
        """What a resumed run needs to go on numbering as footprintjs's same-executor resume
        does: the ``Stage N`` count per flow, the flows already begun, the visits per stage.
        The engine stores it in the checkpoint's ``recorder_states`` under this recorder's ``id``."""
        if self._log:
            self._settle()
        return {
            "stages": dict(self._stage_counters),
            "started": sorted(self._started),
            "visits": dict(self._visits),
        }

    def load_state(self, state: Any) -> None:
        """Go on from ``save_state``'s value (read from a checkpoint: untrusted, checked here;
        ``ValueError`` naming the field when it is not that shape)."""
        if not isinstance(state, dict) or set(state) != {"stages", "started", "visits"}:
            raise ValueError("expected an object with exactly the keys stages, started, visits")
        for name in ("stages", "visits"):
            counts = state[name]
            if not isinstance(counts, dict) or not all(
                isinstance(k, str) and type(v) is int and v >= 0 for k, v in counts.items()
            ):
                raise ValueError(f"{name}: expected an object of counts (integers, 0 or more)")
        started = state["started"]
        if not isinstance(started, list) or not all(isinstance(k, str) for k in started):
            raise ValueError("started: expected a list of strings")
        if self._log:
            self._settle()
        self._stage_counters = dict(state["stages"])
        self._started = set(started)
        self._visits = dict(state["visits"])

    # ── a counted reader: told how many lines come, not the lines ──────────────

    def follow_counted(self, announce: Announce) -> ToldView:
        """Hand ``announce(ctx, start, count)`` each hook call's entries as it comes (see the
        module law); returns the view a reader reads entry ``start + i`` from (``entries()[i]``).

        Only for a narrative that keeps its calls (the default summaries, no renderer):
        ``ValueError`` otherwise (``follow`` tells such a narrative's lines as they come)."""
        if self._log is None:
            raise ValueError("follow_counted: this narrative tells each line as it comes (use follow())")
        self._announced = len(self._told())
        self._counts.clear()
        self._announce = announce
        return ToldView(self._told)

    # -- called by the narrative as it keeps a call (``_announce`` is set) -------------------------------
    def _count_ops(self, rid: str, ops: list[Any]) -> None:
        """A stage's batch was kept: its steps are told at the stage's headline."""
        count = self._countable(ops) if not self._pending else None
        counts = self._counts
        if rid in counts:
            before = counts[rid]
            counts[rid] = None if before is None or count is None else before + count
        else:
            counts[rid] = count

    def _count_headline(self, ctx: TraversalContext, lines: int) -> None:
        """A headline call was kept: its ``lines`` own entries, then the stage's steps."""
        steps = self._counts.pop(ctx.runtime_stage_id, 0)
        if steps is None or self._pending:
            self._tell_uncounted(ctx)
        else:
            self._announce_lines(ctx, lines + steps)

    def _announce_lines(self, ctx: TraversalContext, count: int) -> None:
        start = self._announced
        if start is None:  # told now by ``_tell_uncounted``, which announces what it told
            return
        self._announced = start + count
        self._announce(ctx, start, count)

    def _tell_uncounted(self, ctx: TraversalContext) -> None:
        """The last kept call makes entries known only by telling it: tell it now, after the
        calls kept before it (checked), and announce what it made."""
        log = self._log
        assert log is not None
        call = log.pop()
        if log:
            self._settle()
        log = self._log
        assert log is not None
        log.append(call)
        start = self._announced
        assert start is not None
        self._announced = None
        try:
            self._settle()
        finally:
            self._announced = len(self._records)
        if self._announced > start:
            self._announce(ctx, start, self._announced - start)

    def _check_counted(self) -> None:
        """After the kept calls were told: the entries are exactly the ones announced."""
        announced = self._announced
        if announced is not None and len(self._records) != announced:
            raise NarrativeCountError(
                f"the narrative told {len(self._records)} entries but announced {announced} to its "
                "counted reader (a stream): this is a bug in flowchart's narrative, please report it"
            )

    def _count_kept(self, hook: str, event: Any) -> None:
        """An event hook's call was kept (``narrative._kept``): the entries its body makes when
        told — a decision its headline, the stage's steps and its condition; a pause its line
        (the paused stage's batch is dropped, never told); every other kept hook one line."""
        ctx = event.ctx
        if hook == "on_decision":
            self._count_headline(ctx, 2)
            return
        if hook == "on_pause":
            self._counts.pop(ctx.runtime_stage_id, None)
        self._announce_lines(ctx, 1)


@attrs.define
class _SilentEmitsRecorder(NarrativeRecorder):
    """A narrative that does not listen to emits (no ``on_emit`` hook, so emits cost nothing)."""

    on_emit = None  # type: ignore[assignment]
    _tells_emits = False


def narrative(
    include_step_numbers: bool = True,
    include_values: bool = True,
    max_value_length: int = 80,
    format_value: Callable[[Any, int], str] | None = None,
    include_emits: bool = True,
    notes: Mapping[str, Callable[[Any], str | None]] | None = None,
    id: str = "narrative",
    renderer: Any = None,
) -> NarrativeRecorder:
    """A new :class:`NarrativeRecorder` (footprintjs ``narrative()`` options, snake_case).

    ``id`` names the recorder (footprintjs attaches recorders by id); ``renderer`` is an
    object with ``render_stage`` / ``render_op`` hooks that rephrase stage lines and steps
    (:mod:`flowchart.recorders.rendering`).

    ``format_value(value, max_len)`` replaces :func:`summarize_value` for every value
    the narrative prints. ``include_emits=False`` leaves ``ctx.emit`` events out of the
    narrative (and out of its step numbers): the agent uses it, because its events repeat
    what the commits already say. ``notes`` maps a state key to ``tell(value) -> sentence``,
    told right after each write of that key (see the module docstring).
    """
    recorder_class = NarrativeRecorder if include_emits else _SilentEmitsRecorder
    return recorder_class(
        include_step_numbers=include_step_numbers,
        include_values=include_values,
        max_value_length=max_value_length,
        format_value=format_value or summarize_value,
        notes=dict(notes or {}),
        id=id,
        renderer=renderer,
    )
