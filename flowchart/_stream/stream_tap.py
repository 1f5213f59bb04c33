"""The stream tap: a recorder that turns the engine's recorder events into stream events.

Laws:
- Streams are the recorder protocol made iterable: every stream event is built inside
  the recorder hook it stands for, when that hook fires, and handed to the sink at once
  — so the order of the stream is the order recorders see.
- Narrative lines come from the run's OWN narrative recorder, which the tap wraps: each
  hook is passed on to the narrative (after the hook's own event is streamed) and every
  line is streamed the moment the narrative writes it. Nothing is narrated twice. A
  stage's steps are streamed then as lines worded when first read (the narrative counts
  them without wording them; the words, when read, are the ones the narrative keeps).
- Only the hooks a stream needs are bound (the engine skips a hook nobody has), so a
  ``modes=`` filter also saves the work of the kinds it leaves out. The tap's own stage,
  commit and emit hooks are the field forms (``take_*``, :mod:`flowchart.events`): called
  where the event forms would be, with no recorder event built in between.
- A tap that ``guard``s a run (one that awaits, so the consumer can leave mid-way)
  keeps the top-level commits it saw (the run's commit log, as the engine appends
  it), so a run the consumer cancelled still has a record.
- Once the consumer has asked to cancel, the next stage does not start: the tap raises
  ``asyncio.CancelledError`` from ``on_stage_start`` (a ``BaseException``, which the
  recorder guard does not swallow), and the run unwinds as a cancelled task does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

from flowchart.events import ALL_HOOKS, FIELD_FORMS, FIELD_HOOKS, OPERATION_HOOKS, TraversalContext
from flowchart.recorders.narrative import NarrativeRecorder
from flowchart.stream_events import (
    CommitMade,
    DecisionMade,
    Emitted,
    NarrativeLine,
    PauseRequested,
    StageFailed,
    StageStarted,
    StreamEvent,
)

Sink = Callable[[StreamEvent], None]
#: turns an ``ctx.emit`` event into a typed stream event (``None``: a plain ``emit`` event)
EmitTranslator = Callable[[TraversalContext, str, Any], StreamEvent | None]
#: the stream-event kinds an emit translator can produce, by emit name
EmitKinds = Mapping[str, str]


class StreamTap:
    """One run's stream recorder. Attach it in place of the run's narrative recorder."""

    def __init__(
        self,
        sink: Sink,
        kinds: frozenset[str],
        *,
        narrative: NarrativeRecorder | None = None,
        translate: EmitTranslator | None = None,
        emit_kinds: EmitKinds | None = None,
        will_wrap: bool = False,
    ) -> None:
        """``will_wrap``: the caller will ``wrap`` a narrative before the run (bind once, then)."""
        self.sink = sink
        self.kinds = kinds
        self.narrative = narrative
        self.translate = translate
        self.emit_kinds = emit_kinds or {}
        #: per emit name with a typed kind: True to translate it, False to drop it; others plain
        self._typed = {name: kind in kinds for name, kind in self.emit_kinds.items()} if translate is not None else {}
        self._plain = "emit" in kinds
        #: the top-level commit log as the engine appended it (kept while ``guards``)
        self.commits: list[Any] = []
        #: True when the run can be cancelled mid-way (it awaits): commits are kept, stage starts checked
        self.guards = False
        self.cancel_requested = False
        self.emit_names: frozenset[str] | None = None
        self._told: Any = None
        if not will_wrap:
            self._bind_all()
        if narrative is not None and "narrative" in kinds:
            self._follow(narrative)

    def wrap(self, narrative: NarrativeRecorder) -> None:
        """Stand in for ``narrative``: pass it every hook, stream its lines, answer ``lines()``."""
        self.narrative = narrative
        if "narrative" in self.kinds:
            self._follow(narrative)
        self._bind_all()

    def _follow(self, narrative: NarrativeRecorder) -> None:
        """Stream the narrative's lines: counted as they come when it keeps its calls (the
        default narrative: its lines are worded when first read), else told as they come."""
        if getattr(narrative, "_log", None) is not None and callable(getattr(narrative, "follow_counted", None)):
            self._told = narrative.follow_counted(self._counted)
        else:
            narrative.follow(self._line, self._lines)

    def guard(self) -> None:
        """Make the run cancellable: keep its commits and check for a cancel before each stage."""
        self.guards = True
        self._bind_all()

    # -- binding -----------------------------------------------------------------------------
    def _bind_all(self) -> None:
        narrative = self.narrative
        key = (type(narrative), self.kinds, self.guards, self.translate is not None, tuple(self.emit_kinds.items()))
        plan = _PLANS.get(key)
        if plan is None:
            plan = self._plan()
            if (narrative is None or not hasattr(narrative, "__dict__")) and len(_PLANS) < _PLANS_KEPT:
                _PLANS[key] = plan  # a slotted narrative: no instance can add or hide a hook
        bindings, self.emit_names, self.batch_emits, snapshot = plan
        for hook, mine_name, theirs_too in bindings:
            mine = getattr(self, mine_name) if mine_name else None
            theirs = getattr(narrative, hook) if theirs_too else None
            setattr(self, hook, mine if theirs is None else theirs if mine is None else _both(mine, theirs))
        if snapshot:  # how the batch keeps live views
            self.snapshot_view = narrative.snapshot_view  # type: ignore[union-attr]
        if narrative is not None:  # readers of the run's narrative (traces, snapshots) find it here
            self.lines = narrative.lines
            self.entries = narrative.entries
            self.records = narrative.records

    def _plan(self) -> _Plan:
        """Which hooks this tap binds, and to what: ``(hook, our method's name or "", theirs
        too)`` for each, then the emit names, whether emits go in the batch, and whether the
        narrative keeps live views. It depends only on the narrative's class and the stream's
        options, so a stream of the same kind reuses it (``_PLANS``)."""
        narrative = self.narrative
        # a narrative that takes its operations in a batch hears them there, not one by one
        batched = (
            callable(getattr(narrative, "on_stage_ops", None)) or callable(getattr(narrative, "take_stage_ops", None))
        ) and not getattr(narrative, "live_operations", False)
        own = self._own_hooks()
        theirs_all = _hooks_of(narrative)
        bindings: list[tuple[str, str, bool]] = []
        for hook in ALL_HOOKS:
            if hook in own or hook in theirs_all:
                theirs = _theirs(hook, narrative, batched)
                if theirs or hook in own:
                    bindings.append((hook, own.get(hook, ""), theirs))
        for hook in FIELD_HOOKS:  # ours, the narrative's, or both (ours first); else unset (None)
            theirs = hook in theirs_all and not (batched and hook == "take_emit")
            bindings.append((hook, own.get(hook, ""), theirs))
        #: the stage's emits go in the batch the narrative takes only when it tells emits
        batch_emits = callable(getattr(narrative, "on_emit", None))
        return tuple(bindings), self._emit_names(), batch_emits, callable(getattr(narrative, "snapshot_view", None))

    #: the tap's own emit hook is live; the narrative it wraps takes its operations in a batch
    live_operations = True
    #: the field hooks (bound per stream in ``_bind_all``; ``None``: not taken)
    take_stage_start: Callable[[TraversalContext], None] | None = None
    take_emit: Callable[[TraversalContext, str, Any], None] | None = None
    take_commit: Callable[[TraversalContext, Any], None] | None = None

    def _emit_names(self) -> frozenset[str] | None:
        """The emit names this tap streams (``None``: all), so the engine skips the others."""
        if callable(getattr(self.narrative, "on_emit", None)) or "emit" in self.kinds:
            return None  # a narrative that tells emits, or plain emit events: every name
        if self.translate is None:
            return frozenset()
        return frozenset(name for name, kind in self.emit_kinds.items() if kind in self.kinds)

    def _own_hooks(self) -> dict[str, str]:
        """The tap's own hooks this stream needs: its method's name by hook name."""
        kinds = self.kinds
        own = {"on_error": "_error", "on_pause": "_pause"}
        if "stage" in kinds or self.guards:
            own["take_stage_start"] = "_stage_start"
        if "commit" in kinds or self.guards:
            own["take_commit"] = "_commit"
        if "decision" in kinds:
            own["on_decision"] = own["on_selected"] = "_decision"
        if "emit" in kinds or any(kind in kinds for kind in self.emit_kinds.values()):
            own["take_emit"] = "_emit"
        return own

    # -- the hooks -----------------------------------------------------------------------------
    def _stage_start(self, ctx: TraversalContext) -> None:
        if self.cancel_requested:
            raise asyncio.CancelledError("the stream's consumer cancelled the run")
        if "stage" in self.kinds:
            self.sink(StageStarted(ctx))

    def _commit(self, ctx: TraversalContext, commit: Any) -> None:
        if self.guards and not ctx.subflow_path:
            self.commits.append(commit)
        if "commit" in self.kinds:
            self.sink(CommitMade(ctx, commit))

    def _decision(self, event: Any) -> None:
        chosen = (event.chosen_id,) if hasattr(event, "chosen_id") else tuple(event.selected_ids)
        rationale = getattr(event, "rationale", None)
        self.sink(DecisionMade(event.ctx, chosen, rationale, event.evidence))

    def _emit(self, ctx: TraversalContext, name: str, payload: Any) -> None:
        typed = self._typed.get(name)
        if typed is not None:  # an emit this stream turns into a typed event (or drops: False)
            if typed:
                event = self.translate(ctx, name, payload)  # type: ignore[misc]
                if event is not None:
                    self.sink(event)
        elif self._plain:
            self.sink(Emitted(ctx, name, payload))

    def _error(self, event: Any) -> None:
        if event.channel == "flow":
            self.sink(StageFailed(event.ctx, event.message))

    def _pause(self, event: Any) -> None:
        self.sink(PauseRequested(event.ctx, event.pause_data))

    def _line(self, entry: tuple[Any, ...]) -> None:
        self.sink(NarrativeLine(entry[4], entry))

    def _counted(self, ctx: TraversalContext, start: int, count: int) -> None:
        """``count`` lines at ``start`` in the narrative, read from it when first read (``NarrativeLine``)."""
        sink, told = self.sink, self._told
        for index in range(start, start + count):
            sink(NarrativeLine(ctx, None, told, index))

    def _lines(self, batch: Any, count: int) -> None:
        """A stage's ``count`` step lines, worded when first read (``NarrativeLine``)."""
        sink, ctx = self.sink, batch.ctx
        for index in range(count):
            sink(NarrativeLine(ctx, None, batch, index))


_HOOK_NAMES: dict[type, frozenset[str]] = {}
#: a tap's binding plan (``StreamTap._plan``) by narrative class and stream options
_Plan = tuple[tuple[tuple[str, str, bool], ...], "frozenset[str] | None", bool, bool]
_PLANS: dict[tuple[Any, ...], _Plan] = {}
_PLANS_KEPT = 64


def _theirs(hook: str, narrative: Any, batched: bool) -> bool:
    """Whether the narrative hears ``hook`` as an event through the tap (not when it takes the
    point as fields, or its operations in a batch)."""
    if narrative is None or (batched and hook in OPERATION_HOOKS):
        return False
    if callable(getattr(narrative, FIELD_FORMS.get(hook, ""), None)):
        return False  # the narrative takes this point as fields (bound with them)
    return callable(getattr(narrative, hook, None))


def _hooks_of(recorder: Any) -> frozenset[str]:
    """The hook names (event and field forms) ``recorder`` has (cached per slotted class)."""
    if recorder is None:
        return frozenset()
    kind = type(recorder)
    names = _HOOK_NAMES.get(kind)
    if names is None:
        names = frozenset(name for name in (*ALL_HOOKS, *FIELD_HOOKS) if callable(getattr(recorder, name, None)))
        if not hasattr(recorder, "__dict__"):  # a slotted class: no instance can add or hide a hook
            _HOOK_NAMES[kind] = names
    return names


def _both(first: Callable[..., None], second: Callable[..., None]) -> Callable[..., None]:
    def call(*fields: Any) -> None:
        first(*fields)
        second(*fields)

    return call
