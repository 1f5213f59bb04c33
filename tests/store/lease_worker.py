"""A worker process for the lease tests: ``python lease_worker.py MODE STORE RUN_ID READY_FILE``.

``hold``: hold the lease on RUN_ID (heartbeat on) and sleep; ``advance``: hold the lease and advance
the chart run RUN_ID, whose stage touches READY_FILE and then sleeps 3 s before the commit; prints
``done`` or ``lease lost: ...``. ``agent``: advance the stored refund agent run RUN_ID through
``agent.celery.advance`` (its refund touches READY_FILE, then sleeps). STORE is a SQLite path or
a PostgreSQL DSN.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from flowchart import flow_chart
from flowchart.store import PostgresStore, RunStore, SqliteStore
from flowchart.store.leases import LeaseLostError, held


def store_of(where: str) -> RunStore:
    """The run store at ``where``."""
    return PostgresStore(where) if where.startswith("postgresql://") else SqliteStore(where)


def slow_chart(ready: str) -> Any:
    """Two stages; the second touches ``ready`` then sleeps 3 s."""

    def first(scope: Any) -> None:
        scope.n = 1

    def slow(scope: Any) -> None:
        Path(ready).touch()
        time.sleep(float(os.environ.get("SLOW_SECONDS", "3")))
        scope.n = 2

    return flow_chart("First", first, "first").add_function("Slow", slow, "slow").build()


def refund_agent(where: str, ready: str) -> Any:
    """An agent whose refund tool touches ``ready`` and sleeps 30 s (a worker dies in it)."""
    from agent import Agent, define_tool
    from agent.providers.types import LLMRequest, LLMResponse, ToolCall

    class Bot:
        name = "bot"

        def complete(self, req: LLMRequest) -> LLMResponse:
            if any(m["role"] == "tool" for m in req.messages):
                return LLMResponse(content="refunded")
            return LLMResponse("", (ToolCall("c1", "refund", {}),), finish_reason="tool_use")

    def refund(args: dict[str, Any], ctx: Any) -> str:
        Path(ready).touch()
        time.sleep(float(os.environ.get("REFUND_SLEEP", "30")))
        return "ok"

    tool = define_tool(name="refund", description="Refund.", input_schema={"type": "object"}, execute=refund)
    return Agent.create(provider=Bot(), store=store_of(where)).tool(tool).build()


def main(argv: list[str]) -> None:
    """See the module docstring."""
    mode, where, run_id, ready = argv[:4]
    store = store_of(where)
    if mode == "hold":
        with held(store, run_id, f"holder-{os.getpid()}"):
            Path(ready).touch()
            time.sleep(60)
    elif mode == "advance":
        from flowchart.store.runs import advance_chart

        try:
            with held(store, run_id, f"worker-{os.getpid()}"):
                advance_chart(slow_chart(ready), store, run_id)
            print("done", flush=True)
        except LeaseLostError as exc:
            print(f"lease lost: {exc}", flush=True)
    else:
        from agent.celery import advance

        print(advance(refund_agent(where, ready), run_id), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
