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
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, OutputSchemaError, Paused, define_tool
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
from flowchart.store import SqliteStore
from governance import check_in_approved

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


#: where the per-call notes go (``REAL_SERVER_NOTES`` overrides: a shared cache stays untouched)
NOTES = Path(os.environ.get("REAL_SERVER_NOTES") or local_llm.CACHE / "real-server-calls.tsv")


@pytest.fixture(scope="session")
def real_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RecordingProxy]:
    """The llama.cpp server (started once), behind a recording proxy; skipped when not installed."""
    reason = local_llm.status()
    if reason is not None:
        pytest.skip(reason)
    with local_llm.serve(log=tmp_path_factory.mktemp("real-server") / "server.log") as upstream:
        proxy = RecordingProxy(upstream.removesuffix("/v1"))
        yield proxy
        proxy.close()
    # what the run showed: one line per call (test, status, seconds), for the notes in docs/providers.md
    lines = [f"{test}\t{e.status}\t{e.seconds:.1f}s\t{'hung up' if e.client_hung_up else ''}" for test, e in CALLS]
    NOTES.write_text("\n".join(lines) + "\n")


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


# --- tool calls, streamed ---------------------------------------------------------------------------


async def test_a_streamed_tool_call_is_assembled_from_the_servers_fragments(wire: RecordingProxy) -> None:
    """A named tool_choice, streamed: the server sends the call in fragments (every chunk repeating its id
    and name); the provider joins the argument fragments into exactly one ToolCall."""
    stream = provider(wire, tool_choice="weather").stream(request("Oslo?", tools=[WEATHER], max_tokens=24))
    events = [e async for e in stream]
    [exchange] = chat_posts(wire.take())
    assert exchange.body["stream"] is True
    assert exchange.body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}
    chunks = [c for c in exchange.sse_data[:-1] if c.get("choices")]
    parts = [p for c in chunks for p in (c["choices"][0]["delta"].get("tool_calls") or [])]
    assert len(parts) > 1 and exchange.sse_data[-1] == "[DONE]"
    arguments = "".join(p["function"]["arguments"] for p in parts)
    final = events[-1]
    assert isinstance(final, LLMResponse)
    assert final.tool_calls == (ToolCall(id=parts[0]["id"], name="weather", args=json.loads(arguments)),)
    assert final.finish_reason == "tool_use"


def weather_agent(wire: RecordingProxy, **create: Any) -> Agent:
    weather = define_tool(
        name="weather", description=WEATHER["description"], input_schema=CITY, execute=lambda a, c: f"{a['city']}: 3C"
    )
    options = {"temperature": 0.0, "max_tokens": 16, **create}
    provider_options = options.pop("provider_options", {})
    built = Agent.create(provider=provider(wire, **provider_options), model=MODEL, **options).tool(weather)
    return built.max_iterations(1).build()


def test_a_streaming_agent_with_tool_choice_auto_makes_the_tool_call_whole(wire: RecordingProxy) -> None:
    """stream=True, a tool, tool_choice "auto", capabilities not told: the server answers the streamed
    request 200 with an empty stream; the agent asks again without streaming at once and records why;
    a later call offering no tools (the wrap-up) is streamed."""
    agent = weather_agent(wire, stream=True)
    agent.run("Weather in Oslo?")
    empty, whole, *rest = chat_posts(wire.take())
    assert empty.body["stream"] is True and empty.body["tool_choice"] == "auto"
    assert empty.status == 200 and empty.sse_data == []  # what llama.cpp sends: nothing
    assert "stream" not in whole.body and whole.body["tool_choice"] == "auto" and whole.status == 200
    state = agent.last_snapshot().shared_state
    assert state["llm_not_streamed"] == [
        {
            "iteration": 1,
            "reason": "the server answered the streamed request offering tools with an empty stream, "
            "so the call was made again without streaming",
        }
    ]
    if whole.json["choices"][0]["message"].get("tool_calls"):  # the budget is spent: a wrap-up, no tools
        [wrap_up] = rest
        assert wrap_up.body["stream"] is True and "tools" not in wrap_up.body and wrap_up.sse_data[-1] == "[DONE]"


def test_told_the_servers_capabilities_a_streaming_agent_wastes_no_request(wire: RecordingProxy) -> None:
    """``capabilities="llama.cpp"``: the tool-bearing call is made whole at once (no empty stream first)."""
    agent = weather_agent(wire, stream=True, provider_options={"capabilities": "llama.cpp"})
    agent.run("Weather in Oslo?")
    first, *_rest = chat_posts(wire.take())
    assert "stream" not in first.body and first.body["tool_choice"] == "auto" and first.status == 200
    [row] = agent.last_snapshot().shared_state["llm_not_streamed"][:1]
    assert row["reason"].startswith("the provider declares stream_tools=False")


# --- tool_choice auto and none ---------------------------------------------------------------------


@pytest.mark.parametrize("choice", ["auto", "none"])
async def test_tool_choice_auto_and_none_go_on_the_wire_as_given(wire: RecordingProxy, choice: str) -> None:
    """The body carries the choice; the calls parsed are the calls the server sent (none for "none")."""
    response = await provider(wire, tool_choice=choice).complete(request("Weather in Oslo?", tools=[WEATHER]))
    [exchange] = chat_posts(wire.take())
    assert exchange.body["tool_choice"] == choice and exchange.status == 200
    message = exchange.json["choices"][0]["message"]
    raw = message.get("tool_calls") or []
    assert [(c.id, c.name) for c in response.tool_calls] == [(c["id"], c["function"]["name"]) for c in raw]
    if choice == "none":
        assert raw == [] and response.content == (message["content"] or "")


# --- structured output -------------------------------------------------------------------------------

CITY_ANSWER = {"title": "city", "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
CODE_ANSWER = {
    "title": "code",
    "type": "object",
    "properties": {"zz_code": {"type": "string", "enum": ["x9q"]}},
    "required": ["zz_code"],
    "additionalProperties": False,
}
LLAMA_REFUSAL_WORDS = (
    "1 validation error: response_format.type: Input should be 'text' or 'json_object' — the server "
    "refused the request's shape (not retried: it would fail again)"
)


def test_structured_output_falls_back_to_json_mode_and_the_reply_is_validated(wire: RecordingProxy) -> None:
    """The best form (json_schema) is refused with llama.cpp's 500 naming response_format; the same call
    is asked again at once in JSON mode with the schema in the system prompt; the reply is the answer,
    validated; the refusal is on the model-call commit."""
    agent = (
        Agent.create(provider=provider(wire), model=MODEL, temperature=0.0, max_tokens=40, output_schema=CITY_ANSWER)
        .system("Be brief.")
        .build()
    )
    answer = agent.run("Biggest French city?")
    refused, answered = chat_posts(wire.take())
    assert refused.status == 500 and refused.body["response_format"]["type"] == "json_schema"
    assert "Input should be 'text' or 'json_object'" in refused.json["error"]["message"]
    assert answered.status == 200 and answered.body["response_format"] == {"type": "json_object"}
    assert answered.body["messages"][0]["content"].startswith("Be brief.\n\nGive your final answer as one JSON value")
    assert answer == json.loads(answered.json["choices"][0]["message"]["content"])
    state = agent.last_snapshot().shared_state
    assert state["output_schema_form"] == {
        "form": "json_object",
        "refused": [{"form": "json_schema", "status": 500, "error": LLAMA_REFUSAL_WORDS}],
    }
    assert "output_schema_retries" not in state


def test_an_invalid_structured_reply_is_sent_back_with_what_was_wrong(wire: RecordingProxy) -> None:
    """Told the server's capabilities: JSON mode from the first call. A schema the model's JSON does not
    meet: the reply goes back with the problems (retry 1 of 1), then the run ends in OutputSchemaError."""
    agent = Agent.create(
        provider=provider(wire, capabilities="llama.cpp"),
        model=MODEL,
        temperature=0.0,
        max_tokens=24,
        output_schema=CODE_ANSWER,
        output_retries=1,
    ).build()
    with pytest.raises(OutputSchemaError, match=r"^the model's reply does not match the output schema after 1 retry"):
        agent.run("Biggest French city?")
    first, second = chat_posts(wire.take())
    assert first.body["response_format"] == second.body["response_format"] == {"type": "json_object"}
    reply = first.json["choices"][0]["message"]["content"] or ""
    assistant, correction = second.body["messages"][-2:]
    assert assistant == {"role": "assistant", "content": reply}
    assert correction["content"].startswith("Your reply does not match the required JSON Schema (code):\n- ")
    assert correction["content"].endswith("Reply again with only the corrected JSON value (retry 1 of 1).")
    state = agent.last_snapshot().shared_state
    assert state["output_schema_form"] == {"form": "json_object"}
    assert [row["retry"] for row in state["output_schema_retries"]] == [1]


# --- a conversation of three turns --------------------------------------------------------------------


def test_a_conversation_of_three_turns_sends_every_earlier_turn(wire: RecordingProxy) -> None:
    """Turn 3's body holds the system prompt, turns 1 and 2 (each user message and the answer the server
    gave, as it gave it), then the new message."""
    agent = Agent.create(provider=provider(wire), model=MODEL, temperature=0.0, max_tokens=12).system("Be brief.")
    built = agent.build()
    built.run("Hi, I am Ada.", conversation="c-real")
    built.follow_up("What is two plus two?")
    built.follow_up("What is my name?")
    posts = chat_posts(wire.take())
    assert len(posts) == 3 and all(p.status == 200 for p in posts)
    said = [p.json["choices"][0]["message"]["content"] or "" for p in posts[:2]]
    assert posts[2].body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi, I am Ada."},
        {"role": "assistant", "content": said[0]},
        {"role": "user", "content": "What is two plus two?"},
        {"role": "assistant", "content": said[1]},
        {"role": "user", "content": "What is my name?"},
    ]


def test_per_call_costs_sum_exactly_to_the_usage_the_server_reported(wire: RecordingProxy) -> None:
    """Two turns against the real server with a price for its model: each model-call row holds
    the usage the server's JSON reported, and the rows' costs sum exactly to the run's total."""
    from decimal import Decimal

    from agent import Price

    price = Price(input_per_mtok="0.15", output_per_mtok="0.60")
    built = Agent.create(
        provider=provider(wire), model=MODEL, temperature=0.0, max_tokens=8, pricing={MODEL: price}
    ).build()
    rows = []
    for text in ("Say hi.", "Say bye."):
        built.run(text)
        snapshot = built.last_snapshot()
        assert snapshot is not None
        rows.extend(snapshot.calls)
        assert Decimal(snapshot.cost["usd"]) == sum(Decimal(r["cost_usd"]) for r in snapshot.calls)
    posts = chat_posts(wire.take())
    reported = [p.json["usage"] for p in posts]
    assert [(r["usage"]["input_tokens"], r["usage"]["output_tokens"]) for r in rows] == [
        (u["prompt_tokens"], u["completion_tokens"]) for u in reported
    ]
    expected = [
        (Decimal(u["prompt_tokens"]) * Decimal("0.15") + Decimal(u["completion_tokens"]) * Decimal("0.60"))
        / Decimal(10**6)
        for u in reported
    ]
    assert [Decimal(r["cost_usd"]) for r in rows] == expected


# --- a check-in resumed in a fresh process ---------------------------------------------------------


def checkin_agent(url: str, db: str) -> Agent:
    """The refund agent both processes build: the refund (tool_choice names it) always checks in."""
    refund = define_tool(
        name="refund",
        description="Refund an order.",
        input_schema=CITY,
        execute=lambda args, ctx: f"refunded the {args['city']} order",
        check_in="always",
    )
    made = openai_compatible(url, model=MODEL, timeout=TIMEOUT, tool_choice="refund")
    built = Agent.create(provider=made, model=MODEL, temperature=0.0, max_tokens=16, store=SqliteStore(db))
    return built.tool(refund).max_iterations(2).build()


def resume_in_fresh_process(url: str, db: str, run_id: str, request_id: str) -> None:
    """What the second process runs: a freshly built agent answers the stored pause by its id."""
    decision = check_in_approved(request={"id": request_id}, by="ada", at="2026-12-01T00:00:00Z")
    checkin_agent(url, db).resume_run(run_id, decision)


def test_a_check_in_is_resumed_in_a_fresh_process(wire: RecordingProxy, tmp_path: Path) -> None:
    """The run pauses on the refund's check-in; another Python process resumes the stored run: its first
    request carries the refund's result paired with the id the server gave; the store says done, ada."""
    db = str(tmp_path / "runs.db")
    paused = checkin_agent(wire.url, db).run("Refund my Paris order.")
    assert isinstance(paused, Paused) and paused.check_in is not None
    [asked] = chat_posts(wire.take())
    [raw_call] = asked.json["choices"][0]["message"]["tool_calls"]
    code = (
        "from tests.providers.test_real_server import resume_in_fresh_process; "
        f"resume_in_fresh_process({wire.url!r}, {db!r}, {paused.run_id!r}, {paused.check_in.id!r})"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    after = chat_posts(wire.take())
    assert after[0].status == 200
    args = json.loads(raw_call["function"]["arguments"])
    assert after[0].body["messages"][-1] == {
        "role": "tool",
        "tool_call_id": raw_call["id"],
        "content": f"refunded the {args['city']} order",
    }
    record = SqliteStore(db).get(paused.run_id)
    assert record.status == "done"
    [rows] = [c.overwrite["human_decisions"] for c in record.commit_log if "human_decisions" in c.written_keys]
    assert [(row["by"], row["approved"]) for row in rows] == [("ada", True)]


# --- cancel mid-stream --------------------------------------------------------------------------------


def test_leaving_an_agent_stream_mid_answer_hangs_up_and_records_the_cancel(
    wire: RecordingProxy, tmp_path: Path
) -> None:
    """``break`` after the first token: the connection to the server is closed mid-answer (no [DONE]) and the
    stored run is failed with the consumer's cancellation during call-llm."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = Agent.create(
        provider=provider(wire), model=MODEL, temperature=0.0, max_tokens=200, stream=True, store=store
    ).build()
    with agent.stream("Tell me a long story.", modes="messages") as events:
        for event in events:
            if event.kind == "token":
                break
    assert wire.hung_up.wait(60), "the proxy never saw the client hang up"
    [cancelled] = chat_posts(wire.take())
    assert cancelled.client_hung_up and cancelled.body["stream"] is True
    assert not cancelled.raw.decode().rstrip().endswith("[DONE]")
    [record] = store.list()
    assert record.status == "failed"
    assert record.error.startswith(
        "RunCancelledError: the run was cancelled by the stream's consumer during stage 'call-llm"
    )
