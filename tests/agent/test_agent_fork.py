"""``agent.fork``: rewrite a tool result recorded in a stored run and let the model answer again."""

from __future__ import annotations

import pytest
from agent_helpers import weather_tool

from agent import Agent
from agent.providers.types import LLMRequest, LLMResponse, ToolCall
from flowchart import ForkError, replay
from flowchart.store import MemoryStore


class Reader:
    """A model that asks for the weather once, then answers from the tool result it is shown."""

    name = "reader"

    def __init__(self) -> None:
        self.requests: list[LLMRequest] = []

    def complete(self, req: LLMRequest) -> LLMResponse:
        self.requests.append(req)
        tool_results = [m for m in req.messages if m.get("role") == "tool"]
        if not tool_results:
            return LLMResponse("", (ToolCall("c1", "weather", {"city": "Paris"}),), finish_reason="tool_use")
        return LLMResponse(f"The tool said: {tool_results[-1]['content']}")


def test_rewriting_a_tool_result_makes_the_model_answer_again() -> None:
    """Fork the stored run at the tool-calls commit with the tool's result rewritten in
    ``history``: the fork runs call-llm again on the edited history (nothing before it
    reruns), answers from the new result, and is stored as a fork of the run."""
    store = MemoryStore()
    model = Reader()
    agent = Agent.create(provider=model, model="m", store=store).system("You help.").tool(weather_tool()).build()
    assert agent.run("Weather in Paris?") == "The tool said: Paris: sunny"
    parent_id = store.list()[0].run_id
    log = store.get(parent_id).commit_log
    at = [c.stage_id for c in log].index("tool-calls")
    history = replay(log, upto=at)["history"]
    edited = [dict(m, content="Paris: snowing") if m.get("role") == "tool" else m for m in history]
    calls_before = len(model.requests)
    answer = agent.fork(parent_id, at=at, patch={"history": edited})
    assert answer == "The tool said: Paris: snowing"
    assert len(model.requests) == calls_before + 1  # only the model call after the tool ran again
    assert [m["content"] for m in model.requests[-1].messages if m.get("role") == "tool"] == ["Paris: snowing"]
    (child,) = store.forks(parent_id)
    assert (child.kind, child.status, child.parent_run_id, child.forked_at) == ("agent", "done", parent_id, at)
    assert child.output == "The tool said: Paris: snowing"
    assert [c.stage_id for c in child.commit_log[at + 1 :]] == ["fork", "call-llm", "route", "final"]


def test_an_agent_without_a_store_cannot_fork() -> None:
    """agent.fork names a stored run, so the agent needs its store."""
    agent = Agent.create(provider=Reader(), model="m").tool(weather_tool()).build()
    with pytest.raises(RuntimeError, match="this agent has no run store"):
        agent.fork("r1", at=0)


def test_an_index_past_the_stored_log_is_refused() -> None:
    """``at`` must index the stored run's log."""
    store = MemoryStore()
    agent = Agent.create(provider=Reader(), model="m", store=store).tool(weather_tool()).build()
    agent.run("Weather?")
    run_id = store.list()[0].run_id
    with pytest.raises(ForkError, match="is out of range"):
        agent.fork(run_id, at=99)
