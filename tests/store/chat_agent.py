"""A deterministic chat agent for the conversation tests and benchmark.

``Recall`` is a provider that answers from the messages it is sent alone (so any process
gets the same replies): ``weather in CITY`` asks for ``weather(city)`` once, a tool
result is answered ``It is <result>``, anything else ``reply N (saw M messages)`` — N
the user messages it was sent, so a test sees how much history arrived. Every request is
kept in ``requests``. Weather in Paris needs a check-in (the turn pauses).
"""

from __future__ import annotations

import time
from typing import Any

from agent import Agent, define_tool
from agent.providers.types import LLMRequest, LLMResponse, ToolCall
from flowchart.store import RunStore


class Recall:
    """A provider replying from the conversation it is sent."""

    name = "recall"

    def __init__(self, delay: float = 0.0) -> None:
        self.requests: list[LLMRequest] = []
        self.delay = delay

    def complete(self, req: LLMRequest) -> LLMResponse:
        """Reply to ``req`` from its messages only."""
        self.requests.append(req)
        time.sleep(self.delay)
        messages = req.messages
        last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
        text, tail = messages[last_user]["content"], messages[last_user + 1 :]
        if tail and tail[-1]["role"] == "tool":
            return LLMResponse(content=f"It is {tail[-1]['content']}")
        if text.startswith("weather in "):
            call = ToolCall(f"call-{len(messages)}", "weather", {"city": text.removeprefix("weather in ")})
            return LLMResponse(content="", tool_calls=(call,))
        users = sum(1 for m in messages if m["role"] == "user")
        return LLMResponse(content=f"reply {users} (saw {len(messages)} messages)")


def weather(args: dict[str, Any], ctx: Any) -> str:
    """The weather tool: sunny everywhere."""
    return f"sunny in {args['city']}"


WEATHER = define_tool(
    name="weather",
    description="The weather in a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    execute=weather,
    check_in=lambda args, ctx: args["city"] == "Paris",
)


def chat_agent(store: RunStore | None = None, provider: Recall | None = None, **create: Any) -> Agent:
    """The chat agent on ``store`` (in memory when ``None``)."""
    return (
        Agent.create(provider=provider or Recall(), model="recall", store=store, **create)
        .system("You chat.")
        .tool(WEATHER)
        .build()
    )
