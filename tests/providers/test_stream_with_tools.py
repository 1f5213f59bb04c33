"""Streaming with tools on a server that cannot stream them (llama.cpp's, given ``tool_choice="auto"``).

Law of this file: a stream that ends before its first event is an ``EmptyStreamError`` that
says what happened and does not advise retrying (retrying gets the same); a streaming agent
answers such a stream, for a request that offers tools, with one non-streamed call — as it
does at once when the provider declares ``stream_tools=False`` — and records why in
``llm_not_streamed``; the call's text still reaches ``llm.token`` listeners. The empty stream
below is what llama.cpp's server sends: a 200 and no event. Real HTTP on the local wire server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent import Agent, define_tool
from agent.providers import EmptyStreamError, LLMRequest, anthropic, ollama, openai_compatible

from .wire import Reply, WireServer, sse

EMPTY = Reply(body=b"")
WEATHER = {"name": "weather", "description": "d", "input_schema": {"type": "object"}}


def tool_call_json() -> Reply:
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": json.dumps({"city": "Oslo"})}}
    message = {"content": "", "tool_calls": [call]}
    return Reply(json={"model": "m", "choices": [{"message": message, "finish_reason": "tool_calls"}]})


def answer_json(text: str) -> Reply:
    return Reply(json={"model": "m", "choices": [{"message": {"content": text}, "finish_reason": "stop"}]})


def weather_agent(provider: Any, max_iterations: int = 10) -> tuple[Agent, list[dict[str, Any]]]:
    tokens: list[dict[str, Any]] = []
    weather = define_tool(
        name="weather",
        description="Weather for a city.",
        input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
        execute=lambda args, ctx: f"{args['city']}: 3C",
    )
    agent = Agent.create(provider=provider, model="m", stream=True).tool(weather).max_iterations(max_iterations).build()
    agent.on("llm.token", lambda _name, token: tokens.append(dict(token)))
    return agent, tokens


def test_an_empty_stream_with_tools_is_an_error_that_says_what_happened(server: WireServer) -> None:
    """200 and no event, tools offered: EmptyStreamError naming the cause and the ways out; one
    request (not retried), and the message does not say "try again"."""
    server.push(EMPTY)
    provider = openai_compatible(f"{server.url}/v1", model="m")
    req = LLMRequest(None, [{"role": "user", "content": "Oslo?"}], [WEATHER], "m")

    async def consume() -> None:
        async for _event in provider.stream(req):
            pass

    with pytest.raises(
        EmptyStreamError,
        match=r"^openai_compatible: the server at http://127\.0\.0\.1:\d+/v1/chat/completions answered 200 with "
        r"an empty event stream — it cannot stream this request \(llama\.cpp's server streams nothing when tools "
        r"are offered with tool_choice=\"auto\"; name the tool in tool_choice=, or declare "
        r"capabilities=\{'stream_tools': False\} so tool-bearing calls are not streamed\); not retried: the same "
        r"request gets the same answer$",
    ) as info:
        asyncio.run(consume())
    assert "try again" not in str(info.value) and len(server.seen) == 1 and info.value.retries == ()


def test_an_empty_stream_without_tools_says_to_call_without_streaming(server: WireServer) -> None:
    """No tools offered: the same error, pointing at the one way out left."""
    server.push(EMPTY)
    provider = openai_compatible(f"{server.url}/v1", model="m")
    req = LLMRequest(None, [{"role": "user", "content": "Hi"}], [], "m")

    async def consume() -> None:
        async for _event in provider.stream(req):
            pass

    with pytest.raises(EmptyStreamError, match=r"it cannot stream this request \(call without stream=True\); not"):
        asyncio.run(consume())


def test_a_streaming_agent_answers_an_empty_tool_stream_with_one_whole_call(server: WireServer) -> None:
    """Each tool-bearing call: streamed, empty, then made whole (the second request has no
    ``stream``); both are recorded in ``llm_not_streamed`` and the answer's text is a token."""
    server.push(EMPTY, tool_call_json(), EMPTY, answer_json("Oslo is cold."))
    agent, tokens = weather_agent(openai_compatible(f"{server.url}/v1", model="m"))
    assert agent.run("Weather in Oslo?") == "Oslo is cold."
    assert [s.body.get("stream", False) for s in server.seen] == [True, False, True, False]
    assert server.seen[3].body["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "Oslo: 3C"}
    rows = agent.last_snapshot().shared_state["llm_not_streamed"]
    assert [row["iteration"] for row in rows] == [1, 2]
    assert rows[0]["reason"] == (
        "the server answered the streamed request offering tools with an empty stream, "
        "so the call was made again without streaming"
    )  # no address in the record: two runs on two servers record the same
    assert tokens == [{"iteration": 2, "index": 0, "text": "Oslo is cold."}]


def test_declared_stream_tools_false_makes_tool_calls_whole_and_streams_the_rest(server: WireServer) -> None:
    """``capabilities="llama.cpp"``: a request offering tools is made whole at once (no wasted empty
    stream), recorded; the wrap-up call, which offers none, is streamed token by token."""
    delta = {"model": "m", "choices": [{"index": 0, "delta": {"content": "Cold."}, "finish_reason": "stop"}]}
    server.push(tool_call_json(), Reply(sse=sse(delta, "[DONE]")))
    provider = openai_compatible(f"{server.url}/v1", model="m", capabilities="llama.cpp")
    built, tokens = weather_agent(provider, max_iterations=1)
    assert built.run("Weather in Oslo?") == "Cold."
    assert [s.body.get("stream", False) for s in server.seen] == [False, True]
    assert "tools" not in server.seen[1].body  # the wrap-up offers no tools: streamed
    assert built.last_snapshot().shared_state["llm_not_streamed"] == [
        {"iteration": 1, "reason": "the provider declares stream_tools=False: a request offering tools is not streamed"}
    ]
    assert tokens == [{"iteration": 2, "index": 0, "text": "Cold."}]


@pytest.mark.parametrize("kind", ["anthropic", "ollama"])
def test_every_http_provider_says_the_same_of_an_empty_stream(server: WireServer, kind: str) -> None:
    """Anthropic's and Ollama's streams: a 200 with nothing in it is the same EmptyStreamError, not
    a connection "cut short" to be tried again."""
    server.push(EMPTY)
    made = anthropic(api_key="k", base_url=server.url) if kind == "anthropic" else ollama("m", base_url=server.url)
    req = LLMRequest(None, [{"role": "user", "content": "Hi"}], [WEATHER], "m")

    async def consume() -> None:
        async for _event in made.stream(req):
            pass

    with pytest.raises(EmptyStreamError, match=rf"^{kind}: the server at .* answered 200 with an empty event stream"):
        asyncio.run(consume())
