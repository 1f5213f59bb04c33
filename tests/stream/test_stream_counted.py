"""A stream counts its narrative's lines as they come; the narrative tells them when read.

The law under test (``flowchart.recorders.narrative``, its counted reader): a stream of a default
narrative yields exactly the events — kinds, stages, order, texts — of a stream that has the
narrative tell each line as it comes, while the narrative itself keeps its calls untold (no
numbering, no line objects) until somebody reads a line; a narrative that cannot keep its
calls (a renderer) is followed line by line as before; a miscount is loud.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from call_counts import calls_into, module_files
from test_stream_chart import loop_chart

from flowchart import narrative
from flowchart._stream.stream_tap import StreamTap
from flowchart.recorders.narrative import NarrativeCountError, NarrativeRecorder


def _shape(events: list[Any]) -> list[tuple[str, str, str]]:
    """Each event as (kind, runtime stage id, text of a narrative line)."""
    return [(e.kind, e.runtime_stage_id, e.text if e.kind == "narrative" else "") for e in events]


def _lines_of(chart: Any) -> list[str]:
    rec = narrative()
    chart.run(recorders=[rec])
    return rec.lines()


def test_the_loop_charts_stream_is_the_same_counted_or_told_live(monkeypatch: pytest.MonkeyPatch) -> None:
    """A decider, a loop and emits: the counted stream against the stream told live."""
    counted = _shape(list(loop_chart().stream()))
    monkeypatch.setattr(StreamTap, "_follow", lambda tap, rec: rec.follow(tap._line, tap._lines))
    assert _shape(list(loop_chart().stream())) == counted
    assert ("decision", "check#2", "") in counted


_NARRATIVE_FILES = module_files(("flowchart.recorders.narrative_lines", "flowchart.recorders.sentences"))


def _calls_into_wording(run: Any) -> Counter[str]:
    """The Python calls ``run()`` makes into the narrative's line objects and sentences."""
    return calls_into(_NARRATIVE_FILES, run)


def test_consuming_a_counted_stream_makes_no_line_objects_and_reading_a_line_tells_them_all() -> None:
    """While the events are made and consumed, the narrative makes no line or batch objects and
    words nothing (it keeps its calls); reading one line's text tells the narrative, once."""
    events: list[Any] = []
    calls = _calls_into_wording(lambda: events.extend(loop_chart().stream()))
    assert calls == Counter(), calls
    lines = [e for e in events if e.kind == "narrative"]
    told = _calls_into_wording(lambda: lines[3].text)
    assert told["stage"] >= 1  # the stage sentences were worded then
    assert _calls_into_wording(lambda: [line.text for line in lines]) == Counter()  # and kept
    assert [line.text for line in lines] == _lines_of(loop_chart())


def test_a_narrative_with_a_renderer_is_followed_line_by_line() -> None:
    """A narrative that tells each line as it comes cannot be counted (``ValueError`` naming
    ``follow``); a stream of such a narrative still yields its lines, told live."""

    class Shout:
        def render_stage(self, ctx: Any) -> str:
            return ctx.stage_name.upper()

    rec = narrative(renderer=Shout())
    with pytest.raises(
        ValueError, match=r"follow_counted: this narrative tells each line as it comes \(use follow\(\)\)"
    ):
        rec.follow_counted(lambda ctx, start, count: None)
    events: list[Any] = []
    tap = StreamTap(events.append, frozenset({"narrative"}), narrative=narrative(renderer=Shout()))
    loop_chart().run(recorders=[tap])
    assert events[0].text == "SEED"


def test_a_miscounted_narrative_raises_when_read_instead_of_misplacing_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """If a stage's steps were miscounted (a bug made here on purpose), reading a line raises
    ``NarrativeCountError`` naming both numbers, rather than showing a line in the wrong place."""
    monkeypatch.setattr(NarrativeRecorder, "_countable", lambda self, batch: len(batch) + 1)
    events = list(loop_chart().stream())
    line = next(e for e in events if e.kind == "narrative")
    with pytest.raises(
        NarrativeCountError, match=r"the narrative told \d+ entries but announced \d+ to its counted reader"
    ):
        _ = line.text
