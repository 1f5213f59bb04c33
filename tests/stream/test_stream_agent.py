"""``agent.stream()`` / ``agent.astream()``: one turn's events, typed, in the order they happen,
ending with what ``agent.run`` returns."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, Paused, define_tool
from agent._run.streaming import EMIT_KINDS
from agent.providers import scripted
from agent.providers.types import LLMRequest, LLMResponse, Usage
from flowchart.store import SqliteStore
from governance import deny

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
REPLIES: list[Any] = [
    {"content": "", "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}]},
    "It is sunny in Paris.",
]


def weather(**extra: Any) -> Any:
    return define_tool(
        name="weather",
        description="Weather for a city.",
        input_schema=SCHEMA,
        execute=lambda args, ctx: f"{args['city']}: sunny",
        **extra,
    )


def make_agent(replies: list[Any] | None = None, **create: Any) -> Agent:
    provider = scripted(list(REPLIES if replies is None else replies))
    return Agent.create(provider=provider, model="m", **create).tool(weather()).build()


def test_an_agent_stream_yields_model_calls_tool_calls_and_results_in_order() -> None:
    """The typed agent events come in the order they happened: a model call asking for the tool,
    the tool call, its result, the answering model call, then final."""
    events = list(make_agent().stream("Weather in Paris?", modes=["messages", "tools"]))
    assert [e.kind for e in events] == ["model_call", "tool_call", "tool_result", "model_call", "final"]
    first, call, result, second, final = events
    assert (first.tool_calls, first.finish_reason) == (1, "tool_use")
    assert (call.tool_name, call.tool_call_id, call.args) == ("weather", "c1", {"city": "Paris"})
    assert (result.result, result.error) == ("Paris: sunny", False)
    assert second.content == "It is sunny in Paris."
    assert second.usage == {"input_tokens": second.usage["input_tokens"], "output_tokens": 5}
    assert final.result == "It is sunny in Paris."


def test_the_final_result_is_what_run_returns_and_the_record_is_the_same() -> None:
    """The final event carries the answer ``run`` gives on an identical agent, and the stream's
    run leaves the same commit log and narrative in ``last_snapshot()``."""
    streamed, plain = make_agent(), make_agent()
    final = list(streamed.stream("Weather in Paris?"))[-1]
    assert final.result == plain.run("Weather in Paris?")
    a, b = streamed.last_snapshot(), plain.last_snapshot()
    assert [c.to_dict() for c in a.commit_log] == [c.to_dict() for c in b.commit_log]
    assert a.narrative == b.narrative


def test_the_streamed_narrative_is_the_agents_own() -> None:
    """The narrative lines streamed are exactly ``last_snapshot().narrative``, in order."""
    agent = make_agent()
    lines = [e.text for e in agent.stream("Weather in Paris?") if e.kind == "narrative"]
    assert lines == agent.last_snapshot().narrative
    assert lines[0] == "Stage 1: The process began with Seed."


def test_typed_events_follow_the_agent_events_one_for_one() -> None:
    """Each typed event stands for the agent event (``agent.on``) emitted at that moment, in order."""
    agent = make_agent()
    heard: list[str] = []
    agent.on("*", lambda name, payload: heard.append(name))
    typed = [e.kind for e in agent.stream("Weather in Paris?", modes=["messages", "tools"]) if e.kind != "final"]
    assert typed == [EMIT_KINDS[name] for name in heard if name in EMIT_KINDS]


def test_model_tokens_stream_before_their_model_call_event() -> None:
    """With ``stream=True`` the provider's tokens stream one by one, join to the reply, and
    come before that call's ``model_call`` event."""
    agent = make_agent(["Sunny all day in Paris."], stream=True)
    events = [e for e in agent.stream("Weather?", modes="messages") if e.kind != "final"]
    assert [e.kind for e in events] == ["token"] * 5 + ["model_call"]
    assert "".join(e.text for e in events[:-1]) == "Sunny all day in Paris."
    assert [e.index for e in events[:-1]] == [0, 1, 2, 3, 4]


def test_every_agent_event_is_json() -> None:
    """Every event of an agent stream serialises with ``json.dumps(event.to_dict())``."""
    dicts = [e.to_dict() for e in make_agent().stream("Weather in Paris?")]
    assert json.loads(json.dumps(dicts)) == dicts
    assert dicts[-1]["output"] == "It is sunny in Paris." and dicts[-1]["paused"] is False


def test_a_check_in_pause_streams_the_question_and_a_paused_final() -> None:
    """A tool's check-in pauses the turn: a ``pause`` event with the check-in request, then
    final whose result is the ``Paused`` that ``run`` would return."""
    provider = scripted(REPLIES)
    agent = Agent.create(provider=provider, model="m").tool(weather(check_in="always")).build()
    events = list(agent.stream("Weather in Paris?", modes="tools"))
    assert [e.kind for e in events] == ["tool_call", "pause", "final"]
    assert events[1].question["check_in"]["tool"] == "weather"
    paused = events[-1].result
    assert isinstance(paused, Paused) and paused.check_in is not None
    view = events[-1].to_dict()
    assert view["paused"] is True and view["question"]["kind"] == "check_in"


def test_a_refused_message_is_raised_after_the_events() -> None:
    """An input middleware denial: the stream yields the run's events, then raises the same
    ``MessageDeniedError`` that ``run`` raises."""
    from governance import MessageDeniedError

    guard = type("Guard", (), {"name": "guard", "on_message": lambda self, msg: deny("no weather talk")})()
    agent = Agent.create(provider=scripted([]), model="m").message_middleware(guard).build()
    kinds: list[str] = []
    with pytest.raises(MessageDeniedError, match=r"^Message denied at 'input' by 'guard': no weather talk$"):
        for event in agent.stream("Weather?", modes="updates"):
            kinds.append(event.kind)
    assert kinds and set(kinds) == {"commit"}


def test_a_blank_message_is_refused_when_the_stream_is_made() -> None:
    """``agent.stream("  ")`` is a ValueError at once, as ``run`` refuses it."""
    with pytest.raises(ValueError, match=r"^agent.run\(message\): the message must be a non-empty string$"):
        make_agent().stream("  ")


def test_astream_yields_the_same_events_as_stream() -> None:
    """``async for`` over ``agent.astream`` gives the same event dicts as ``agent.stream``."""

    async def collect() -> list[dict[str, Any]]:
        return [e.to_dict() async for e in make_agent().astream("Weather in Paris?")]

    assert asyncio.run(collect()) == [e.to_dict() for e in make_agent().stream("Weather in Paris?")]


class SlowSecondCall:
    """An async model: asks for the weather tool, then never answers the second call."""

    name = "slow"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        if self.calls == 1:
            from agent.providers.types import ToolCall

            return LLMResponse("", (ToolCall("c1", "weather", {"city": "Paris"}),), Usage(1, 1), "tool_use")
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_breaking_out_of_an_agent_stream_cancels_the_stored_run(tmp_path: Path) -> None:
    """Break on the tool result while the next model call is in flight: the run is cancelled,
    the stored run is failed with the consumer's cancellation and keeps the turn's commits."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = Agent.create(provider=SlowSecondCall(), model="m", store=store).tool(weather()).build()
    for event in agent.stream("Weather in Paris?", modes="tools"):
        if event.kind == "tool_result":
            break
    (record,) = store.list()
    assert record.status == "failed"
    assert record.error is not None and record.error.startswith(
        "RunCancelledError: the run was cancelled by the stream's consumer during stage 'call-llm#"
    )
    assert [c.stage_id for c in record.commit_log] == ["seed", "call-llm", "route", "tool-calls", "call-llm"]
    assert record.narrative[0] == "Stage 1: The process began with Seed."  # the narrative so far is kept
    first = record.narrative_records[0]  # kept as records: the viewer places them by stage
    assert (first.type, first.runtime_stage_id) == ("stage", "seed#0")


def test_a_stored_agent_stream_read_to_the_end_is_done(tmp_path: Path) -> None:
    """A stream with a store: the final event's answer is the stored run's output."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = make_agent(store=store)
    final = list(agent.stream("Weather in Paris?", modes=[]))[-1]
    (record,) = store.list()
    assert (record.status, record.output) == ("done", final.result)


def test_the_sync_agent_stream_works_inside_a_running_event_loop() -> None:
    """``agent.stream`` called from a coroutine (a notebook cell, a handler) on an agent that
    needs a loop (a streaming provider) runs its turn in a helper thread and streams it whole."""
    agent = make_agent(stream=True)

    async def inside() -> list[Any]:
        return list(agent.stream("Weather in Paris?", modes=["messages", "tools"]))

    events = asyncio.run(inside())
    assert [e.kind for e in events][:3] == ["model_call", "tool_call", "tool_result"]
    assert events[-1].result == "".join(e.text for e in events if e.kind == "token") == "It is sunny in Paris."
