"""A narrative's counted twin (``follow_counted``, the way a stream reads it) and the check
that what it announced is exactly what it tells: every entry once, in order, with its stage."""

from __future__ import annotations

from typing import Any

import attrs

from flowchart.recorders.narrative import NarrativeRecorder


class CountedTwin:
    """A twin of ``rec`` (same options) that announces each hook call's entries to ``spans``."""

    def __init__(self, rec: NarrativeRecorder) -> None:
        self.rec = attrs.evolve(rec)
        #: ``(runtime stage id, start, count)`` per announcement, in the order they came
        self.spans: list[tuple[str, int, int]] = []
        self.view = self.rec.follow_counted(self._announce)

    def _announce(self, ctx: Any, start: int, count: int) -> None:
        self.spans.append((ctx.runtime_stage_id, start, count))

    def check(self, expected: NarrativeRecorder) -> None:
        """The twin told ``expected``'s records, and its announcements tile them: in order, each
        entry once, every entry of a span from the stage the span was announced for."""
        assert self.rec.records() == expected.records(), "counted, the narrative differs"
        told = self.view.entries()
        position = 0
        for rid, start, count in self.spans:
            assert (start, count > 0) == (position, True), f"span {start}+{count} after {position}"
            assert {entry[4].runtime_stage_id for entry in told[start : start + count]} == {rid}
            position = start + count
        assert position == len(told), "every entry was announced"
