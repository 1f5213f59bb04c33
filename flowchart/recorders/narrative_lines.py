"""The narrative's entry list, worded when read: the lazy pieces of ``narrative.py``.

Law: what the narrative keeps during a run is the values its sentences need, fixed when the
event happens (a summary, a list's length — one shared ``Told`` per length —, a committed
value that nobody mutates), and either the numbering (a live reader follows) or the calls in
the order they came, numbered when told; the wording waits until somebody reads the
narrative (``lines()``, ``entries()``, a stream event's ``text``), and is then kept, so every
reader sees the same words. ``_Followed`` hands each entry to a live reader (a stream) as it
is appended.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flowchart._core.summary import list_summary
from flowchart.events import TraversalContext

if TYPE_CHECKING:
    from flowchart.recorders.narrative import NarrativeRecorder

#: one entry as stored: ``(type, depth, text, stage_name, ctx, key, step_number)``
Entry = tuple[str, int, str, str | None, TraversalContext, str | None, int | None]


class Told:
    """A value the narrative summarised when the stage made it (see ``snapshot_view``): its
    summary, or for a list only its length (the summary is worded from it when read)."""

    __slots__ = ("count", "summary")

    def __init__(self, summary: str | None, count: int = 0) -> None:
        self.summary = summary
        self.count = count

    @property
    def text(self) -> str:
        if self.summary is None:
            self.summary = list_summary(self.count)
        return self.summary


#: one ``Told`` per list length, shared: a length's summary is the same words wherever it is told
_LENGTHS: dict[int, Told] = {}


def told_length(count: int) -> Told:
    """The ``Told`` of a list of ``count`` items (shared: no object per read of a list)."""
    told = _LENGTHS.get(count)
    if told is None:
        told = Told(None, count)
        if count < 4096:  # the lengths a run meets again; a longer list is told once or rarely
            _LENGTHS[count] = told
    return told


def summary_of(fmt: Callable[[Any, int], str], value: Any, max_len: int) -> str:
    return value.text if type(value) is Told else fmt(value, max_len)


class Batch:
    """A stage's operations in the entry list, told in sentences when first read (``entries``)."""

    __slots__ = ("_told", "ctx", "ops", "owner", "stage_name")

    def __init__(self, ctx: TraversalContext, stage_name: str, ops: list[Any], owner: NarrativeRecorder) -> None:
        self.ctx = ctx
        self.stage_name = stage_name
        self.ops = ops
        self.owner = owner
        self._told: list[Entry] | None = None

    def entries(self) -> list[Entry]:
        """The batch's entries, worded on the first call (the values are the batch's own:
        summaries made at the operation, or committed values, which nobody mutates)."""
        told = self._told
        if told is None:
            told = self._told = []
            self.owner._tell_batch(self.ctx, self.stage_name, self.ops, told.append)
        return told


class Line:
    """One entry in the entry list, worded when first read (see ``_push_line``)."""

    __slots__ = ("_told", "args", "ctx", "depth", "kind", "stage_name", "word")

    def __init__(
        self,
        kind: str,
        depth: int,
        ctx: TraversalContext,
        stage_name: str | None,
        word: Callable[..., str],
        args: tuple[Any, ...],
    ) -> None:
        self.kind = kind
        self.depth = depth
        self.ctx = ctx
        self.stage_name = stage_name
        self.word = word
        self.args = args
        self._told: list[Entry] | None = None

    def entries(self) -> list[Entry]:
        """The one entry, worded on the first call (then kept)."""
        told = self._told
        if told is None:
            text = self.word(*self.args)
            told = self._told = [(self.kind, self.depth, text, self.stage_name, self.ctx, None, None)]
            self.args = ()
        return told


class Followed(list):
    """The narrative's entry list, telling a live reader of each entry as it is appended."""

    def __init__(
        self,
        entries: list[Any],
        on_entry: Callable[[tuple[Any, ...]], Any],
        on_batch: Callable[[Any, int], Any] | None = None,
    ) -> None:
        super().__init__(entries)
        self.on_entry = on_entry
        self.on_batch = on_batch

    def append(self, entry: Any) -> None:
        list.append(self, entry)  # not super(): this runs for every line a stream tells
        self.on_entry(entry)
