"""The real ``Agent`` on each HTTP provider, against the local wire server on 127.0.0.1.

Law of this file: only the provider line changes between the scripted tests and these.
For ``openai_compatible``, ``anthropic`` and ``ollama`` the model asks for ``weather``,
the agent runs it, sends the result back in the provider's own wire shape, and the model
answers — plain JSON and streamed (SSE / NDJSON). We pin the exact second request body,
the usage totals, the ``llm.token`` events, retries committed to the trace
(``llm_retries``, absent when there were none), and the run timeout cancelling a call
in flight (``RunTimeoutError`` naming ``call-llm``, the connection closed).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable
from typing import Any

import attrs
import httpx  # imported up front: the run timeout below should race the server, not this import
import pytest

from agent import Agent, AgentBuildError, define_tool
from agent.providers import ProviderError, anthropic, ollama, openai_compatible, scripted
from flowchart import RunTimeoutError

from .wire import Reply, Sleeps, WireServer, sse

SYSTEM = "You answer weather questions."
QUESTION = "Weather in Paris?"
ANSWER_PARTS = ("It is ", "72F ", "in Paris.")
ANSWER = "".join(ANSWER_PARTS)
CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
DESCRIPTION = "Get current weather for a city."
# usage of the first (tool call) and second (answer) model calls
FIRST_USAGE, SECOND_USAGE = (10, 5), (20, 7)


@attrs.frozen
class Flavour:
    """One provider's side of the round trip: how to build it and what the wire carries."""

    name: str
    make: Callable[..., Any]  # make(url, **provider_options)
    path: str
    call_id: str  # the id the agent pairs the tool result with
    tool_call: Reply  # first answer, JSON
    answer: Reply  # second answer, JSON
    tool_call_stream: Reply
    answer_stream: Reply
    second_body: Callable[[bool], dict[str, Any]]  # the exact second request body, by stream flag


# --- openai_compatible ------------------------------------------------------------------------


def _openai_body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_abc", "content": "Paris: 72F"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "weather", "description": DESCRIPTION, "parameters": CITY_SCHEMA},
            }
        ],
        "tool_choice": "auto",
    }
    if stream:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    return body


def _openai_usage(usage: tuple[int, int]) -> dict[str, int]:
    return {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}


def _openai_delta(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"model": "gpt-test", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


OPENAI = Flavour(
    name="openai_compatible",
    make=lambda url, **options: openai_compatible(f"{url}/v1", api_key="sk-test", model="gpt-test", **options),
    path="/v1/chat/completions",
    call_id="call_abc",
    tool_call=Reply(
        json={
            "model": "gpt-test",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_abc",
                                "type": "function",
                                "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
            "usage": _openai_usage(FIRST_USAGE),
        }
    ),
    answer=Reply(
        json={
            "model": "gpt-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
            "usage": _openai_usage(SECOND_USAGE),
        }
    ),
    tool_call_stream=Reply(
        sse=sse(
            _openai_delta(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_abc",
                            "type": "function",
                            "function": {"name": "weather", "arguments": ""},
                        }
                    ],
                }
            ),
            _openai_delta({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
            _openai_delta({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            _openai_delta({}, "tool_calls"),
            {"model": "gpt-test", "choices": [], "usage": _openai_usage(FIRST_USAGE)},
            "[DONE]",
        )
    ),
    answer_stream=Reply(
        sse=sse(
            *(_openai_delta({"content": part}) for part in ANSWER_PARTS),
            _openai_delta({}, "stop"),
            {"model": "gpt-test", "choices": [], "usage": _openai_usage(SECOND_USAGE)},
            "[DONE]",
        )
    ),
    second_body=_openai_body,
)


# --- anthropic --------------------------------------------------------------------------------


def _anthropic_body(stream: bool) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 4096,
        "system": SYSTEM,
        "messages": [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_abc", "name": "weather", "input": {"city": "Paris"}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_abc", "content": "Paris: 72F"}],
            },
        ],
        "tools": [{"name": "weather", "description": DESCRIPTION, "input_schema": CITY_SCHEMA}],
    }
    if stream:
        body["stream"] = True
    return body


def _anthropic_start(usage: tuple[int, int]) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {"model": "claude-test", "usage": {"input_tokens": usage[0], "output_tokens": 1}},
    }


def _anthropic_end(reason: str, usage: tuple[int, int]) -> tuple[dict[str, Any], ...]:
    return (
        {"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": usage[1]}},
        {"type": "message_stop"},
    )


ANTHROPIC = Flavour(
    name="anthropic",
    make=lambda url, **options: anthropic(api_key="sk-ant-test", base_url=url, model="claude-test", **options),
    path="/v1/messages",
    call_id="toolu_abc",
    tool_call=Reply(
        json={
            "model": "claude-test",
            "content": [{"type": "tool_use", "id": "toolu_abc", "name": "weather", "input": {"city": "Paris"}}],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": FIRST_USAGE[0], "output_tokens": FIRST_USAGE[1]},
        }
    ),
    answer=Reply(
        json={
            "model": "claude-test",
            "content": [{"type": "text", "text": ANSWER}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": SECOND_USAGE[0], "output_tokens": SECOND_USAGE[1]},
        }
    ),
    tool_call_stream=Reply(
        sse=sse(
            _anthropic_start(FIRST_USAGE),
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_abc", "name": "weather", "input": {}},
            },
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": ""}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
            },
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '"Paris"}'},
            },
            {"type": "content_block_stop", "index": 0},
            *_anthropic_end("tool_use", FIRST_USAGE),
            event_names=True,
        )
    ),
    answer_stream=Reply(
        sse=sse(
            _anthropic_start(SECOND_USAGE),
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "ping"},
            *(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": part}}
                for part in ANSWER_PARTS
            ),
            {"type": "content_block_stop", "index": 0},
            *_anthropic_end("end_turn", SECOND_USAGE),
            event_names=True,
        )
    ),
    second_body=_anthropic_body,
)


# --- ollama -----------------------------------------------------------------------------------


def _ollama_body(stream: bool) -> dict[str, Any]:
    return {
        "model": "llama-test",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}],
            },
            {"role": "tool", "content": "Paris: 72F", "tool_name": "weather"},
        ],
        "stream": stream,
        "tools": [
            {
                "type": "function",
                "function": {"name": "weather", "description": DESCRIPTION, "parameters": CITY_SCHEMA},
            }
        ],
    }


def _ollama_done(usage: tuple[int, int], content: str = "") -> dict[str, Any]:
    return {
        "model": "llama-test",
        "message": {"role": "assistant", "content": content},
        "done": True,
        "done_reason": "stop",
        "prompt_eval_count": usage[0],
        "eval_count": usage[1],
    }


OLLAMA_CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}],
}

OLLAMA = Flavour(
    name="ollama",
    make=lambda url, **options: ollama("llama-test", base_url=url, **options),
    path="/api/chat",
    call_id="call_1_1",  # Ollama sends no ids: minted from the number of messages sent (1)
    tool_call=Reply(json={**_ollama_done(FIRST_USAGE), "message": OLLAMA_CALL}),
    answer=Reply(json=_ollama_done(SECOND_USAGE, ANSWER)),
    tool_call_stream=Reply(
        ndjson=(
            {"model": "llama-test", "message": OLLAMA_CALL, "done": False},
            _ollama_done(FIRST_USAGE),
        )
    ),
    answer_stream=Reply(
        ndjson=(
            *(
                {"model": "llama-test", "message": {"role": "assistant", "content": part}, "done": False}
                for part in ANSWER_PARTS
            ),
            _ollama_done(SECOND_USAGE),
        )
    ),
    second_body=_ollama_body,
)

FLAVOURS = [pytest.param(f, id=f.name) for f in (OPENAI, ANTHROPIC, OLLAMA)]


# --- helpers ----------------------------------------------------------------------------------


class WeatherTool:
    """The ``weather`` tool body: records the args it ran with, answers ``Paris: 72F``."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def __call__(self, args: dict[str, Any], ctx: Any) -> str:
        self.runs.append(dict(args))
        return f"{args['city']}: 72F"


def build_agent(provider: Any, body: WeatherTool, **create: Any) -> Agent:
    """A one-tool weather agent on ``provider`` (the only line that differs from the scripted tests)."""
    weather = define_tool(name="weather", description=DESCRIPTION, input_schema=CITY_SCHEMA, execute=body)
    return (
        Agent.create(provider=provider, model="unused-by-http-providers", **create).system(SYSTEM).tool(weather).build()
    )


def ops_at(agent: Agent, key: str) -> list[tuple[str, dict[str, Any]]]:
    """Every committed op touching ``key``, as ``(stage_id, op)``, in commit order."""
    return [
        (commit["stage_id"], op)
        for commit in (c.to_dict() for c in agent.last_snapshot().commit_log)
        for op in commit["trace"]
        if op["path"][:1] == [key]
    ]


# --- the round trip ---------------------------------------------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_agent_round_trip(server: WireServer, flavour: Flavour) -> None:
    """Tool call, tool run, tool result back in the provider's wire shape, final answer, usage summed."""
    server.push(flavour.tool_call, flavour.answer)
    body = WeatherTool()
    agent = build_agent(flavour.make(server.url), body)

    assert agent.run(QUESTION) == ANSWER
    assert body.runs == [{"city": "Paris"}]
    assert [(seen.method, seen.path) for seen in server.seen] == [("POST", flavour.path)] * 2
    assert server.seen[1].body == flavour.second_body(False)
    state = agent.last_snapshot().shared_state
    assert (state["total_input_tokens"], state["total_output_tokens"]) == (30, 12)
    assert state["history"][-1] == {
        "role": "tool",
        "content": "Paris: 72F",
        "tool_call_id": flavour.call_id,
        "tool_name": "weather",
    }
    assert "llm_retries" not in state and ops_at(agent, "llm_retries") == []  # no retry, no key


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_agent_round_trip_streamed(server: WireServer, flavour: Flavour) -> None:
    """``stream=True``: the same round trip over SSE / NDJSON; each text piece is an ``llm.token`` event."""
    server.push(flavour.tool_call_stream, flavour.answer_stream)
    body = WeatherTool()
    agent = build_agent(flavour.make(server.url), body, stream=True)
    tokens: list[dict[str, Any]] = []
    agent.on("llm.token", lambda _name, payload: tokens.append(payload))

    assert agent.run(QUESTION) == ANSWER
    assert body.runs == [{"city": "Paris"}]
    assert server.seen[1].body == flavour.second_body(True)
    assert tokens == [{"iteration": 2, "index": i, "text": part} for i, part in enumerate(ANSWER_PARTS)]
    state = agent.last_snapshot().shared_state
    assert (state["total_input_tokens"], state["total_output_tokens"]) == (30, 12)
    assert state["history"][-1]["tool_call_id"] == flavour.call_id


def test_first_request_carries_headers_and_no_tool_result(server: WireServer) -> None:
    """The agent's first call on the wire: key header, system prompt, question, tools — nothing else."""
    server.push(ANTHROPIC.tool_call, ANTHROPIC.answer)
    build_agent(ANTHROPIC.make(server.url), WeatherTool()).run(QUESTION)
    first = server.seen[0]
    assert (first.headers["x-api-key"], first.headers["anthropic-version"]) == ("sk-ant-test", "2023-06-01")
    assert first.body == {**_anthropic_body(False), "messages": [{"role": "user", "content": QUESTION}]}


# --- retries in the trace ---------------------------------------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_retry_is_committed_to_the_trace(server: WireServer, sleeps: Sleeps, flavour: Flavour) -> None:
    """A 429 then success: the run goes on, and ``call-llm`` commits the retry under ``llm_retries``."""
    server.push(Reply(status=429, json={"error": {"message": "slow down"}}), flavour.tool_call, flavour.answer)
    agent = build_agent(flavour.make(server.url, sleep=sleeps), WeatherTool())

    assert agent.run(QUESTION) == ANSWER
    assert sleeps.delays == [0.5]
    assert len(server.seen) == 3 and server.seen[0].body == server.seen[1].body
    expected = [{"iteration": 1, "attempt": 1, "reason": "HTTP 429", "delay": 0.5}]
    assert ops_at(agent, "llm_retries") == [("call-llm", {"path": ["llm_retries"], "verb": "set", "value": expected})]
    assert agent.last_snapshot().shared_state["llm_retries"] == expected


def test_retries_of_several_calls_append_to_one_log(server: WireServer, sleeps: Sleeps) -> None:
    """Retries of later calls are appended, each row naming the iteration whose call was retried."""
    server.push(
        Reply(status=503, json={}, headers=(("retry-after", "2"),)),
        OPENAI.tool_call,
        Reply(drop=True),
        Reply(status=429, json={}),
        OPENAI.answer,
    )
    agent = build_agent(OPENAI.make(server.url, sleep=sleeps), WeatherTool())

    assert agent.run(QUESTION) == ANSWER
    rows = agent.last_snapshot().shared_state["llm_retries"]
    assert [(r["iteration"], r["attempt"], r["reason"].split(" (")[0], r["delay"]) for r in rows] == [
        (1, 1, "HTTP 503", 2.0),
        (2, 1, "connection reset", 0.5),
        (2, 2, "HTTP 429", 1.0),
    ]
    assert [stage for stage, _op in ops_at(agent, "llm_retries")] == ["call-llm", "call-llm"]


# --- cancellation through the run's timeout ---------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_run_timeout_cancels_the_call_in_flight(server: WireServer, flavour: Flavour, stream: bool) -> None:
    """A server slower than ``timeout``: ``RunTimeoutError`` names call-llm, no httpx chain, the socket is closed."""
    server.push(attrs.evolve(flavour.answer, delay=10.0))
    agent = build_agent(flavour.make(server.url), WeatherTool(), timeout=0.5, stream=stream)

    started = time.monotonic()
    with pytest.raises(RunTimeoutError, match=r"^Run timed out after 0\.5 s in stage 'call-llm'$") as info:
        agent.run(QUESTION)
    assert time.monotonic() - started < 3.0
    error = info.value
    assert error.stage_id == "call-llm" and not isinstance(error, ProviderError | httpx.HTTPError)
    assert error.__cause__ is None and error.__suppress_context__
    assert "httpx" not in "".join(traceback.format_exception(error))
    assert server.wait_for_hangup(), "the server never saw the connection closed"
    assert server.hung_up == [flavour.path]


def test_timeout_is_refused_at_build_unless_positive() -> None:
    """``Agent.create(timeout=...)`` takes a positive number of seconds, or None."""
    for bad in (0, -1.5, "30", True):
        with pytest.raises(AgentBuildError, match=r"^Agent\.create\(timeout=\.\.\.\): expected a positive number"):
            build_agent(scripted(["hi"]), WeatherTool(), timeout=bad)


def test_timeout_on_a_synchronous_provider_runs_normally() -> None:
    """A timeout with the scripted (synchronous) provider: the run gets an event loop and answers."""
    provider = scripted([{"tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}]}, ANSWER])
    agent = build_agent(provider, WeatherTool(), timeout=5)
    assert agent.needs_event_loop and not agent.config.needs_event_loop
    assert agent.run(QUESTION) == ANSWER
    assert provider.requests[1].messages[-1]["content"] == "Paris: 72F"
