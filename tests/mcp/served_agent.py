"""An agent served over MCP by ``mcp_server`` (stdio), for the tests: ``python served_agent.py``.

The run store is the SQLite file named by ``$RUNS_DB``. The provider is a tiny rule
(deterministic, no model): a message that says "wipe" calls ``wipe`` (a middleware asks
about it), any other message calls ``refund`` (a check-in holds it); once a tool result
is in the history it answers ``Done: <result>``.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace
from typing import Any

from agent import Agent, define_tool
from agent.mcp import mcp_server
from agent.providers.types import LLMResponse, ToolCall
from flowchart.store import SqliteStore
from governance import allow, ask


class RuleProvider:
    """Calls a tool for the user's message, then answers with the tool's result."""

    name = "rule"

    def complete(self, request: Any) -> LLMResponse:
        results = [m for m in request.messages if m.get("role") == "tool"]
        if results:
            return LLMResponse(content=f"Done: {results[-1]['content']}")
        text = request.messages[0]["content"]
        if "wipe" in text:
            return LLMResponse(
                content="", tool_calls=(ToolCall("w1", "wipe", {"table": "orders"}),), finish_reason="tool_use"
            )
        return LLMResponse(
            content="Refunding.", tool_calls=(ToolCall("r1", "refund", {"order_id": "A1"}),), finish_reason="tool_use"
        )


def guard(call: Any) -> Any:
    return ask("Really wipe a table?") if call.tool_name == "wipe" else allow()


def build_agent(db: str) -> Agent:
    refund = define_tool(
        name="refund",
        description="Refund an order.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        execute=lambda args, ctx: f"refunded {args['order_id']}",
        check_in="always",
    )
    wipe = define_tool(
        name="wipe",
        description="Delete every row of a table.",
        input_schema={"type": "object", "properties": {"table": {"type": "string"}}},
        execute=lambda args, ctx: "wiped",
    )
    return (
        Agent.create(provider=RuleProvider(), model="rule", store=SqliteStore(db))
        .tools([refund, wipe])
        .tool_middleware(SimpleNamespace(name="guard", on_tool_call=guard))
        .build()
    )


if __name__ == "__main__":
    mcp_server(build_agent(os.environ["RUNS_DB"]), name="support").run(sys.argv[1] if len(sys.argv) > 1 else "stdio")
