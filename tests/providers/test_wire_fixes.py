"""What a real OpenAI-compatible server (llama.cpp's) taught the providers, pinned on the wire.

tool_choice and extra_body, ``""`` for a tool-calling turn's content, error text cut in
the middle, no retry of a request-validation 500, unknown usage kept unknown, and an
Ollama stream of another shape refused by name. Each is shown against a scripted server
on 127.0.0.1 (the real server's own tests are in ``test_real_server.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from agent.providers import (
    LLMRequest,
    LLMResponse,
    ProviderConfigError,
    ProviderProtocolError,
    ProviderResponseError,
    Token,
    Usage,
    anthropic,
    ollama,
    openai_compatible,
)

from .test_openai_compatible import ANSWER, ROUND_TRIP, WEATHER, completion
from .wire import Reply, Sleeps, WireServer, sse

NO_TOOLS = LLMRequest(None, [{"role": "user", "content": "hi"}], [], "m")
CLOCK = {"name": "clock", "description": "The time.", "input_schema": {"type": "object"}}
TWO_TOOLS = LLMRequest(None, [{"role": "user", "content": "hi"}], [WEATHER, CLOCK], "m")

# llama.cpp's server answers a request that fails its pydantic model with a 500 like this
# (seven errors, one per message type of the union; the cause is the third)
VALIDATION_500 = {
    "error": {
        "message": "7 validation errors:\n"
        + "\n".join(
            f"  {{'type': '{kind}', 'loc': ('body', 'messages', 1, '{model}', '{field}'), 'msg': \"{msg}\", "
            f"'input': {{'role': 'assistant', 'content': None, 'tool_calls': [{{'id': 'c1'}}]}}}}"
            for kind, model, field, msg in [
                ("literal_error", "ChatCompletionRequestSystemMessage", "role", "Input should be 'system'"),
                ("literal_error", "ChatCompletionRequestUserMessage", "role", "Input should be 'user'"),
                ("string_type", "ChatCompletionRequestAssistantMessage", "content", "Input should be a valid string"),
                ("literal_error", "ChatCompletionRequestToolMessage", "role", "Input should be 'tool'"),
                ("missing", "ChatCompletionRequestToolMessage", "tool_call_id", "Field required"),
                ("literal_error", "ChatCompletionRequestFunctionMessage", "role", "Input should be 'function'"),
                ("missing", "ChatCompletionRequestFunctionMessage", "name", "Field required"),
            ]
        )
        + '\n\n  File "/srv/llama_cpp/server/app.py", line 376, in create_chat_completion\n'
        "    POST /v1/chat/completions",
        "type": "internal_server_error",
    }
}


async def _body(server: WireServer, **options: Any) -> dict[str, Any]:
    server.push(Reply(json=ANSWER))
    await openai_compatible(f"{server.url}/v1", **options).complete(TWO_TOOLS)
    body: dict[str, Any] = server.seen[-1].body
    return body


# --- 1. tool_choice and extra_body --------------------------------------------------------------


async def test_tool_choice_auto_is_sent_whenever_tools_are_offered(server: WireServer) -> None:
    """Tools offered and no tool_choice given: the body says ``"tool_choice": "auto"``."""
    assert (await _body(server))["tool_choice"] == "auto"


async def test_no_tools_no_tool_choice(server: WireServer) -> None:
    """A request without tools (e.g. the wrap-up call) carries no tool_choice, whatever was configured."""
    server.push(Reply(json=ANSWER))
    await openai_compatible(f"{server.url}/v1", tool_choice="weather").complete(NO_TOOLS)
    assert "tool_choice" not in server.seen[0].body and "tools" not in server.seen[0].body


@pytest.mark.parametrize("choice", ["none", "required", "auto"])
async def test_tool_choice_keywords_travel_as_strings(server: WireServer, choice: str) -> None:
    """``tool_choice="none" | "required" | "auto"`` is sent as that string."""
    assert (await _body(server, tool_choice=choice))["tool_choice"] == choice


async def test_tool_choice_naming_a_tool_forces_that_function(server: WireServer) -> None:
    """A tool name becomes OpenAI's ``{"type": "function", "function": {"name": ...}}``."""
    body = await _body(server, tool_choice="clock")
    assert body["tool_choice"] == {"type": "function", "function": {"name": "clock"}}


async def test_tool_choice_naming_no_offered_tool_is_refused_before_sending(server: WireServer) -> None:
    """A tool name that the request does not offer is a config error naming what is offered; nothing is sent."""
    provider = openai_compatible(f"{server.url}/v1", tool_choice="refund")
    with pytest.raises(
        ProviderConfigError,
        match=r"^openai_compatible: tool_choice='refund' names no tool of this request \(offered: weather, clock\); "
        r"use one of them or auto, none, required$",
    ):
        await provider.complete(TWO_TOOLS)
    assert server.seen == []


@pytest.mark.parametrize("bad", ["", "  ", 3, {"type": "auto"}])
def test_tool_choice_that_is_not_a_name_is_refused_at_construction(bad: object) -> None:
    """``tool_choice`` takes a non-empty string; anything else fails when the provider is made."""
    with pytest.raises(ProviderConfigError, match=r"^openai_compatible: tool_choice must be 'auto', 'none'"):
        openai_compatible("http://127.0.0.1:1/v1", tool_choice=bad)  # type: ignore[arg-type]


async def test_extra_body_fields_are_added_to_every_request(server: WireServer) -> None:
    """``extra_body`` fields (server-specific) ride along, plain and streamed; the caller's dict is copied."""
    extra = {"top_k": 40, "seed": 7, "cache_prompt": True}
    provider = openai_compatible(f"{server.url}/v1", extra_body=extra)
    extra["seed"] = 8  # changing the caller's dict later changes nothing
    server.push(Reply(json=ANSWER), Reply(sse=sse(completion({"content": "x"}) | {"choices": []}, "[DONE]")))
    await provider.complete(NO_TOOLS)
    [_ async for _ in provider.stream(NO_TOOLS)]
    for seen in server.seen:
        assert {k: seen.body[k] for k in ("top_k", "seed", "cache_prompt")} == {
            "top_k": 40,
            "seed": 7,
            "cache_prompt": True,
        }
    assert server.seen[1].body["stream"] is True


def test_extra_body_may_not_set_a_field_the_provider_writes() -> None:
    """``extra_body`` that would overwrite messages/tools/tool_choice/... is refused, naming the fields."""
    with pytest.raises(
        ProviderConfigError,
        match=r"^openai_compatible: extra_body may not set messages, tool_choice — the provider writes those",
    ):
        openai_compatible("http://127.0.0.1:1/v1", extra_body={"tool_choice": "none", "messages": [], "top_k": 1})


@pytest.mark.parametrize("bad", [["top_k"], {"seed": float("nan")}, {"f": object()}, {1: 2}])
def test_extra_body_that_is_not_json_fields_is_refused(bad: object) -> None:
    """``extra_body`` must be a dict of names to JSON values (no NaN, no objects, no non-string keys)."""
    with pytest.raises(ProviderConfigError, match=r"^openai_compatible: extra_body must be"):
        openai_compatible("http://127.0.0.1:1/v1", extra_body=bad)  # type: ignore[arg-type]


# --- 2. a tool-calling turn's content ---------------------------------------------------------


async def test_a_tool_calling_turn_without_text_is_sent_with_empty_content(server: WireServer) -> None:
    """Strict servers refuse ``"content": null`` (pydantic "Input should be a valid string"): we send ``""``."""
    server.push(Reply(json=ANSWER))
    await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)
    assistant = server.seen[0].body["messages"][2]
    assert assistant["role"] == "assistant" and assistant["content"] == "" and assistant["tool_calls"]


# --- 3. error text and request-validation 500s ------------------------------------------------


async def test_a_validation_500_is_not_retried_and_names_the_failing_field(server: WireServer, sleeps: Sleeps) -> None:
    """A 500 whose body is a request-validation report: one request, no retry, the cause's field in the message."""
    server.push(*[Reply(status=500, json=VALIDATION_500)] * 3)
    with pytest.raises(
        ProviderResponseError,
        match=r"the server refused the request's shape \(not retried: it would fail "
        r"again\)$",
    ) as info:
        await openai_compatible(f"{server.url}/v1", sleep=sleeps).complete(ROUND_TRIP)
    assert len(server.seen) == 1 and sleeps.delays == [] and info.value.retries == ()
    message = str(info.value)
    assert message.startswith("openai_compatible: HTTP 500 from http://127.0.0.1:")
    assert message.endswith(
        "/chat/completions: 7 validation errors: messages.1.ChatCompletionRequestAssistantMessage.content: "
        "Input should be a valid string (and 6 from union members that did not match)"
        " — the server refused the request's shape (not retried: it would fail again)"
    )
    assert "'input'" not in message  # the echoed input values are left out


async def test_an_ordinary_500_is_still_retried(server: WireServer, sleeps: Sleeps) -> None:
    """A 500 that is not a validation report stays transient: retried, then the answer."""
    server.push(Reply(status=500, json={"error": {"message": "CUDA out of memory"}}), Reply(json=ANSWER))
    response = await openai_compatible(f"{server.url}/v1", sleep=sleeps).complete(ROUND_TRIP)
    assert response.content == "It is 72F in Paris." and len(server.seen) == 2


async def test_a_long_error_is_cut_in_the_middle_keeping_its_end(server: WireServer) -> None:
    """A long server message keeps its head and its tail (where the field often is), cut with " … "."""
    said = "request refused: " + "context " * 100 + "at field messages.3.content"
    server.push(Reply(status=400, json={"error": {"message": said}}))
    with pytest.raises(ProviderResponseError) as info:
        await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)
    message = str(info.value)
    assert ": request refused: context context" in message and " … " in message
    assert message.endswith("context at field messages.3.content")
    assert len(message) < 520


async def test_fastapi_422_details_are_summarised_by_field(server: WireServer) -> None:
    """FastAPI's ``{"detail": [{"loc", "msg", "input"}]}`` becomes ``field: problem`` pairs, inputs left out."""
    detail = [{"type": "int_parsing", "loc": ["body", "top_k"], "msg": "Input should be a valid integer", "input": "x"}]
    server.push(Reply(status=422, json={"detail": detail}))
    with pytest.raises(
        ProviderResponseError,
        match=r"HTTP 422 from .*: 1 validation error: top_k: Input should be a valid integer — the server refused",
    ):
        await openai_compatible(f"{server.url}/v1").complete(ROUND_TRIP)


# --- 5. usage that was not reported -----------------------------------------------------------


async def test_an_answer_without_usage_has_unknown_usage(server: WireServer) -> None:
    """No ``usage`` object (or a count missing) is ``usage=None``, never ``Usage(0, 0)``."""
    bare = {"choices": [{"index": 0, "message": {"content": "hi"}, "finish_reason": "stop"}]}
    half = bare | {"usage": {"prompt_tokens": 3}}
    server.push(Reply(json=bare), Reply(json=half), Reply(json=ANSWER))
    provider = openai_compatible(f"{server.url}/v1")
    assert [(await provider.complete(NO_TOOLS)).usage for _ in range(3)] == [None, None, Usage(42, 7)]


async def test_a_stream_without_a_usage_chunk_has_unknown_usage(server: WireServer) -> None:
    """Many servers ignore ``include_usage``: the streamed answer's usage is then ``None``."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
    server.push(Reply(sse=sse(chunk, "[DONE]")))
    events = [e async for e in openai_compatible(f"{server.url}/v1").stream(NO_TOOLS)]
    assert events == [Token(0, "hi"), LLMResponse(content="hi", usage=None)]


async def test_ollama_and_anthropic_without_counts_have_unknown_usage(server: WireServer) -> None:
    """Ollama without ``prompt_eval_count`` (a cached prompt) and Anthropic without ``usage``: ``None``."""
    server.push(
        Reply(json={"message": {"role": "assistant", "content": "hi"}, "done": True, "eval_count": 2}),
        Reply(json={"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}),
    )
    assert (await ollama("m", f"{server.url}").complete(NO_TOOLS)).usage is None
    assert (await anthropic(api_key="k", base_url=server.url).complete(NO_TOOLS)).usage is None


# --- 6. an Ollama stream of another shape -------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            ({"model": "m", "response": "hi", "done": False}, {"done": True}),
            r"stream line 1 has no 'message' object \(keys: done, model, response\) — "
            r"is base_url an Ollama /api/chat server\?$",
        ),
        (({"message": "hi", "done": False},), r"stream line 1: 'message' is str, expected an object$"),
        (
            ({"message": {"content": "a"}}, {"message": {"content": ["b"]}}),
            r"stream line 2: 'message.content' is list, expected a string$",
        ),
        (({"message": {"tool_calls": {"x": 1}}},), r"stream line 1: 'message.tool_calls' is dict, expected a list$"),
    ],
    ids=["generate-shape", "message-str", "content-list", "tool-calls-dict"],
)
async def test_an_ollama_stream_of_another_shape_is_a_protocol_error(
    server: WireServer, lines: tuple[Any, ...], expected: str
) -> None:
    """A stream line not in /api/chat's shape raises ProviderProtocolError naming the field — never a silent ``""``."""
    server.push(Reply(ndjson=lines))
    with pytest.raises(
        ProviderProtocolError, match=r"^ollama: unexpected response from http://127\.0\.0\.1:\d+/api/chat: " + expected
    ):
        [_ async for _ in ollama("m", server.url).stream(NO_TOOLS)]


def test_a_protocol_error_is_a_response_error() -> None:
    """ProviderProtocolError is a ProviderResponseError, so existing handlers still catch it."""
    assert issubclass(ProviderProtocolError, ProviderResponseError)
