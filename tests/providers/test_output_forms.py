"""Capabilities decide the wire: the form an agent asks for its answer's shape in, and the fallback.

Law of this file: the agent sends the best form the provider takes — the schema natively
(``response_format`` ``json_schema``), else JSON mode (``{"type": "json_object"}``) with the schema
as an instruction in the system prompt, else the instruction alone — and always validates the
reply. A server that refuses a form (an HTTP 4xx/5xx naming ``response_format``; the 500 below is
the one llama.cpp's server sends, byte for byte) is asked again at once with the next form, and
the model-call commit records which form was used and what was refused. All of it over real HTTP
against the local wire server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agent import Agent
from agent.providers import (
    Capabilities,
    LLMRequest,
    ProviderConfigError,
    ProviderResponseError,
    openai_compatible,
)

from .wire import Reply, WireServer

SYSTEM = "You answer geography questions."
SCHEMA: dict[str, Any] = {
    "title": "city",
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
ANSWER = {"name": "Paris"}
INSTRUCTION = (
    "Give your final answer as one JSON value, with no other text and no code fence, "
    "matching this JSON Schema (city):\n" + json.dumps(SCHEMA, sort_keys=True)
)
INSTRUCTED = f"{SYSTEM}\n\n{INSTRUCTION}"
#: what llama.cpp's server (llama-cpp-python 0.3.36) answers to ``response_format: json_schema``
LLAMA_REFUSAL = Reply(
    status=500,
    json={
        "error": {
            "message": "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
            "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/srv/llama_cpp/server/app.py\", "
            "line 376, in create_chat_completion\n    POST /v1/chat/completions",
            "type": "internal_server_error",
            "param": None,
            "code": None,
        }
    },
)
REFUSED_WORDS = (
    "HTTP 500 from {url}/v1/chat/completions: 1 validation error: response_format.type: Input should be "
    "'text' or 'json_object' — the server refused the request's shape (not retried: it would fail again)"
)


def reply(content: str) -> Reply:
    message = {"role": "assistant", "content": content}
    return Reply(json={"model": "m", "choices": [{"message": message, "finish_reason": "stop"}]})


def agent_on(provider: Any, **options: Any) -> Agent:
    return Agent.create(provider=provider, model="m", output_schema=SCHEMA, **options).system(SYSTEM).build()


def form_commits(agent: Agent) -> list[tuple[str, Any]]:
    """Each commit that wrote ``output_schema_form``: (stage, the value written)."""
    return [
        (c.stage_id, c.overwrite["output_schema_form"])
        for c in agent.last_snapshot().commit_log
        if "output_schema_form" in c.written_keys
    ]


class NoSchemaWrapper:
    """A wrapper around an HTTP provider that takes no schema itself (``structured_output = False``)."""

    name = "wrapped"
    structured_output = False

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def complete(self, req: LLMRequest) -> Any:
        return await self.inner.complete(req)


def test_a_wrapper_declaring_no_structured_output_is_sent_no_json_schema(server: WireServer) -> None:
    """``structured_output = False`` on a wrapper: no ``response_format`` on the wire, the schema is
    in the system prompt, and the reply is still validated (it used to be sent ``json_schema``)."""
    server.push(reply(json.dumps(ANSWER)))
    agent = agent_on(NoSchemaWrapper(openai_compatible(f"{server.url}/v1", model="m")))
    assert agent.run("Biggest French city?") == ANSWER
    [seen] = server.seen
    assert "response_format" not in seen.body
    assert seen.body["messages"][0] == {"role": "system", "content": INSTRUCTED}
    assert form_commits(agent) == [("call-llm", {"form": "instruction"})]


def test_json_mode_capability_sends_json_object_and_the_instruction(server: WireServer) -> None:
    """``capabilities="llama.cpp"`` (JSON mode, no json_schema): ``{"type": "json_object"}`` and the
    instruction in the system prompt; the form is recorded on the first model-call commit."""
    server.push(reply(json.dumps(ANSWER)))
    agent = agent_on(openai_compatible(f"{server.url}/v1", model="m", capabilities="llama.cpp"))
    assert agent.run("Biggest French city?") == ANSWER
    [seen] = server.seen
    assert seen.body["response_format"] == {"type": "json_object"}
    assert seen.body["messages"][0] == {"role": "system", "content": INSTRUCTED}
    assert form_commits(agent) == [("call-llm", {"form": "json_object"})]


def test_native_schema_is_sent_when_the_provider_takes_it(server: WireServer) -> None:
    """The default (OpenAI's capabilities): the schema itself, no instruction; recorded as json_schema."""
    server.push(reply(json.dumps(ANSWER)))
    agent = agent_on(openai_compatible(f"{server.url}/v1", model="m"))
    assert agent.run("Biggest French city?") == ANSWER
    [seen] = server.seen
    assert seen.body["response_format"]["type"] == "json_schema"
    assert seen.body["messages"][0] == {"role": "system", "content": SYSTEM}
    assert form_commits(agent) == [("call-llm", {"form": "json_schema"})]


def test_a_refused_json_schema_is_answered_with_json_mode_once_and_recorded(server: WireServer) -> None:
    """llama.cpp's 500 for ``json_schema``: the same call is asked again at once in JSON mode with the
    instruction; the commit records the form, the refusal (the server's words, no address) and the
    new system prompt; the output retry that follows asks in JSON mode directly (three requests)."""
    server.push(LLAMA_REFUSAL, reply('{"nom": "Paris"}'), reply(json.dumps(ANSWER)))
    agent = agent_on(openai_compatible(f"{server.url}/v1", model="m"))
    assert agent.run("Biggest French city?") == ANSWER
    first, second, third = server.seen
    assert first.body["response_format"]["type"] == "json_schema"
    assert second.body["response_format"] == third.body["response_format"] == {"type": "json_object"}
    assert second.body["messages"][0] == third.body["messages"][0] == {"role": "system", "content": INSTRUCTED}
    error = REFUSED_WORDS.format(url=server.url).split(f"{server.url}/v1/chat/completions: ", 1)[1]
    assert form_commits(agent) == [
        ("call-llm", {"form": "json_object", "refused": [{"form": "json_schema", "status": 500, "error": error}]})
    ]
    state = agent.last_snapshot().shared_state
    assert state["system_prompt"] == INSTRUCTED
    assert len(state["output_schema_retries"]) == 1  # the reply was validated and retried as today
    assert any("after the server refused the better form" in line for line in agent.last_snapshot().narrative)


def test_a_refused_json_mode_falls_to_the_instruction_alone(server: WireServer) -> None:
    """JSON mode refused (a 400 naming ``response_format``): the next request has no
    ``response_format`` at all; both refusals' forms are on record."""
    refusal = Reply(status=400, json={"error": {"message": "response_format is not supported by this model"}})
    server.push(refusal, reply(json.dumps(ANSWER)))
    agent = agent_on(openai_compatible(f"{server.url}/v1", model="m", capabilities={"json_schema": False}))
    assert agent.run("Biggest French city?") == ANSWER
    first, second = server.seen
    assert first.body["response_format"] == {"type": "json_object"}
    assert "response_format" not in second.body and second.body["messages"][0]["content"] == INSTRUCTED
    [(_stage, record)] = form_commits(agent)
    assert record["form"] == "instruction" and [r["form"] for r in record["refused"]] == ["json_object"]
    assert record["refused"][0]["status"] == 400


def test_a_refusal_that_names_no_response_format_is_not_answered_with_another_form(server: WireServer) -> None:
    """Any other 500 fails the run as before: one request, the provider's error."""
    other = Reply(status=500, json={"error": {"message": "1 validation error:\n  {'loc': ('body', 'top_k')}"}})
    server.push(other)
    agent = agent_on(openai_compatible(f"{server.url}/v1", model="m"))
    with pytest.raises(ProviderResponseError, match=r"HTTP 500 from .*top_k"):
        agent.run("Biggest French city?")
    assert len(server.seen) == 1


def test_the_fallback_is_deterministic(server: WireServer) -> None:
    """The same refusal twice on the same server: the two runs' commit logs are identical."""
    logs = []
    for _ in range(2):
        server.push(LLAMA_REFUSAL, reply(json.dumps(ANSWER)))
        agent = agent_on(openai_compatible(f"{server.url}/v1", model="m"))
        assert agent.run("Biggest French city?") == ANSWER
        logs.append(repr([c.to_dict()["trace"] for c in agent.last_snapshot().commit_log]))
    assert logs[0] == logs[1]


def test_capabilities_are_checked_when_the_provider_is_made() -> None:
    """An unknown flag, a flag that is not a bool, a tool_choice the server takes none of: each named."""
    with pytest.raises(ProviderConfigError, match=r"^openai_compatible: capabilities has unknown key\(s\) json"):
        openai_compatible("http://127.0.0.1:1/v1", capabilities={"json": True})
    with pytest.raises(ProviderConfigError, match=r"expected True or False, got 'yes'$"):
        openai_compatible("http://127.0.0.1:1/v1", capabilities={"json_mode": "yes"})
    with pytest.raises(ProviderConfigError, match=r"^openai_compatible: capabilities must be a Capabilities"):
        openai_compatible("http://127.0.0.1:1/v1", capabilities="vllm")
    with pytest.raises(ProviderConfigError, match=r"takes no tool_choice; drop one of them$"):
        openai_compatible("http://127.0.0.1:1/v1", tool_choice="auto", capabilities={"tool_choice": False})


def test_a_server_without_tool_choice_is_sent_none(server: WireServer) -> None:
    """``capabilities={"tool_choice": False}``: tools are offered without a ``tool_choice`` field."""
    server.push(reply("ok"))
    provider = openai_compatible(f"{server.url}/v1", model="m", capabilities=Capabilities(tool_choice=False))
    weather = {"name": "weather", "description": "d", "input_schema": {"type": "object"}}
    req = LLMRequest(None, [{"role": "user", "content": "hi"}], [weather], "m")
    assert asyncio.run(provider.complete(req)).content == "ok"
    assert "tools" in server.seen[0].body and "tool_choice" not in server.seen[0].body
