"""openai_compatible against a REAL OpenAI-compatible server: llama.cpp's, with SmolLM2-135M.

Law of this file: every test asserts what went over the wire (through a recording proxy)
and how the provider parsed it — never the model's words (a 135M model writes nonsense).
The server is started once per session (``examples/local_llm.py``: its own virtualenv in
``.cache/local-llm``, 127.0.0.1 only, ``--chat_format chatml-function-calling``) and the
whole module is skipped, saying why, when it is not installed (``make demo-local`` or
``python examples/local_llm.py install``; CI installs it when ``../shared/wheels`` has the
prebuilt wheel). Requests are kept small (short prompts, ``max_tokens``, enum-bounded tool
arguments): on 2 busy cores a grammar-constrained tool call still takes seconds.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from agent import Agent, define_tool
from agent.providers import (
    ContextTooLongError,
    LLMRequest,
    LLMResponse,
    ProviderResponseError,
    Token,
    ToolCall,
    Usage,
    openai_compatible,
)
from examples import local_llm

from .recording_proxy import Exchange, RecordingProxy

pytestmark = pytest.mark.real_server

MODEL = local_llm.MODEL_NAME
TIMEOUT = 600.0  # one call on two cores shared with a test suite can take minutes
CITY = {
    "type": "object",
    "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
    "required": ["city"],
}
WEATHER = {"name": "weather", "description": "Current weather for a city.", "input_schema": CITY}


@pytest.fixture(scope="session")
def real_server() -> Iterator[RecordingProxy]:
    """The llama.cpp server (started once), behind a recording proxy; skipped when not installed."""
    reason = local_llm.status()
    if reason is not None:
        pytest.skip(reason)
    with local_llm.serve() as upstream:
        proxy = RecordingProxy(upstream.removesuffix("/v1"))
        yield proxy
        proxy.close()
    # what the run showed: one line per call (test, status, seconds), for the notes in docs/providers.md
    lines = [f"{test}\t{e.status}\t{e.seconds:.1f}s\t{'hung up' if e.client_hung_up else ''}" for test, e in CALLS]
    (local_llm.CACHE / "real-server-calls.tsv").write_text("\n".join(lines) + "\n")


CALLS: list[tuple[str, Exchange]] = []


@pytest.fixture
def wire(real_server: RecordingProxy, request: pytest.FixtureRequest) -> Iterator[RecordingProxy]:
    """The proxy with an empty record for this test."""
    real_server.take()
    taken = real_server.take
    seen: list[Exchange] = []

    def take(timeout: float = 120.0) -> list[Exchange]:
        exchanges = taken(timeout)
        seen.extend(exchanges)
        return exchanges

    real_server.take = take  # type: ignore[method-assign]
    yield real_server
    real_server.take = taken  # type: ignore[method-assign]
    seen.extend(taken())
    CALLS.extend((request.node.name, e) for e in seen if e.path == "/v1/chat/completions")


def provider(wire: RecordingProxy, **options: Any) -> Any:
    return openai_compatible(wire.url, model=MODEL, timeout=TIMEOUT, **options)


def request(text: str = "Say hi.", *, tools: list[dict[str, Any]] | None = None, max_tokens: int = 12) -> LLMRequest:
    return LLMRequest(
        None, [{"role": "user", "content": text}], tools or [], MODEL, temperature=0.0, max_tokens=max_tokens
    )


def chat_posts(exchanges: list[Exchange]) -> list[Exchange]:
    return [e for e in exchanges if e.path == "/v1/chat/completions"]


# --- a plain call ------------------------------------------------------------------------------


async def test_a_plain_call_is_parsed_from_what_the_server_sent(wire: RecordingProxy) -> None:
    """Body as encoded (no tools, no tool_choice); content, usage, finish reason and model parsed from the wire."""
    response = await provider(wire).complete(request())
    [exchange] = chat_posts(wire.take())
    assert exchange.body == {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Say hi."}],
        "temperature": 0.0,
        "max_tokens": 12,
    }
    assert exchange.status == 200
    sent = exchange.json
    choice = sent["choices"][0]
    assert response.content == (choice["message"]["content"] or "")
    assert response.usage == Usage(sent["usage"]["prompt_tokens"], sent["usage"]["completion_tokens"])
    assert response.finish_reason == {"stop": "stop", "length": "max_tokens"}[choice["finish_reason"]]
    assert response.model == sent["model"] and response.tool_calls == () and response.retries == ()


# --- a streamed call ----------------------------------------------------------------------------


async def test_a_streamed_call_yields_the_servers_deltas_in_order(wire: RecordingProxy) -> None:
    """``stream: true`` + ``include_usage`` on the wire; one Token per non-empty delta; usage only if sent."""
    events = [e async for e in provider(wire).stream(request())]
    [exchange] = chat_posts(wire.take())
    assert exchange.body["stream"] is True and exchange.body["stream_options"] == {"include_usage": True}
    chunks = exchange.sse_data
    assert chunks[-1] == "[DONE]"
    deltas = [
        c["choices"][0]["delta"]["content"]
        for c in chunks[:-1]
        if c.get("choices") and c["choices"][0].get("delta", {}).get("content")
    ]
    *tokens, final = events
    assert tokens == [Token(i, text) for i, text in enumerate(deltas)]
    assert isinstance(final, LLMResponse) and final.content == "".join(deltas)
    reported = [c["usage"] for c in chunks[:-1] if c.get("usage")]
    expected = Usage(reported[-1]["prompt_tokens"], reported[-1]["completion_tokens"]) if reported else None
    assert final.usage == expected  # llama.cpp's server sends no usage chunk: unknown, not 0


# --- a tool round trip with tool_choice -----------------------------------------------------------


def test_a_tool_round_trip_with_tool_choice(wire: RecordingProxy) -> None:
    """tool_choice names the tool; its call is run and sent back ("" content, paired id); the wrap-up has no tools."""
    runs: list[dict[str, Any]] = []
    weather = define_tool(
        name="weather",
        description=WEATHER["description"],
        input_schema=CITY,
        execute=lambda args, ctx: runs.append(dict(args)) or f"{args['city']}: 21C",
    )
    agent = (
        Agent.create(provider=provider(wire, tool_choice="weather"), model=MODEL, temperature=0.0, max_tokens=16)
        .tool(weather)
        .max_iterations(2)  # call 1 → the tool runs; call 2 → budget spent → the wrap-up call
        .build()
    )
    answer = agent.run("Weather in Paris?")
    first, second, wrap_up = chat_posts(wire.take())
    forced = {"type": "function", "function": {"name": "weather"}}
    assert first.body["tool_choice"] == forced and [t["function"]["name"] for t in first.body["tools"]] == ["weather"]
    assert first.status == 200
    [raw_call] = first.json["choices"][0]["message"]["tool_calls"]
    assert raw_call["function"]["name"] == "weather"
    assert runs == [json.loads(raw_call["function"]["arguments"])]  # the args the server sent, parsed
    # the second request: the tool-calling turn with "" content (null was refused), then the result
    assert second.body["tool_choice"] == forced and second.status == 200
    assistant, result = second.body["messages"][1:3]
    assert assistant == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": raw_call["id"],
                "type": "function",
                "function": {"name": "weather", "arguments": json.dumps(runs[0])},
            }
        ],
    }
    assert result == {"role": "tool", "tool_call_id": raw_call["id"], "content": f"{runs[0]['city']}: 21C"}
    assert "tools" not in wrap_up.body and "tool_choice" not in wrap_up.body  # the wrap-up offers no tools
    assert wrap_up.status == 200
    assert answer == (wrap_up.json["choices"][0]["message"]["content"] or "")


# --- an argument the model got wrong ----------------------------------------------------------------


def test_an_argument_the_model_got_wrong_is_fed_back_not_run(wire: RecordingProxy) -> None:
    """The schema requires ``amount``, which the server's grammar cannot produce: the tool never runs, and
    the next request carries the validation error as the call's result."""
    ran: list[Any] = []
    refund = define_tool(
        name="refund",
        description="Refund an order.",
        # "amount" is required but not among the properties, and no other key is allowed: every call
        # the server's grammar lets the model write misses it
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
            "required": ["city", "amount"],
            "additionalProperties": False,
        },
        execute=lambda args, ctx: ran.append(args) or "refunded",
    )
    agent = (
        Agent.create(
            provider=provider(wire, tool_choice="refund"),
            model=MODEL,
            temperature=0.0,
            max_tokens=16,
            wrap_up_at_max_iterations=False,
        )
        .tool(refund)
        .max_iterations(2)  # call 1 → refused args fed back; call 2 → budget spent, no wrap-up
        .build()
    )
    agent.run("Refund my order.")
    first, second = chat_posts(wire.take())
    [raw_call] = first.json["choices"][0]["message"]["tool_calls"]
    assert "amount" not in json.loads(raw_call["function"]["arguments"])
    assert ran == []
    result = second.body["messages"][2]
    assert result["role"] == "tool" and result["tool_call_id"] == raw_call["id"]
    assert result["content"] == (
        "Invalid arguments for tool 'refund' — the call was not executed.\n"
        "- 'amount' is required but missing\n"
        "Fix the arguments to match the tool's input schema and call it again."
    )
    assert second.status == 200


# --- refusals: context too long, a malformed field -------------------------------------------------


async def test_a_context_too_long_error_is_classified_and_readable(wire: RecordingProxy) -> None:
    """A prompt past n_ctx: one request (no retry), ContextTooLongError, the server's words unmasked by a short key."""
    long_prompt = "apple banana cherry " * 1200  # ~3,600 tokens > 2,048
    with pytest.raises(ContextTooLongError) as info:
        await provider(wire, api_key="x").complete(request(long_prompt))
    [exchange] = chat_posts(wire.take())
    assert exchange.status == 400 and exchange.json["error"]["code"] == "context_length_exceeded"
    message = str(info.value)
    assert message.startswith(f"openai_compatible: the request is too long for model '{MODEL}' at {wire.url}/")
    assert "maximum context length is 2048 tokens" in message  # not "ma***imum conte***t"
    assert message.endswith("shorten the history or system prompt, or use a model with a larger context")


async def test_a_field_the_server_refuses_is_named_and_not_retried(wire: RecordingProxy) -> None:
    """An extra_body field of the wrong type: llama.cpp answers 500 with a validation report; one request only."""
    with pytest.raises(ProviderResponseError) as info:
        await provider(wire, extra_body={"top_k": "many"}).complete(request())
    [exchange] = chat_posts(wire.take())
    assert exchange.status == 500 and exchange.body["top_k"] == "many"
    assert str(info.value).endswith(
        ": 1 validation error: top_k: Input should be a valid integer, unable to parse string as an integer"
        " — the server refused the request's shape (not retried: it would fail again)"
    )
    assert info.value.retries == ()


# --- a cancelled call --------------------------------------------------------------------------------


async def test_a_cancelled_stream_hangs_up_and_the_server_serves_the_next_call(wire: RecordingProxy) -> None:
    """Cancelling a stream after its first token closes the connection; the next call is answered normally."""
    stream = provider(wire).stream(request("Tell me a long story.", max_tokens=200))
    first_token = asyncio.Event()

    async def consume() -> None:
        async for event in stream:
            if isinstance(event, Token):
                first_token.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(first_token.wait(), timeout=TIMEOUT)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wire.hung_up.wait, 60), "the proxy never saw the client hang up"
    after = await provider(wire).complete(request())
    cancelled, answered = chat_posts(wire.take())
    assert cancelled.client_hung_up and cancelled.body["stream"] is True
    assert not cancelled.raw.decode().rstrip().endswith("[DONE]")
    assert answered.status == 200 and after.content == (answered.json["choices"][0]["message"]["content"] or "")


async def test_tool_calls_parse_into_the_contract_shape(wire: RecordingProxy) -> None:
    """A raw tool call as the server sent it becomes exactly one ToolCall with parsed args and the server's id."""
    response = await provider(wire, tool_choice="weather").complete(request("Oslo?", tools=[WEATHER]))
    [exchange] = chat_posts(wire.take())
    [raw] = exchange.json["choices"][0]["message"]["tool_calls"]
    assert response.tool_calls == (
        ToolCall(id=raw["id"], name="weather", args=json.loads(raw["function"]["arguments"])),
    )
    assert response.finish_reason == "tool_use" and response.content == ""
