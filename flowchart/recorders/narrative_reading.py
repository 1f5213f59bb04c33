"""Reading the narrative back, and carrying its counts across a pause.

The law (the narrative's, :mod:`flowchart.recorders.narrative`): every reader — ``entries``,
``records``, ``lines``, ``entries_for_step``, ``step_count``, a live reader that ``follow``s,
``save_state`` — sees the same entries in run order: whatever was kept untold (the hook calls
kept as they came, stage batches and lines worded when first read) is told first, once, and
then shared. Across a pause, ``save_state`` / ``load_state`` carry the ``Stage N`` counts, the
flows begun and the visits per stage (checked as untrusted input when loaded).

This is the part of :class:`~flowchart.recorders.narrative.NarrativeRecorder` that answers
readers (a base class without state of its own: the recorder's fields are declared in
``narrative_state``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowchart._core.narrative_entry import NarrativeEntry
from flowchart.recorders.narrative_lines import Entry as _Entry
from flowchart.recorders.narrative_lines import Followed
from flowchart.recorders.narrative_state import NarrativeState


class NarrativeReading(NarrativeState):
    """The narrative recorder's readers and its state across a pause."""

    if not TYPE_CHECKING:  # the state is the recorder's (``narrative_state``)
        __slots__ = ()

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
