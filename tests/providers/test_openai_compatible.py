"""openai_compatible against a real local server: the wire, streaming, usage, failures."""

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
    ProviderTimeoutError,
    Token,
    ToolCall,
    Usage,
    openai_compatible,
)

from .wire import Reply, WireServer, closed_port, sse

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
    model="gpt-test",
    temperature=0.2,
    max_tokens=50,
)


def completion(message: dict[str, object], finish: str = "stop") -> dict[str, object]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-test-0613",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
    }


ANSWER = completion({"role": "assistant", "content": "It is 72F in Paris."})


async def test_request_body_and_headers_on_the_wire(server: WireServer) -> None:
    """System first, tools as functions, tool_calls with JSON-string arguments, tool results."""
    server.push(Reply(json=ANSWER))
    provider = openai_compatible(f"{server.url}/v1", api_key="sk-test")
    await provider.complete(ROUND_TRIP)
    [seen] = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == "Bearer sk-test"
    assert seen.headers["content-type"] == "application/json"
    assert seen.headers["accept"] == "application/json"
    assert seen.body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": "You answer weather questions."},
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "Paris: 72F"},
        ],
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
        "tool_choice": "auto",
        "temperature": 0.2,
        "max_tokens": 50,
    }


async def test_optional_fields_are_absent_when_unset(server: WireServer) -> None:
    """No system prompt, no tools, no temperature/max_tokens, no key: none of them on the wire."""
    server.push(Reply(json=ANSWER))
    req = LLMRequest(None, [{"role": "user", "content": "hi"}], [], "m")
    await openai_compatible(f"{server.url}/v1").complete(req)
    [seen] = server.seen
    assert seen.body == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    assert "authorization" not in seen.headers


async def test_answer_becomes_a_response_with_usage(server: WireServer) -> None:
    """Content, usage from prompt/completion tokens, finish reason and model are read back."""
    server.push(Reply(json=ANSWER))
    response = await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)
    assert response == LLMResponse(
        content="It is 72F in Paris.",
        tool_calls=(),
        usage=Usage(input_tokens=42, output_tokens=7),
        finish_reason="stop",
        model="gpt-test-0613",
    )


async def test_tool_calls_are_parsed_and_bad_json_is_an_error_for_that_call(
    server: WireServer,
) -> None:
    """Good arguments parse; bad JSON gives args={} and args_error, never a crash."""
    calls = [
        {"id": "a", "type": "function", "function": {"name": "w", "arguments": '{"city":"Oslo"}'}},
        {"id": "b", "type": "function", "function": {"name": "w", "arguments": "{city: Oslo"}},
    ]
    server.push(Reply(json=completion({"content": None, "tool_calls": calls}, "tool_calls")))
    response = await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)
    good, bad = response.tool_calls
    assert good == ToolCall("a", "w", {"city": "Oslo"})
    assert (bad.id, bad.args) == ("b", {})
    assert bad.args_error is not None
    assert bad.args_error.startswith("arguments are not valid JSON (Expecting property name")
    assert response.finish_reason == "tool_use"
    assert response.content == ""


async def test_missing_tool_call_ids_are_minted_per_turn(server: WireServer) -> None:
    """A server that sends no ids gets call_<messages sent>_<n>, and stop becomes tool_use."""
    calls = [{"function": {"name": "w", "arguments": "{}"}}]
    server.push(Reply(json=completion({"content": "", "tool_calls": calls}, "stop")))
    response = await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)
    assert response.tool_calls == (ToolCall("call_3_1", "w", {}),)
    assert response.finish_reason == "tool_use"


@pytest.mark.parametrize(
    ("wire", "normalised"),
    [("length", "max_tokens"), ("content_filter", "content_filter"), (None, "stop")],
)
async def test_finish_reasons_are_normalised(server: WireServer, wire: str | None, normalised: str) -> None:
    """length → max_tokens, content_filter stays, a missing reason is stop."""
    server.push(Reply(json=completion({"content": "x"}, wire)))  # type: ignore[arg-type]
    response = await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)
    assert response.finish_reason == normalised


async def test_stream_assembles_tokens_tool_calls_and_usage(server: WireServer) -> None:
    """SSE chunks become tokens; split tool-call arguments and the usage chunk are assembled."""

    def delta(d: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {"model": "gpt-test", "choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

    server.push(
        Reply(
            sse=sse(
                delta({"role": "assistant", "content": "Let me "}),
                delta({"content": "check."}),
                delta({"tool_calls": [{"index": 0, "id": "c9", "function": {"name": "weather"}}]}),
                delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
                delta({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]}),
                delta({}, "tool_calls"),
                {
                    "model": "gpt-test",
                    "choices": [],
                    "usage": {"prompt_tokens": 9, "completion_tokens": 4},
                },
                "[DONE]",
            )
        )
    )
    events = [e async for e in openai_compatible(f"{server.url}/v1").stream(ROUND_TRIP)]
    assert events == [
        Token(0, "Let me "),
        Token(1, "check."),
        LLMResponse(
            content="Let me check.",
            tool_calls=(ToolCall("c9", "weather", {"city": "Oslo"}),),
            usage=Usage(9, 4),
            finish_reason="tool_use",
            model="gpt-test",
        ),
    ]
    body = server.seen[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert server.seen[0].headers["accept"] == "text/event-stream"


async def test_connection_refused_names_the_address() -> None:
    """Nothing listening: the error names the address and asks whether the server runs."""
    port = closed_port()
    provider = openai_compatible(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(
        ProviderConnectionError,
        match=rf"^openai_compatible: cannot connect to http://127\.0\.0\.1:{port}/v1/chat/"
        rf"completions \(connection refused\) — is the server running at "
        rf"http://127\.0\.0\.1:{port}/v1\? check base_url / OPENAI_BASE_URL",
    ):
        await provider.complete(ROUND_TRIP)


async def test_401_says_check_the_api_key(server: WireServer) -> None:
    """A 401 is an auth error that says to check the key."""
    server.push(Reply(status=401, json={"error": {"message": "Invalid token"}}))
    with pytest.raises(
        ProviderAuthError,
        match=r"^openai_compatible: HTTP 401 from http://127\.0\.0\.1:\d+/v1/chat/completions: "
        r"Invalid token — check the API key \(api_key= or OPENAI_API_KEY\)$",
    ):
        await openai_compatible(f"{server.url}/v1", api_key="sk-x").complete(ROUND_TRIP)


async def test_404_model_names_the_model(server: WireServer) -> None:
    """A 404 about the model says which model was not found where."""
    body = {"error": {"message": "The model `gpt-9` does not exist", "code": "model_not_found"}}
    server.push(Reply(status=404, json=body))
    with pytest.raises(
        ModelNotFoundError,
        match=r"^openai_compatible: model 'gpt-9' not found at http://127\.0\.0\.1:\d+/v1/chat/"
        r"completions: The model `gpt-9` does not exist — check the model name$",
    ):
        await openai_compatible(f"{server.url}/v1", model="gpt-9").complete(ROUND_TRIP)


async def test_404_without_model_points_at_the_base_url(server: WireServer) -> None:
    """A 404 for the path (base_url missing /v1) says to check base_url."""
    server.push(Reply(status=404, body=b"404 page not found"))
    with pytest.raises(ProviderResponseError, match=r"404 page not found — check base_url: .* usually end in /v1$"):
        await openai_compatible(server.url).complete(ROUND_TRIP)


async def test_context_too_long(server: WireServer) -> None:
    """A 400 about the context length is a ContextTooLongError with advice."""
    message = "This model's maximum context length is 8192 tokens. However, you requested 9000."
    server.push(Reply(status=400, json={"error": {"message": message}}))
    with pytest.raises(
        ContextTooLongError,
        match=r"^openai_compatible: the request is too long for model 'gpt-test' at .*8192 tokens"
        r".* — shorten the history or system prompt, or use a model with a larger context$",
    ):
        await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)


async def test_timeout(server: WireServer) -> None:
    """A server slower than the timeout gives a timeout error naming the address."""
    server.push(Reply(json=ANSWER, delay=0.5))
    provider = openai_compatible(f"{server.url}/v1", timeout=0.1)
    with pytest.raises(ProviderTimeoutError, match=r"no answer from http://.* within 0\.1s"):
        await provider.complete(ROUND_TRIP)


async def test_malformed_body(server: WireServer) -> None:
    """A body that is not JSON is a ProviderResponseError quoting it."""
    server.push(Reply(body=b"<html>proxy error</html>"))
    with pytest.raises(ProviderResponseError, match=r"unexpected response .*: not JSON: '<html>"):
        await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)


async def test_environment_supplies_base_url_and_key(server: WireServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_BASE_URL and OPENAI_API_KEY are used when no argument is given."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1/")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server.push(Reply(json=ANSWER))
    provider = openai_compatible()
    assert provider.base_url == f"{server.url}/v1"
    await provider.complete(ROUND_TRIP)
    assert server.seen[0].headers["authorization"] == "Bearer sk-env"


async def test_provider_model_overrides_the_request(server: WireServer) -> None:
    """A model given to the provider wins over the request's (only the provider line changes)."""
    server.push(Reply(json=ANSWER))
    await openai_compatible(f"{server.url}/v1", model="local-llama").complete(ROUND_TRIP)
    assert server.seen[0].body["model"] == "local-llama"


async def test_no_model_anywhere_is_refused() -> None:
    """With no model on the provider or the request, nothing is sent."""
    req = LLMRequest(None, [{"role": "user", "content": "hi"}], [], "")
    with pytest.raises(ProviderConfigError, match=r"^openai_compatible: no model to ask for"):
        await openai_compatible("http://127.0.0.1:1/v1").complete(req)


async def test_stream_cut_short_is_an_error(server: WireServer) -> None:
    """A stream that closes before [DONE] or a finish reason is not passed off as complete."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "It is"}, "finish_reason": None}]}
    server.push(Reply(sse=sse(chunk)))
    with pytest.raises(
        ProviderConnectionError,
        match=r"^openai_compatible: the stream from http://127\.0\.0\.1:\d+/v1/chat/completions "
        r"ended before the answer was complete",
    ):
        [e async for e in openai_compatible(f"{server.url}/v1").stream(ROUND_TRIP)]
