"""The narrative recorder's state, declared once for the classes it is built from.

``NarrativeRecorder`` (:mod:`flowchart.recorders.narrative`) keeps its state in its own attrs
slots; the parts it is composed of — writing entries (``narrative_steps``), answering readers
(``narrative_reading``), counting for a counted reader (``narrative_counting``) — read and
write that state and call one another. This base declares the fields and those calls for the
type checker only: at run time it adds no slot and no method, so nothing here can stand in
front of the recorder's own definitions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from flowchart.events import TraversalContext
from flowchart.recorders.narrative_lines import Entry

#: a buffered scope operation waiting for its stage's headline:
#: ``(kind, key, summary, step, operation, raw)``, kind one of read | write | emit; ``raw``
#: is the value itself, kept only when a renderer's ``render_op`` will ask for it
Op = tuple[str, str, str, int, str, Any]


class NarrativeState:
    """The recorder's fields and its parts' calls on one another (declarations only)."""

    if not TYPE_CHECKING:  # the state is the recorder's (its slots)
        __slots__ = ()

    include_step_numbers: bool
    include_values: bool
    max_value_length: int
    format_value: Callable[[Any, int], str]
    notes: Mapping[str, Callable[[Any], str | None]]
    _records: list[Entry]
    _pending: dict[str, list[Op]]
    _batches: dict[str, list[Any]]
    _lazy: bool
    _stage_counters: dict[str, int]
    _started: set[str]
    _visits: dict[str, int]
    _render_op: Any
    _render_stage: Any
    _log: list[tuple[Any, ...]] | None
    _wording: bool
    _tells_emits: bool
    #: the counted reader (``None``: nobody counts; ``narrative_counting``)
    _announce: Callable[[TraversalContext, int, int], None] | None
    #: a stage's kept batches, by runtime id: how many step entries they make (``None``: unknown)
    _counts: dict[str, int | None]
    #: how many entries have been announced (``None`` while a call's count is found by telling it)
    _announced: int | None

    if TYPE_CHECKING:

        def _settle(self) -> None: ...  # the recorder's: tell the kept hook calls

        def _told(self) -> list[Entry]: ...  # narrative_reading

        def _countable(self, batch: list[Any]) -> int | None: ...  # narrative_steps

        def _announce_lines(self, ctx: TraversalContext, count: int) -> None: ...  # narrative_counting
