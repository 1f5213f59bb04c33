"""What a stream does not pay for: work nobody asked for is left undone, never left out.

The law under test: a stream's events say exactly what they said when every payload was
built up front (same kinds, order and ``to_dict()``), but a step line is worded only when
its text is read, and the narrative the run keeps is the same either way.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowchart import FlowChart, flow_chart, narrative
from flowchart.recorders import sentences
from flowchart.stream_events import NarrativeLine


def _seed(scope: Any) -> None:
    scope.items = ["a"]
    scope.count = 0


def _work(scope: Any, ctx: Any) -> None:
    scope.items = [*scope.items, "b"]
    scope.count = scope.count + 1
    _ = scope.get("absent")  # a missing read: ``undefined``
    ctx.emit("tick", {"n": scope.count})


def chart() -> FlowChart:
    """seed → work (reads, writes, a missing read, an emit) → done."""
    return (
        flow_chart("Seed", _seed, "seed")
        .add_function("Work", _work, "work")
        .add_function("Done", lambda scope: None, "done")
        .build()
    )


@pytest.fixture
def worded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every step sentence the narrative words, noted as it is worded (the real wording runs)."""
    seen: list[str] = []
    real = sentences.operation

    def operation(*args: Any, **kwargs: Any) -> str:
        text = real(*args, **kwargs)
        seen.append(text)
        return text

    monkeypatch.setattr(sentences, "operation", operation)
    return seen


def test_a_streams_step_lines_are_worded_when_read_and_say_what_the_run_says(worded: list[str]) -> None:
    """Consuming the events words no step; reading their text words them, as the run's narrative does."""
    rec = narrative()
    chart().run(recorders=[rec])
    expected = rec.lines()
    worded.clear()
    events = list(chart().stream())
    assert worded == []  # nobody read a step's text yet
    lines = [e.text for e in events if isinstance(e, NarrativeLine)]
    assert lines == expected
    assert len(worded) == sum(1 for line in expected if line.startswith("Step "))


def test_a_deferred_line_is_the_same_value_as_a_worded_one() -> None:
    """Equality, repr and ``to_dict()`` of a line worded late match one built from its entry."""
    events = [e for e in chart().stream(modes=["narrative"]) if isinstance(e, NarrativeLine)]
    steps = [e for e in events if e.depth == 1]
    assert steps, "the chart has step lines"
    for event in events:
        plain = NarrativeLine(event.ctx, event.entry)
        assert event == plain and plain == event
        assert repr(event) == repr(plain)
        assert json.dumps(event.to_dict()) == json.dumps(plain.to_dict())
    assert steps[0].to_dict()["text"] == "Step 1: Write items = (1 item)"


def test_a_followed_narrative_read_mid_run_goes_on_streaming_and_tells_each_line_once() -> None:
    """Reading ``lines()`` mid-run (a reader of the live narrative) neither stops the live
    reader nor tells a stage twice: the lines streamed are the run's lines, once each."""
    rec = narrative()
    streamed: list[Any] = []
    rec.follow(lambda entry: streamed.append(entry[2]), lambda batch, count: streamed.append((batch, count)))

    class MidRunReader:
        def __init__(self) -> None:
            self.seen: list[int] = []

        def on_commit(self, _event: Any) -> None:
            self.seen.append(len(rec.lines()))

    reader = MidRunReader()
    chart().run(recorders=[rec, reader])
    told: list[str] = []
    for item in streamed:
        if isinstance(item, tuple):
            batch, count = item
            told.extend(entry[2] for entry in batch.entries()[:count])
            assert len(batch.entries()) == count
        else:
            told.append(item)
    assert told == rec.lines()
    assert reader.seen == sorted(reader.seen) and reader.seen[-1] > 0


def test_a_noted_write_is_told_at_once_so_its_note_decides_the_count() -> None:
    """A stage writing a noted key is worded when it commits (its teller decides whether a
    note line follows); its lines reach the live reader one by one, note included."""
    rec = narrative(notes={"count": lambda value: f"count is now {value}" if value else None})
    entries: list[str] = []
    deferred: list[str] = []  # the kinds of what came worded on first read

    def later(batch: Any, count: int) -> None:
        told = batch.entries()[:count]
        deferred.extend(entry[0] for entry in told)
        entries.extend(entry[2] for entry in told)

    rec.follow(lambda entry: entries.append(entry[2]), later)
    chart().run(recorders=[rec])
    assert "count is now 1" in entries
    # both stages writing count were told line by line: only their headlines wait for a reader
    assert "step" not in deferred and "note" not in deferred and "stage" in deferred
    plain = narrative(notes={"count": lambda value: f"count is now {value}" if value else None})
    chart().run(recorders=[plain])
    assert entries == plain.lines()


def test_a_tap_binds_each_streams_own_narrative_from_a_reused_plan() -> None:
    """Taps of the same kind reuse one binding plan (worked out once per narrative class and
    options), yet each binds its own narrative's hooks: two streams run one after the other
    tell each its own narrative, and their lines are the same as a plain run's."""
    from flowchart._stream.stream_tap import _PLANS, StreamTap

    first_n, second_n = narrative(), narrative()
    first = StreamTap(lambda e: None, frozenset({"narrative", "final"}), narrative=first_n)
    planned = len(_PLANS)
    second = StreamTap(lambda e: None, frozenset({"narrative", "final"}), narrative=second_n)
    assert len(_PLANS) == planned  # the second tap found the first one's plan
    assert first.take_stage_ops.__self__ is first_n  # type: ignore[attr-defined]
    assert second.take_stage_ops.__self__ is second_n  # type: ignore[attr-defined]
    lines = [[e.text for e in chart().stream(modes=["narrative"]) if isinstance(e, NarrativeLine)] for _ in range(2)]
    plain = narrative()
    chart().run(recorders=[plain])
    assert lines[0] == lines[1] == plain.lines()


def test_a_narrative_with_instance_hooks_is_planned_for_itself() -> None:
    """A narrative whose class is not slotted may carry hooks of its own; its tap works out its
    binding afresh rather than reuse a plan made for another instance."""
    from flowchart._stream.stream_tap import StreamTap

    class Loose:
        def lines(self) -> list[str]:
            return []

        entries = records = lines

    heard: list[str] = []
    loose = Loose()
    StreamTap(lambda e: None, frozenset({"final"}), narrative=loose)  # type: ignore[arg-type]
    loose.on_break = lambda event: heard.append("break")  # type: ignore[attr-defined]
    tap = StreamTap(lambda e: None, frozenset({"final"}), narrative=loose)  # type: ignore[arg-type]
    tap.on_break(None)  # type: ignore[attr-defined]
    assert heard == ["break"]
