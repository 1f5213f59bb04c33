"""``last_snapshot().narrative`` is worded when it is first read, not at the end of every run:
a run nobody asks to explain does not pay for its sentences, and the lines are the same."""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, define_tool
from agent.providers import scripted
from flowchart.recorders.narrative import NarrativeRecorder

REPLIES: list[Any] = [{"content": "", "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}]}, "two"]


def _agent(**create: Any) -> Agent:
    add = define_tool(name="add", description="Add.", input_schema={"type": "object"}, execute=lambda a, c: 2)
    return Agent.create(provider=scripted(list(REPLIES)), model="m", **create).tool(add).build()


def test_the_narrative_is_worded_once_on_first_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``lines()`` call during the run; the first read words it, the second reuses it."""
    calls: list[int] = []
    real = NarrativeRecorder.lines

    def counted(self: NarrativeRecorder) -> list[str]:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(NarrativeRecorder, "lines", counted)
    agent = _agent()
    assert agent.run("add") == "two"
    snapshot = agent.last_snapshot()
    assert calls == []
    first = snapshot.narrative
    assert snapshot.narrative is first and len(calls) == 1
    assert first[0] == "Stage 1: The process began with Seed."


def test_the_lazy_narrative_reads_repr_and_compares_as_the_lines_it_stands_for() -> None:
    """Two runs of the same script: equal snapshots' narratives, the same ``repr`` before and
    after the lines are read, and the lines a stream of the same turn tells, in order."""
    one, two = _agent(), _agent()
    one.run("add")
    two.run("add")
    a, b = one.last_snapshot(), two.last_snapshot()
    before = repr(a)
    assert a.narrative == b.narrative
    assert repr(a) == before and "narrative=['Stage 1: The process began with Seed.'" in before
    streamed = [e.text for e in _agent().stream("add") if e.kind == "narrative"]
    assert streamed == a.narrative


def test_without_a_narrative_the_snapshot_has_no_lines() -> None:
    """``narrative=False``: an empty list, as before."""
    agent = _agent(narrative=False)
    agent.run("add")
    assert agent.last_snapshot().narrative == []
