"""anthropic against a real local server: the Messages wire, streaming, usage, failures."""

from __future__ import annotations

import pytest

from agent.providers import (
    ContextTooLongError,
    LLMRequest,
    LLMResponse,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderResponseError,
    Token,
    ToolCall,
    Usage,
    anthropic,
)

from .wire import Reply, Sleeps, WireServer, sse

KEY = "sk-ant-test-key"
WEATHER = {
    "name": "weather",
    "description": "Get current weather for a city.",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
ROUND_TRIP = LLMRequest(
    system_prompt="You answer weather questions.",
    messages=[
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": "Checking both.",
            "tool_calls": [
                {"id": "t1", "name": "weather", "args": {"city": "Paris"}},
                {"id": "t2", "name": "weather", "args": {"city": "Oslo"}},
            ],
        },
        {"role": "tool", "content": "Paris: 72F", "tool_call_id": "t1", "tool_name": "weather"},
        {"role": "tool", "content": "Oslo: 50F", "tool_call_id": "t2", "tool_name": "weather"},
        {"role": "user", "content": "Answer now."},
        {"role": "system", "content": "Be brief."},
    ],
    tools=[WEATHER],
    model="claude-test",
    temperature=0.0,
)
ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-test-2025",
    "content": [{"type": "text", "text": "Paris 72F, "}, {"type": "text", "text": "Oslo 50F."}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 120, "output_tokens": 9},
}


async def test_request_body_and_headers_on_the_wire(server: WireServer) -> None:
    """Top-level system, tool_use blocks, tool results coalesced with the next user text."""
    server.push(Reply(json=ANSWER))
    await anthropic(api_key=KEY, base_url=server.url).complete(ROUND_TRIP)
    [seen] = server.seen
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert seen.headers["content-type"] == "application/json"
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": "You answer weather questions.\n\nBe brief.",
        "messages": [
            {"role": "user", "content": "Weather in Paris and Oslo?"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Checking both."},
                    {"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}},
                    {"type": "tool_use", "id": "t2", "name": "weather", "input": {"city": "Oslo"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "Paris: 72F"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "Oslo: 50F"},
                    {"type": "text", "text": "Answer now."},
                ],
            },
        ],
        "tools": [WEATHER],
        "temperature": 0.0,
    }


async def test_request_max_tokens_wins_and_absent_fields_are_omitted(server: WireServer) -> None:
    """The request's max_tokens replaces the default; no system, tools or temperature if unset."""
    server.push(Reply(json=ANSWER))
    req = LLMRequest(None, [{"role": "user", "content": "hi"}], [], "claude-test", max_tokens=10)
    await anthropic(api_key=KEY, base_url=server.url).complete(req)
    assert server.seen[0].body == {
        "model": "claude-test",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
    }


async def test_answer_becomes_a_response_with_usage(server: WireServer) -> None:
    """Text blocks are joined; usage from input/output tokens; end_turn is stop."""
    server.push(Reply(json=ANSWER))
    response = await anthropic(api_key=KEY, base_url=server.url).complete(ROUND_TRIP)
    assert response == LLMResponse(
        content="Paris 72F, Oslo 50F.",
        usage=Usage(input_tokens=120, output_tokens=9),
        finish_reason="stop",
        model="claude-test-2025",
    )


async def test_tool_use_blocks_become_tool_calls(server: WireServer) -> None:
    """tool_use blocks are tool calls in order, with finish_reason tool_use."""
    content = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Rome"}},
    ]
    server.push(Reply(json={**ANSWER, "content": content, "stop_reason": "tool_use"}))
    response = await anthropic(api_key=KEY, base_url=server.url).complete(ROUND_TRIP)
    assert response.tool_calls == (ToolCall("toolu_1", "weather", {"city": "Rome"}),)
    assert (response.content, response.finish_reason) == ("Let me look.", "tool_use")


@pytest.mark.parametrize(
    ("wire", "normalised"),
    [("max_tokens", "max_tokens"), ("stop_sequence", "stop"), ("refusal", "content_filter")],
)
async def test_stop_reasons_are_normalised(server: WireServer, wire: str, normalised: str) -> None:
    """max_tokens stays, stop_sequence is stop, refusal is content_filter."""
    server.push(Reply(json={**ANSWER, "stop_reason": wire}))
    response = await anthropic(api_key=KEY, base_url=server.url).complete(ROUND_TRIP)
    assert response.finish_reason == normalised


async def test_stream_assembles_text_tool_input_and_usage(server: WireServer) -> None:
    """SSE text deltas are tokens; input_json_delta pieces form the call's args; usage adds up."""
    events = sse(
        {
            "type": "message_start",
            "message": {"model": "claude-test", "usage": {"input_tokens": 30, "output_tokens": 1}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "ping"},
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "One "},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "sec."},
        },
        {"type": "content_block_stop", "index": 0},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Li'},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'ma"}'},
        },
        {"type": "content_block_stop", "index": 1},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 15},
        },
        {"type": "message_stop"},
        event_names=True,
    )
    server.push(Reply(sse=events))
    got = [e async for e in anthropic(api_key=KEY, base_url=server.url).stream(ROUND_TRIP)]
    assert got == [
        Token(0, "One "),
        Token(1, "sec."),
        LLMResponse(
            content="One sec.",
            tool_calls=(ToolCall("toolu_9", "weather", {"city": "Lima"}),),
            usage=Usage(30, 15),
            finish_reason="tool_use",
            model="claude-test",
        ),
    ]
    assert server.seen[0].body["stream"] is True


async def test_stream_error_event_is_raised(server: WireServer) -> None:
    """An error event mid-stream becomes a ProviderResponseError quoting it."""
    server.push(Reply(sse=sse({"type": "error", "error": {"type": "overloaded_error"}})))
    with pytest.raises(ProviderResponseError, match=r"stream error: .*overloaded_error"):
        [e async for e in anthropic(api_key=KEY, base_url=server.url).stream(ROUND_TRIP)]


async def test_overloaded_529_is_retried(server: WireServer, sleeps: Sleeps) -> None:
    """Anthropic's 529 (overloaded) is retried like a 503."""
    server.push(Reply(status=529, json={"type": "error"}), Reply(json=ANSWER))
    provider = anthropic(api_key=KEY, base_url=server.url, sleep=sleeps)
    response = await provider.complete(ROUND_TRIP)
    assert [r.reason for r in response.retries] == ["HTTP 529"]


async def test_401_says_check_the_api_key(server: WireServer) -> None:
    """A 401 says to check the key and where it comes from."""
    body = {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    server.push(Reply(status=401, json=body))
    with pytest.raises(
        ProviderAuthError,
        match=r"^anthropic: HTTP 401 from http://127\.0\.0\.1:\d+/v1/messages: invalid x-api-key "
        r"— check the API key \(api_key= or ANTHROPIC_API_KEY\)$",
    ):
        await anthropic(api_key=KEY, base_url=server.url).complete(ROUND_TRIP)


async def test_404_model(server: WireServer) -> None:
    """A 404 naming the model says which model was not found where."""
    body = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-9"}}
    server.push(Reply(status=404, json=body))
    with pytest.raises(
        ModelNotFoundError,
        match=r"^anthropic: model 'claude-9' not found at http://127\.0\.0\.1:\d+/v1/messages",
    ):
        await anthropic(api_key=KEY, base_url=server.url, model="claude-9").complete(ROUND_TRIP)


async def test_context_too_long(server: WireServer) -> None:
    """'prompt is too long' is a ContextTooLongError."""
    message = "prompt is too long: 210000 tokens > 200000 maximum"
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    server.push(Reply(status=400, json=body))
    with pytest.raises(ContextTooLongError, match=r"too long for model 'claude-test' .*210000"):
        await anthropic(api_key=KEY, base_url=server.url).complete(ROUND_TRIP)


def test_missing_key_is_refused_at_construction() -> None:
    """Without api_key or ANTHROPIC_API_KEY the factory says how to supply one."""
    with pytest.raises(
        ProviderConfigError,
        match=r"^anthropic: no API key; pass api_key=\.\.\. or set ANTHROPIC_API_KEY$",
    ):
        anthropic()


async def test_environment_supplies_the_key(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """ANTHROPIC_API_KEY is sent as x-api-key when no argument is given."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    server.push(Reply(json=ANSWER))
    await anthropic(base_url=server.url).complete(ROUND_TRIP)
    assert server.seen[0].headers["x-api-key"] == "sk-ant-env"


async def test_stream_cut_short_is_an_error(server: WireServer) -> None:
    """A stream that closes before message_stop is an error, not a truncated answer."""
    start = {"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 1}}}
    server.push(Reply(sse=sse(start)))
    with pytest.raises(ProviderConnectionError, match=r"ended before the answer was complete"):
        [e async for e in anthropic(api_key=KEY, base_url=server.url).stream(ROUND_TRIP)]
