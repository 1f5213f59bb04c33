"""Structured output on each HTTP provider's real wire, against the local server on 127.0.0.1.

Law of this file: an agent with ``output_schema=`` sends the schema in the provider's own
native field — OpenAI-compatible ``response_format`` (json_schema), Anthropic a forced answer
tool, Ollama ``format`` — with no instruction added to the system prompt; the reply is read
back, validated, and returned as the dict. We pin each exact request body.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent import Agent, define_tool
from agent.providers import ProviderConfigError, anthropic, ollama, openai_compatible

from .wire import Reply, WireServer, sse

SYSTEM = "You answer geography questions."
QUESTION = "Biggest French city?"
SCHEMA: dict[str, Any] = {
    "title": "city",
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
    "required": ["name", "population"],
    "additionalProperties": False,
}
ANSWER = {"name": "Paris", "population": 2100000}
WEATHER_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _agent(provider: Any, **options: Any) -> Any:
    return Agent.create(provider=provider, model="m", output_schema=SCHEMA, **options).system(SYSTEM)


def _openai_reply(content: str) -> Reply:
    return Reply(
        json={
            "model": "gpt-test",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5},
        }
    )


OPENAI_FORMAT = {"type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMA, "strict": True}}


def test_openai_compatible_sends_response_format_and_returns_the_dict(server: WireServer) -> None:
    """The body carries ``response_format`` (strict: the schema is closed); the answer is the dict."""
    server.push(_openai_reply(json.dumps(ANSWER)))
    provider = openai_compatible(f"{server.url}/v1", api_key="sk-test", model="gpt-test")
    assert _agent(provider).build().run(QUESTION) == ANSWER
    (seen,) = server.seen
    assert seen.path == "/v1/chat/completions"
    assert seen.body == {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        "response_format": OPENAI_FORMAT,
    }


def test_openai_compatible_retry_sends_the_reply_and_its_errors_back(server: WireServer) -> None:
    """An invalid reply is answered on the wire: the second body adds it and the correction."""
    server.push(_openai_reply('{"name": "Paris"}'), _openai_reply(json.dumps(ANSWER)))
    provider = openai_compatible(f"{server.url}/v1", api_key="sk-test", model="gpt-test")
    assert _agent(provider).build().run(QUESTION) == ANSWER
    assert server.seen[1].body == {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
            {"role": "assistant", "content": '{"name": "Paris"}'},
            {
                "role": "user",
                "content": "Your reply does not match the required JSON Schema (city):\n"
                "- 'population' is required but missing\n"
                "Reply again with only the corrected JSON value (retry 1 of 2).",
            },
        ],
        "response_format": OPENAI_FORMAT,
    }


def test_openai_compatible_refuses_a_response_format_in_extra_body_too(server: WireServer) -> None:
    """``extra_body`` setting ``response_format`` and an output schema conflict: a clear error, no request."""
    provider = openai_compatible(
        f"{server.url}/v1", api_key="sk-test", model="gpt-test", extra_body={"response_format": {"type": "json_object"}}
    )
    with pytest.raises(ProviderConfigError, match=r"extra_body sets response_format and the agent has an output_sch"):
        _agent(provider).build().run(QUESTION)
    assert server.seen == []


def _anthropic_reply(*blocks: dict[str, Any], stop: str = "tool_use") -> Reply:
    return Reply(
        json={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": list(blocks),
            "stop_reason": stop,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


ANSWER_TOOL = {
    "name": "city",
    "description": "Give your final answer: its input is the answer, in the required shape.",
    "input_schema": SCHEMA,
}


def test_anthropic_forces_the_answer_tool_and_its_input_is_the_answer(server: WireServer) -> None:
    """Alone, the answer tool is forced (``tool_choice`` names it); its input is the answer."""
    server.push(_anthropic_reply({"type": "tool_use", "id": "toolu_1", "name": "city", "input": ANSWER}))
    provider = anthropic(api_key="sk-ant-test", base_url=server.url, model="claude-test")
    agent = _agent(provider).build()
    assert agent.run(QUESTION) == ANSWER
    (seen,) = server.seen
    assert seen.body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": QUESTION}],
        "system": SYSTEM,
        "tools": [ANSWER_TOOL],
        "tool_choice": {"type": "tool", "name": "city"},
    }
    assert agent.last_snapshot().shared_state["llm_latest_tool_calls"] == []


def test_anthropic_with_tools_must_call_one_and_the_answer_tool_ends_the_turn(server: WireServer) -> None:
    """With the agent's tools the choice is ``any``: a real tool runs, then the answer tool answers."""
    server.push(
        _anthropic_reply({"type": "tool_use", "id": "toolu_w", "name": "weather", "input": {"city": "Paris"}}),
        _anthropic_reply({"type": "tool_use", "id": "toolu_a", "name": "city", "input": ANSWER}),
    )
    weather = define_tool(
        name="weather", description="Weather.", input_schema=WEATHER_SCHEMA, execute=lambda a, c: "sunny"
    )
    provider = anthropic(api_key="sk-ant-test", base_url=server.url, model="claude-test")
    assert _agent(provider).tool(weather).build().run(QUESTION) == ANSWER
    assert server.seen[1].body == {
        "model": "claude-test",
        "max_tokens": 4096,
        "messages": [
            {"role": "user", "content": QUESTION},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_w", "name": "weather", "input": {"city": "Paris"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_w", "content": "sunny"}]},
        ],
        "system": SYSTEM,
        "tools": [
            {"name": "weather", "description": "Weather.", "input_schema": WEATHER_SCHEMA},
            ANSWER_TOOL,
        ],
        "tool_choice": {"type": "any"},
    }


def test_anthropic_streamed_answer_tool_is_the_text_and_its_tokens(server: WireServer) -> None:
    """Streaming, the answer tool's JSON pieces are the reply's tokens and its content."""
    pieces = ['{"name": "Paris", ', '"population": 2100000}']
    events = sse(
        {"type": "message_start", "message": {"model": "claude-test", "usage": {"input_tokens": 9}}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "city", "input": {}},
        },
        *(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}},
        {"type": "message_stop"},
    )
    server.push(Reply(sse=events))
    provider = anthropic(api_key="sk-ant-test", base_url=server.url, model="claude-test")
    agent = _agent(provider, stream=True).build()
    tokens: list[str] = []
    agent.on("llm.token", lambda _name, payload: tokens.append(payload["text"]))
    assert agent.run(QUESTION) == ANSWER
    assert tokens == pieces
    assert server.seen[0].body["tool_choice"] == {"type": "tool", "name": "city"}


def test_ollama_sends_the_schema_as_format(server: WireServer) -> None:
    """``/api/chat`` gets the JSON Schema itself in ``format``; the content is the answer."""
    server.push(
        Reply(
            json={
                "model": "llama-test",
                "message": {"role": "assistant", "content": json.dumps(ANSWER)},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 10,
                "eval_count": 5,
            }
        )
    )
    assert _agent(ollama("llama-test", base_url=server.url)).build().run(QUESTION) == ANSWER
    (seen,) = server.seen
    assert seen.path == "/api/chat"
    assert seen.body == {
        "model": "llama-test",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": QUESTION}],
        "stream": False,
        "format": SCHEMA,
    }
