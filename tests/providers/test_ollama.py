"""ollama against a real local server: native /api/chat, NDJSON streaming, usage, failures."""

from __future__ import annotations

import pytest

from agent.providers import (
    LLMRequest,
    LLMResponse,
    ModelNotFoundError,
    ProviderConnectionError,
    ProviderResponseError,
    Token,
    ToolCall,
    Usage,
    ollama,
)
from agent.providers.ollama import host_to_url

from .wire import Reply, Sleeps, WireServer, closed_port

WEATHER = {
    "name": "weather",
    "description": "Get current weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
ROUND_TRIP = LLMRequest(
    system_prompt="You answer weather questions.",
    messages=[
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}],
        },
        {"role": "tool", "content": "Paris: 72F", "tool_call_id": "c1", "tool_name": "weather"},
    ],
    tools=[WEATHER],
    model="llama3.2",
    temperature=0.1,
    max_tokens=64,
)
ANSWER = {
    "model": "llama3.2",
    "created_at": "2025-01-01T00:00:00Z",
    "message": {"role": "assistant", "content": "It is 72F."},
    "done": True,
    "done_reason": "stop",
    "prompt_eval_count": 31,
    "eval_count": 5,
}


async def test_request_body_on_the_wire(server: WireServer) -> None:
    """System first, object arguments, tool results with tool_name, options, stream false."""
    server.push(Reply(json=ANSWER))
    await ollama(base_url=server.url).complete(ROUND_TRIP)
    [seen] = server.seen
    assert seen.path == "/api/chat"
    assert seen.headers["content-type"] == "application/json"
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": "llama3.2",
        "messages": [
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}],
            },
            {"role": "tool", "content": "Paris: 72F", "tool_name": "weather"},
        ],
        "stream": False,
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "weather",
                    "description": "Get current weather for a city.",
                    "parameters": WEATHER["input_schema"],
                },
            }
        ],
        "options": {"temperature": 0.1, "num_predict": 64},
    }


async def test_answer_becomes_a_response_with_usage(server: WireServer) -> None:
    """message.content, usage from prompt_eval_count/eval_count, done_reason stop."""
    server.push(Reply(json=ANSWER))
    response = await ollama(base_url=server.url).complete(ROUND_TRIP)
    assert response == LLMResponse(content="It is 72F.", usage=Usage(31, 5), finish_reason="stop", model="llama3.2")


async def test_tool_calls_get_minted_ids(server: WireServer) -> None:
    """Ollama sends no ids: calls get call_<messages sent>_<n>; stop with calls is tool_use."""
    calls = [
        {"function": {"name": "weather", "arguments": {"city": "Oslo"}}},
        {"function": {"name": "weather", "arguments": "{not json"}},
    ]
    message = {"role": "assistant", "content": "", "tool_calls": calls}
    server.push(Reply(json={**ANSWER, "message": message}))
    response = await ollama(base_url=server.url).complete(ROUND_TRIP)
    first, second = response.tool_calls
    assert first == ToolCall("call_3_1", "weather", {"city": "Oslo"})
    assert (second.id, second.args) == ("call_3_2", {})
    assert second.args_error is not None
    assert response.finish_reason == "tool_use"


async def test_length_is_max_tokens(server: WireServer) -> None:
    """done_reason length → max_tokens."""
    server.push(Reply(json={**ANSWER, "done_reason": "length"}))
    assert (await ollama(base_url=server.url).complete(ROUND_TRIP)).finish_reason == "max_tokens"


async def test_ndjson_stream_is_assembled(server: WireServer) -> None:
    """Each NDJSON line's content is a token; the done line carries usage."""

    def line(content: str) -> dict[str, object]:
        return {"model": "llama3.2", "message": {"role": "assistant", "content": content}}

    server.push(
        Reply(
            ndjson=(
                line("It "),
                line("is "),
                line("72F."),
                {**ANSWER, "message": {"role": "assistant", "content": ""}},
            )
        )
    )
    events = [e async for e in ollama(base_url=server.url).stream(ROUND_TRIP)]
    assert events == [
        Token(0, "It "),
        Token(1, "is "),
        Token(2, "72F."),
        LLMResponse(content="It is 72F.", usage=Usage(31, 5), finish_reason="stop", model="llama3.2"),
    ]
    assert server.seen[0].body["stream"] is True
    assert server.seen[0].headers["accept"] == "application/x-ndjson"


async def test_stream_tool_calls(server: WireServer) -> None:
    """Tool calls arriving in a stream line are collected into the final response."""
    calls = [{"function": {"name": "weather", "arguments": {"city": "Rome"}}}]
    server.push(
        Reply(
            ndjson=(
                {"message": {"role": "assistant", "content": "", "tool_calls": calls}},
                {**ANSWER, "message": {"role": "assistant", "content": ""}},
            )
        )
    )
    events = [e async for e in ollama(base_url=server.url).stream(ROUND_TRIP)]
    final = events[-1]
    assert isinstance(final, LLMResponse)
    assert final.tool_calls == (ToolCall("call_3_1", "weather", {"city": "Rome"}),)
    assert final.finish_reason == "tool_use"


async def test_error_line_in_stream(server: WireServer) -> None:
    """An {"error": ...} line mid-stream becomes a ProviderResponseError."""
    server.push(Reply(ndjson=({"error": "out of memory"},)))
    with pytest.raises(ProviderResponseError, match=r"^ollama: unexpected response .*out of memory"):
        [e async for e in ollama(base_url=server.url).stream(ROUND_TRIP)]


async def test_connection_refused_says_try_ollama_serve() -> None:
    """Nothing listening: the error names the address and suggests 'ollama serve'."""
    port = closed_port()
    with pytest.raises(
        ProviderConnectionError,
        match=rf"^ollama: cannot connect to http://127\.0\.0\.1:{port}/api/chat \(connection "
        rf"refused\) — is the server running at http://127\.0\.0\.1:{port}\? try 'ollama serve'$",
    ):
        await ollama(base_url=f"http://127.0.0.1:{port}").complete(ROUND_TRIP)


async def test_404_model_says_ollama_pull(server: WireServer) -> None:
    """An unknown model names the model and the address, and suggests 'ollama pull'."""
    server.push(Reply(status=404, json={"error": "model 'llama9' not found, try pulling it first"}))
    with pytest.raises(
        ModelNotFoundError,
        match=r"^ollama: model 'llama9' not found at http://127\.0\.0\.1:\d+/api/chat: model "
        r"'llama9' not found, try pulling it first — try 'ollama pull llama9'$",
    ):
        await ollama("llama9", base_url=server.url).complete(ROUND_TRIP)


async def test_retry_on_503_while_loading(server: WireServer, sleeps: Sleeps) -> None:
    """A 503 (server busy) is retried, and the retry is on the response."""
    server.push(Reply(status=503, json={"error": "busy"}), Reply(json=ANSWER))
    response = await ollama(base_url=server.url, sleep=sleeps).complete(ROUND_TRIP)
    assert [r.to_dict() for r in response.retries] == [{"attempt": 1, "reason": "HTTP 503", "delay": 0.5}]


async def test_ollama_host_is_read(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """OLLAMA_HOST as host:port (no scheme) points the provider at the server."""
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{server.port}")
    server.push(Reply(json=ANSWER))
    provider = ollama("llama3.2")
    assert provider.base_url == server.url
    assert (await provider.complete(ROUND_TRIP)).content == "It is 72F."


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://0.0.0.0:11434"),
        ("example.com:9000", "http://example.com:9000"),
        ("https://ollama.example.com", "https://ollama.example.com"),
        ("http://box", "http://box:11434"),
    ],
)
def test_host_to_url(host: str, url: str) -> None:
    """OLLAMA_HOST defaults the scheme to http and an http port to 11434."""
    assert host_to_url(host) == url


def test_default_address() -> None:
    """Without base_url or OLLAMA_HOST the provider talks to localhost:11434."""
    assert ollama("m").base_url == "http://localhost:11434"


async def test_stream_cut_short_is_an_error(server: WireServer) -> None:
    """A stream that closes before its done line is an error, not a truncated answer."""
    server.push(Reply(ndjson=({"message": {"role": "assistant", "content": "It "}},)))
    with pytest.raises(ProviderConnectionError, match=r"ended before the answer was complete"):
        [e async for e in ollama(base_url=server.url).stream(ROUND_TRIP)]
