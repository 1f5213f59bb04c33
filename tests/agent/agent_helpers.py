"""Shared builders for the agent tests: scripted replies, tools that count, small agents."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent import Agent, Tool, define_tool
from agent.providers import ScriptedProvider, scripted

CITY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
REFUND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id", "amount"],
}


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    """One scripted tool call ``{"id", "name", "args"}``."""
    return {"id": call_id, "name": name, "args": args}


def calls(*tool_calls: dict[str, Any], content: str = "") -> dict[str, Any]:
    """A scripted reply asking for ``tool_calls`` (with optional text alongside)."""
    return {"content": content, "tool_calls": list(tool_calls)}


class Counter:
    """A tool body that records every execution's args (``runs``) and answers ``answer(args)``."""

    def __init__(self, answer: Callable[[dict[str, Any]], Any] | None = None) -> None:
        self.runs: list[dict[str, Any]] = []
        self.answer = answer or (lambda args: f"ran with {sorted(args.items())}")

    def __call__(self, args: dict[str, Any], ctx: Any) -> Any:
        self.runs.append(dict(args))
        return self.answer(args)


def weather_tool(body: Callable[..., Any] | None = None, **extra: Any) -> Tool:
    """``weather(city)`` answering ``<city>: sunny`` unless another body is given."""
    return define_tool(
        name="weather",
        description="Get current weather for a city.",
        input_schema=CITY_SCHEMA,
        execute=body or (lambda args, ctx: f"{args['city']}: sunny"),
        **extra,
    )


def refund_tool(body: Callable[..., Any] | None = None, **extra: Any) -> Tool:
    """``refund(order_id, amount)`` answering ``refunded <amount> on <order_id>``."""
    return define_tool(
        name="refund",
        description="Refund an order to the customer's card.",
        input_schema=REFUND_SCHEMA,
        execute=body or (lambda args, ctx: f"refunded {args['amount']} on {args['order_id']}"),
        **extra,
    )


def build(
    replies: Sequence[Any],
    *tools: Tool,
    system: str | None = "You help.",
    max_iterations: int | None = None,
    provider: ScriptedProvider | None = None,
    configure: Callable[[Any], Any] | None = None,
    **create: Any,
) -> tuple[Agent, ScriptedProvider]:
    """An agent on ``scripted(replies)`` (or ``provider``) with ``tools``; returns (agent, provider)."""
    provider = provider or scripted(replies)
    builder = Agent.create(provider=provider, model="mock", **create)
    if system is not None:
        builder = builder.system(system)
    for tool in tools:
        builder = builder.tool(tool)
    if max_iterations is not None:
        builder = builder.max_iterations(max_iterations)
    if configure is not None:
        builder = configure(builder)
    return builder.build(), provider


def stage_ids(agent: Agent) -> list[str]:
    """The runtime stage ids of the agent's last run, in commit order."""
    return [c.runtime_stage_id for c in agent.last_snapshot().commit_log]


def tool_messages(history: list[dict[str, Any]]) -> list[str]:
    """The ``content`` of every tool message in ``history``, in order."""
    return [m["content"] for m in history if m["role"] == "tool"]
