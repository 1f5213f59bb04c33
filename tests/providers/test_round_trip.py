"""A tool-calling round trip the way the agent drives it, on each HTTP provider.

The agent's loop is: send the history, get tool calls, append the assistant turn
(``ToolCall.to_dict()``) and one tool result per call, send again, get the answer.
These tests run that loop by hand against the local server and check that the ids the
model chose come back on the wire in each provider's own shape.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from agent.providers import LLMRequest, LLMResponse, anthropic, ollama, openai_compatible

from .wire import Reply, WireServer

TOOLS = [{"name": "weather", "description": "Weather.", "input_schema": {"type": "object"}}]

OPENAI_CALL = {
    "choices": [
        {
            "message": {
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
    ]
}
ANTHROPIC_CALL = {
    "content": [{"type": "tool_use", "id": "toolu_abc", "name": "weather", "input": {"city": "Paris"}}],
    "stop_reason": "tool_use",
}
OLLAMA_CALL = {
    "message": {
        "content": "",
        "tool_calls": [{"function": {"name": "weather", "arguments": {"city": "Paris"}}}],
    },
    "done": True,
}
FINAL = {
    "openai": {"choices": [{"message": {"content": "72F"}, "finish_reason": "stop"}]},
    "anthropic": {"content": [{"type": "text", "text": "72F"}], "stop_reason": "end_turn"},
    "ollama": {"message": {"content": "72F"}, "done": True, "done_reason": "stop"},
}


def tool_result_on_wire(flavour: str, body: dict[str, Any]) -> Any:
    """Where each wire format puts the tool result of the second request."""
    if flavour == "anthropic":
        return body["messages"][2]["content"][0]
    return body["messages"][-1]


CASES: list[tuple[str, Callable[[str], Any], dict[str, Any], str, Any]] = [
    (
        "openai",
        lambda url: openai_compatible(f"{url}/v1"),
        OPENAI_CALL,
        "call_abc",
        {"role": "tool", "tool_call_id": "call_abc", "content": "Paris: 72F"},
    ),
    (
        "anthropic",
        lambda url: anthropic(api_key="k", base_url=url),
        ANTHROPIC_CALL,
        "toolu_abc",
        {"type": "tool_result", "tool_use_id": "toolu_abc", "content": "Paris: 72F"},
    ),
    (
        "ollama",
        lambda url: ollama(base_url=url),
        OLLAMA_CALL,
        "call_1_1",
        {"role": "tool", "content": "Paris: 72F", "tool_name": "weather"},
    ),
]


@pytest.mark.parametrize(("flavour", "factory", "call", "call_id", "result"), CASES)
async def test_tool_round_trip(
    server: WireServer,
    flavour: str,
    factory: Callable[[str], Any],
    call: dict[str, Any],
    call_id: str,
    result: Any,
) -> None:
    """Tool call out, tool result back in, final answer: ids and shapes survive the wire."""
    server.push(Reply(json=call), Reply(json=FINAL[flavour]))
    provider = factory(server.url)
    history: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]

    async def ask() -> LLMResponse:
        outcome = provider.complete(LLMRequest("Be brief.", list(history), TOOLS, "m"))
        return await outcome if inspect.isawaitable(outcome) else outcome  # the agent's idiom

    first = await ask()
    assert first.finish_reason == "tool_use"
    [tool_call] = first.tool_calls
    assert (tool_call.id, tool_call.args) == (call_id, {"city": "Paris"})
    history.append({"role": "assistant", "content": first.content, "tool_calls": [tool_call.to_dict()]})
    history.append(
        {
            "role": "tool",
            "content": "Paris: 72F",
            "tool_call_id": tool_call.id,
            "tool_name": tool_call.name,
        }
    )
    final = await ask()
    assert (final.content, final.finish_reason) == ("72F", "stop")
    assert tool_result_on_wire(flavour, server.seen[1].body) == result
