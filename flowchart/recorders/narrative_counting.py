"""A live reader that is told how many lines come, not the lines: the narrative still keeps its calls.

The law (the narrative's, :mod:`flowchart.recorders.narrative`): a reader that
``follow_counted``s a narrative is handed, at the moment each hook call comes, how many
entries that call makes and where they start in the narrative's entry list (``announce(ctx,
start, count)``) — exactly the entries the narrative has when it is read, in the same order,
each announced once. The narrative meanwhile keeps its calls untold, as when nobody follows
(one append each), and tells them the first time anybody reads it; the count it announced is
checked then, and a narrative whose told entries differ from what it announced raises
(``NarrativeCountError``) instead of letting a reader see a line in the wrong place.

Why: a stream hands its consumer one event per narrative line in run order. Telling each line
as it comes (numbering it, making its lazy sentence) cost a streamed W6 run more than the rest
of its narrative kind; counting costs one dictionary update per stage. A call whose count is
known only by telling it (a noted key was written, operations came one by one) is told at
once — after everything kept before it, which is checked first — and its entries announced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowchart.events import TraversalContext
from flowchart.recorders.narrative_state import NarrativeState

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


class LineCounting(NarrativeState):
    """The narrative recorder's counted readers (a base class without state of its own)."""

    if not TYPE_CHECKING:  # the state is the recorder's (``narrative_state``)
        __slots__ = ()

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
        self._announce(ctx, start, count)  # type: ignore[misc]

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
            self._announce(ctx, start, self._announced - start)  # type: ignore[misc]

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
