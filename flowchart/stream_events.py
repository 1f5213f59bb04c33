"""Stream events: the typed, JSON-serialisable values ``chart.stream()`` yields.

Law: a stream event is a recorder event made into a value. Each kind below is built
from exactly one recorder hook (``flowchart.events``), at the moment the hook fires, so
a stream yields what the recorders see, in the same order:

    stage      on_stage_start     a stage body is about to run
    commit     on_commit          the stage's one commit (its ops, already redacted)
    narrative  (narrative hooks)  one narrative line, right after the hook that wrote it
    decision   on_decision / on_selected   the branch(es) chosen, with the evidence
    emit       on_emit            ``ctx.emit(name, payload)``
    error      on_error           a stage raised (the stream then raises the error)
    pause      on_pause           a pausable stage paused, with its question
    final      (the run ended)    the last event: ``result`` is what ``run()`` returns

``to_dict()`` is JSON-safe and deterministic (no clocks, no ids that change between
runs beyond the stage's runtime id). ``final``, ``pause`` and ``error`` are never
filtered out by ``modes=``: the end of a run is always seen.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar

import attrs

from flowchart._core.values import NotJsonSafe, copy_json
from flowchart.events import TraversalContext


def json_view(value: Any) -> Any:
    """``value`` as JSON: itself when JSON-safe, else its ``to_dict()``, else its ``repr``."""
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    try:
        return copy_json(value)
    except NotJsonSafe:
        return repr(value)


@attrs.define
class StreamEvent:
    """What every stream event has: its ``kind`` and the stage it happened in (``ctx``).

    Events are values: read them, never change them. (They are plain slotted attrs
    classes rather than frozen ones, and keep the engine's ``TraversalContext`` rather
    than copies of its fields, because a stream makes one per recorder event and a
    frozen class costs three times as much to make.)
    """

    kind: ClassVar[str] = "event"

    ctx: TraversalContext | None = attrs.field(repr=False)

    @property
    def stage(self) -> str:
        """The stage's name (``""`` for ``final``, which is about the whole run)."""
        return self.ctx.stage_name if self.ctx is not None else ""

    @property
    def stage_id(self) -> str:
        """The stage's full id (``subflow/stage`` inside a subflow)."""
        return self.ctx.stage_id if self.ctx is not None else ""

    @property
    def runtime_stage_id(self) -> str:
        """The execution's id, ``stage_id#N``: the same one its commit carries."""
        return self.ctx.runtime_stage_id if self.ctx is not None else ""

    def fields(self) -> dict[str, Any]:
        """The event's own fields (what ``to_dict`` adds after the stage)."""
        return {f.name: getattr(self, f.name) for f in attrs.fields(type(self)) if f.name != "ctx"}

    def to_dict(self) -> dict[str, Any]:
        """``{"kind", "stage", "stage_id", "runtime_stage_id", ...the event's own fields}``."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "stage": self.stage,
            "stage_id": self.stage_id,
            "runtime_stage_id": self.runtime_stage_id,
        }
        for name, value in self.fields().items():
            out[name] = json_view(value)
        return out


@attrs.define
class StageStarted(StreamEvent):
    """A stage body is about to run (``on_stage_start``)."""

    kind: ClassVar[str] = "stage"


@attrs.define
class CommitMade(StreamEvent):
    """A stage committed: ``commit`` is the log entry (``to_dict()`` shows it whole)."""

    kind: ClassVar[str] = "commit"

    commit: Any = None

    @property
    def ops(self) -> list[dict[str, Any]]:
        """The commit's ops as JSON (``path``, ``verb``, ``value``)."""
        return [op.to_dict() for op in self.commit.trace]


@attrs.define(eq=False, repr=False)
class NarrativeLine(StreamEvent):
    """One narrative line: ``type`` (``stage | step | condition | ...``), ``depth``, ``text``.

    A step line may come worded later: made with ``source`` (a narrative batch, whose
    ``entries()`` words the stage's steps once) and ``index`` instead of ``entry``, it words
    them the first time it is read, so a consumer that never reads the text never pays for
    it. What it says is the same either way; the narrative shares the wording.
    """

    kind: ClassVar[str] = "narrative"

    _entry: tuple[Any, ...] | None = ("", 0, "")
    _source: Any = None
    _index: int = 0

    @property
    def entry(self) -> tuple[Any, ...]:
        """The narrative's record of the line: ``(type, depth, text, stage_name, ctx, key, step)``."""
        entry = self._entry
        if entry is None:
            entry = self._entry = self._source.entries()[self._index]
            self._source = None
        return entry

    @property
    def type(self) -> str:
        """The entry type, as in ``rec.entries()``."""
        return self.entry[0]

    @property
    def depth(self) -> int:
        """0 for a stage line, 1 for the lines under it."""
        return self.entry[1]

    @property
    def text(self) -> str:
        """The sentence (footprintjs wording)."""
        return self.entry[2]

    def fields(self) -> dict[str, Any]:
        """``type``, ``depth`` and ``text``."""
        entry = self.entry
        return {"type": entry[0], "depth": entry[1], "text": entry[2]}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NarrativeLine):
            return NotImplemented
        return self.ctx == other.ctx and self.entry == other.entry

    __hash__ = None  # a value compared by content, as the other events

    def __repr__(self) -> str:
        return f"NarrativeLine(entry={self.entry!r})"


@attrs.define
class DecisionMade(StreamEvent):
    """A decider chose ``chosen`` (a selector: every selected branch id), with the rule evidence."""

    kind: ClassVar[str] = "decision"

    chosen: tuple[str, ...] = ()
    rationale: str | None = None
    evidence: dict[str, Any] | None = None


@attrs.define
class Emitted(StreamEvent):
    """``ctx.emit(name, payload)`` inside a stage."""

    kind: ClassVar[str] = "emit"

    name: str = ""
    payload: Any = None


@attrs.define
class StageFailed(StreamEvent):
    """A stage raised; the stream raises the same error after this event."""

    kind: ClassVar[str] = "error"

    message: str = ""


@attrs.define
class PauseRequested(StreamEvent):
    """A pausable stage paused the run; ``question`` is its pause data."""

    kind: ClassVar[str] = "pause"

    question: Any = None


@attrs.define
class Final(StreamEvent):
    """The run ended (or paused): ``result`` is exactly what ``run()`` returns."""

    kind: ClassVar[str] = "final"

    result: Any = None
    view: Callable[[Any], dict[str, Any]] | None = attrs.field(default=None, repr=False, eq=False)

    def fields(self) -> dict[str, Any]:
        """The result's JSON view: ``paused``, ``output`` (the pause data when paused), ``run_id``."""
        view = self.view or result_view
        return view(self.result)


def result_view(result: Any) -> dict[str, Any]:
    """A ``RunResult`` as JSON: ``paused``, ``output`` (the pause data when paused), ``run_id``."""
    return {"paused": bool(result.paused), "output": json_view(result.output), "run_id": result.run_id}


#: kinds no ``modes=`` filter removes: a stream always shows how the run ended
ALWAYS = frozenset({"final", "pause", "error"})

#: the flowchart's modes (LangGraph: ``updates`` ~ commits, ``custom`` ~ emits)
CHART_MODES: Mapping[str, tuple[str, ...]] = {
    "stages": ("stage",),
    "updates": ("commit",),
    "narrative": ("narrative",),
    "decisions": ("decision",),
    "custom": ("emit",),
}
CHART_KINDS = ("stage", "commit", "narrative", "decision", "emit", "error", "pause", "final")


def resolve_modes(
    modes: Iterable[str] | str | None,
    known_modes: Mapping[str, tuple[str, ...]] = CHART_MODES,
    known_kinds: Iterable[str] = CHART_KINDS,
) -> frozenset[str]:
    """The event kinds a ``modes=`` filter keeps (``None`` keeps every kind).

    A mode is a group name (``updates``, ``custom``, ...) or a kind name (``commit``);
    an unknown one is a ``ValueError`` listing what is known.
    """
    kinds = frozenset(known_kinds)
    if modes is None:
        return kinds
    if isinstance(modes, str):
        modes = (modes,)
    chosen: set[str] = set(ALWAYS)
    for mode in modes:
        if mode in known_modes:
            chosen.update(known_modes[mode])
        elif mode in kinds:
            chosen.add(mode)
        else:
            raise ValueError(
                f"unknown stream mode {mode!r}: expected one of {', '.join(sorted(known_modes))} "
                f"or an event kind ({', '.join(sorted(kinds))})"
            )
    return frozenset(chosen)
