"""A deterministic refund agent for the durable-run tests, the CLI and the Celery workers.

``RefundBot`` is a provider that answers from the conversation alone (so any process,
any run, gets the same replies): it asks for ``refund(order_id, amount)`` once, then
gives a final answer quoting the tool's result. Refunds over 100 need a check-in, so
every run pauses once. ``REFUNDS`` (or the file named by ``$REFUND_LOG``) records each
refund's idempotency key, so tests can count executions across processes;
``$REFUND_DELAY`` seconds makes the refund slow (the benchmark's payment API).
"""

from __future__ import annotations

import os
import time
from typing import Any

from agent import Agent, define_tool
from agent.providers.types import LLMRequest, LLMResponse, ToolCall
from flowchart import Redaction
from flowchart.store import PostgresStore, RunStore, SqliteStore

REFUNDS: list[str] = []


class RefundBot:
    """A provider: refund first, then answer with what the tool said."""

    def complete(self, req: LLMRequest) -> LLMResponse:
        """Reply to ``req`` from its messages only."""
        tool_results = [m["content"] for m in req.messages if m["role"] == "tool"]
        if tool_results:
            return LLMResponse(content=f"Done: {tool_results[-1]}")
        text = next(m["content"] for m in req.messages if m["role"] == "user")
        amount = float(text.rsplit(" ", 1)[-1]) if text.rsplit(" ", 1)[-1].replace(".", "").isdigit() else 150.0
        return LLMResponse(
            content="", tool_calls=(ToolCall("call-1", "refund", {"order_id": "A-1", "amount": amount}),)
        )


def issue_refund(args: dict[str, Any], ctx: Any) -> str:
    """The refund tool: records its idempotency key, then answers."""
    REFUNDS.append(ctx.idempotency_key)
    log = os.environ.get("REFUND_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(ctx.idempotency_key + "\n")
    time.sleep(float(os.environ.get("REFUND_DELAY", "0")))  # a slow payment API, for the benchmark
    return f"refunded {args['amount']:.2f} on {args['order_id']}"


REFUND = define_tool(
    name="refund",
    description="Refund an order.",
    input_schema={
        "type": "object",
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
        "required": ["order_id", "amount"],
    },
    execute=issue_refund,
    check_in=lambda args, ctx: args["amount"] > 100,
)


def refund_agent(store: RunStore | None = None) -> Agent:
    """The refund agent on ``store`` (default: ``PostgresStore($AGENT_RUNS_DSN)`` or ``SqliteStore($RUNS_DB)``)."""
    if store is None:
        dsn = os.environ.get("AGENT_RUNS_DSN")
        store = PostgresStore(dsn) if dsn else SqliteStore(os.environ["RUNS_DB"])
    return Agent.create(provider=RefundBot(), model="bot", store=store).system("You refund.").tool(REFUND).build()


def redacting_refund_agent(store: RunStore | None = None) -> Agent:
    """The refund agent with a redaction rule that hides the customer's raw message."""
    agent = refund_agent(store)
    agent.redaction = Redaction(keys={"input_message"})
    return agent
