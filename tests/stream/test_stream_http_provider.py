"""An agent stream over a real HTTP model (openai_compatible on a 127.0.0.1 server): the
server's tokens stream as typed events, and leaving early hangs up on the model call in flight."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from providers.wire import Reply, WireServer, sse

from agent import Agent, tool
from agent.providers import openai_compatible
from flowchart.store import SqliteStore


@pytest.fixture
def server() -> Iterator[WireServer]:
    """A fresh OpenAI-compatible wire server on 127.0.0.1."""
    wire = WireServer()
    yield wire
    wire.close()


def delta(d: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"model": "m", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}


@tool
def weather(city: str) -> str:
    """Weather for a city.

    Args:
        city: The city.
    """
    return f"{city}: sunny"


TOOL_CALL = sse(
    delta({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}]}),
    delta({}, "tool_calls"),
    "[DONE]",
)


def agent_on(server: WireServer, **create: Any) -> Agent:
    provider = openai_compatible(f"{server.url}/v1", api_key="k")
    return Agent.create(provider=provider, model="m", stream=True, **create).tool(weather).build()


def test_the_servers_tokens_stream_as_token_events(server: WireServer) -> None:
    """Each SSE chunk of the model's answer becomes a ``token`` event, in order, before the
    call's ``model_call`` event; the final result is the assembled answer."""
    server.push(
        Reply(sse=TOOL_CALL),
        Reply(sse=sse(delta({"content": "Sunny "}), delta({"content": "in Oslo."}), delta({}, "stop"), "[DONE]")),
    )
    events = list(agent_on(server).stream("Weather in Oslo?", modes=["messages", "tools"]))
    assert [e.kind for e in events] == [
        "model_call",
        "tool_call",
        "tool_result",
        "token",
        "token",
        "model_call",
        "final",
    ]
    assert [e.text for e in events if e.kind == "token"] == ["Sunny ", "in Oslo."]
    assert events[-1].result == "Sunny in Oslo."


def test_leaving_the_stream_hangs_up_on_the_model_call_in_flight(server: WireServer, tmp_path: Path) -> None:
    """``astream``: break while the second model call waits for the server: the HTTP request
    is abandoned (the server sees the client hang up) and the stored run is marked cancelled."""
    server.push(Reply(sse=TOOL_CALL), Reply(sse=sse(delta({}, "stop"), "[DONE]"), delay=5.0))
    store = SqliteStore(tmp_path / "runs.db")

    async def consume() -> None:
        async with agent_on(server, store=store).astream("Weather in Oslo?", modes="tools") as events:
            async for event in events:
                if event.kind == "tool_result":
                    while len(server.seen) < 2:  # the run goes on meanwhile: the second call reaches the server
                        await asyncio.sleep(0.01)
                    break

    asyncio.run(consume())
    assert server.wait_for_hangup(timeout=4.0)
    (record,) = store.list()
    assert record.status == "failed"
    assert record.error is not None and "cancelled by the stream's consumer during stage 'call-llm#" in record.error
