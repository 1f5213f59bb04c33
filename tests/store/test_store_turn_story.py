"""A conversation turn tells its own story: the page of turn 2 is titled with turn 2's message,
and counts the model calls and tools turn 2 made — the earlier turns' messages it loaded are
shown as history, never as this run's calls and tools."""

from __future__ import annotations

from pathlib import Path

from chat_agent import chat_agent

from agent._edge.viewer_panel import build, run_title
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace


def test_turn_two_is_titled_and_counted_as_itself(tmp_path: Path) -> None:
    """Turn 1 called the weather tool (2 model calls, 1 tool); turn 2 made 1 call and no tool:
    its page says so (it said 3 calls / 1 tool under turn 1's question)."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = chat_agent(store)
    agent.run("weather in Oslo", conversation="c")
    agent.run("thanks, and tomorrow?", conversation="c")
    second = store.list(conversation="c")[0]
    assert second.turn == 2
    data = build(record_trace(second))
    assert data is not None
    assert data["question"] == "thanks, and tomorrow?"
    assert run_title(data) == "Agent run: thanks, and tomorrow?"
    (call,) = data["calls"]  # the answer of turn 2 (turn 1's two calls are history, not this run's)
    assert call["message"] is None and call["answer"].startswith("reply 2")
    history = data["history"]
    assert data["loaded"] == [0, 1, 2, 3]  # user, assistant asking weather, tool result, answer of turn 1
    this_run_tools = [i for i, m in enumerate(history) if m["role"] == "tool" and i not in data["loaded"]]
    assert this_run_tools == []


def test_a_run_outside_a_conversation_is_unchanged(tmp_path: Path) -> None:
    """A single run keeps its question, its calls and no ``loaded`` messages."""
    store = SqliteStore(tmp_path / "runs.db")
    chat_agent(store).run("weather in Oslo")
    (record,) = store.list()
    data = build(record_trace(record))
    assert data is not None and data["question"] == "weather in Oslo" and "loaded" not in data
    assert len(data["calls"]) == 2 and all(call["earlier"] == 0 for call in data["calls"] if "earlier" in call)
