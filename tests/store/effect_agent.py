"""A refund agent whose tool has an effect, run as a separate process by the crash tests.

``python tests/store/effect_agent.py start STORE EFFECT`` records a run and advances it, printing
the run id first; with ``CRASH_AFTER_EFFECT=1`` the refund writes its effect (a row keyed by its
idempotency key in ``refunds``, and one more row in ``raw_calls``) and the process SIGKILLs
itself before the tool returns — between the intent and the receipt. ``advance STORE EFFECT
RUN_ID`` advances the run in a fresh process and prints what it ended in. STORE is a SQLite
path or a PostgreSQL DSN (a signed store when ``EFFECT_STORE_KEY`` is set); the effect table
lives beside the run store (a SQLite file ``STORE.effects``, or the same PostgreSQL schema).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from typing import Any

from agent import Agent, Paused, checkable, define_tool
from agent.providers.types import LLMRequest, LLMResponse, ToolCall
from flowchart.store import PostgresStore, RunStore, SqliteStore


class RefundBot:
    """Refund A-1001 for 129.0 once, then answer with what the tool said (the same in any process)."""

    name = "refund-bot"

    def complete(self, req: LLMRequest) -> LLMResponse:
        """Reply from the messages alone."""
        results = [m["content"] for m in req.messages if m["role"] == "tool"]
        if results:
            return LLMResponse(content=f"Done: {results[-1]}")
        name = os.environ.get("CALL_ID", "call-1")  # a model may name the call differently on a re-run
        call = ToolCall(name, "issue_refund", {"order_id": "A-1001", "amount": 129.0})
        return LLMResponse(content="", tool_calls=(call,), finish_reason="tool_use")


def _effects_db(where: str) -> Any:
    if where.startswith("postgresql://"):
        import psycopg

        db = psycopg.connect(where, autocommit=True)
        db.execute("CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY)")
        db.execute("CREATE TABLE IF NOT EXISTS raw_calls (key TEXT)")
        return db
    db = sqlite3.connect(where + ".effects", isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY)")
    db.execute("CREATE TABLE IF NOT EXISTS raw_calls (key TEXT)")
    return db


def counts(where: str) -> tuple[int, int]:
    """(refunds made, raw calls of the tool) so far."""
    db = _effects_db(where)
    try:
        refunds = db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0]
        raw = db.execute("SELECT COUNT(*) FROM raw_calls").fetchone()[0]
        return int(refunds), int(raw)
    finally:
        db.close()


def store_of(where: str) -> RunStore:
    """The run store at ``where`` — signed with the key in ``EFFECT_STORE_KEY`` when it is set."""
    key = os.environ.get("EFFECT_STORE_KEY")
    signing = key.encode() if key else None
    return PostgresStore(where, key=signing) if where.startswith("postgresql://") else SqliteStore(where, key=signing)


def build(where: str, effect: str) -> Agent:
    """The refund agent with ``effect`` ("idempotent", "unsafe", "checkable", "checkable-raises")."""

    def issue_refund(args: dict[str, Any], ctx: Any) -> str:
        delay = float(os.environ.get("EFFECT_DELAY", "0"))  # the SIGKILL loop's window around the effect
        if os.environ.get("TOOL_STARTED"):
            open(os.environ["TOOL_STARTED"], "a").close()  # tells the SIGKILL loop the tool began
        if delay:
            time.sleep(delay)
        db = _effects_db(where)
        on_conflict = " ON CONFLICT DO NOTHING"
        insert = (
            "INSERT INTO refunds VALUES (%s)" if where.startswith("postgresql://") else "INSERT INTO refunds VALUES (?)"
        )
        db.execute(insert + on_conflict, (ctx.idempotency_key,))
        db.execute(insert.replace("refunds", "raw_calls").replace(" VALUES", " (key) VALUES"), (ctx.idempotency_key,))
        db.close()
        if os.environ.get("CRASH_AFTER_EFFECT") == "1":
            os.kill(os.getpid(), signal.SIGKILL)  # dies between the intent and the receipt
        if delay:
            time.sleep(delay)
        return f"refunded {args['amount']:.2f} on {args['order_id']}"

    def was_it_done(key: str, args: dict[str, Any]) -> str | None:
        if effect == "checkable-raises":
            raise ConnectionError("the payment API is down")
        db = _effects_db(where)
        ask = "SELECT key FROM refunds WHERE key = " + ("%s" if where.startswith("postgresql://") else "?")
        found = db.execute(ask, (key,)).fetchone()
        db.close()
        return f"refunded {args['amount']:.2f} on {args['order_id']}" if found else None

    declared: Any = checkable(was_it_done) if effect.startswith("checkable") else effect
    refund = define_tool(
        name="issue_refund",
        description="Refund an order.",
        input_schema={
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
        execute=issue_refund,
        effect=declared,
    )
    return Agent.create(provider=RefundBot(), store=store_of(where)).tool(refund).build()


def main(argv: list[str]) -> None:
    """``start STORE EFFECT`` or ``advance STORE EFFECT RUN_ID``."""
    from agent._run import durable

    command, where, effect = argv[:3]
    agent = build(where, effect)
    if command == "start":
        run_id = durable.create(agent, durable.make_input("Refund order A-1001"))
        print(run_id, flush=True)
    else:
        run_id = argv[3]
    outcome = durable.advance_now(agent, run_id)
    print("paused" if isinstance(outcome, Paused) else f"done: {outcome}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
