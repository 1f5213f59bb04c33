"""A segment looks for its run's intents in doubt until one of its intents finds none — not once a call.

Real SQLite run stores: the ledger's statements are watched with SQLite's own trace callback on
the ledger's connection; a call in doubt from another worker is planted through a second ledger
object on the same file, as a worker that died would have left it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent import Agent, Paused, define_tool
from agent.providers import LLMResponse, ToolCall, scripted
from flowchart.store import SqliteStore
from flowchart.store.effects import EffectLedger, ledger_of

_LOOK = "SELECT key, body FROM effects WHERE run_id ="


def _adder(ran: list[dict[str, Any]], is_async: bool = False) -> Any:
    def add(args: dict[str, Any], ctx: Any) -> int:
        ran.append(dict(args))
        return int(args["a"]) + int(args["b"])

    async def add_async(args: dict[str, Any], ctx: Any) -> int:
        return add(args, ctx)

    return define_tool(
        name="add",
        description="Add two numbers.",
        input_schema={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
        execute=add_async if is_async else add,
        effect="idempotent",
    )


@pytest.mark.parametrize("is_async", [False, True], ids=["sync tool", "async tool"])
def test_a_segment_of_ten_calls_looks_for_calls_in_doubt_once(tmp_path: Path, is_async: bool) -> None:
    """Ten idempotent calls in one segment (a plain tool, and an async one, which the agent
    dispatches apart): the first intent reads the run's unsettled intents and finds none, so the
    nine after it only insert; every call still has its intent and receipt."""
    store = SqliteStore(str(tmp_path / "runs.db"))
    ran: list[dict[str, Any]] = []
    replies = [
        LLMResponse("", (ToolCall(f"c{n}", "add", {"a": n, "b": 1}),), finish_reason="tool_use") for n in range(10)
    ]
    warm = Agent.create(provider=scripted([*replies[:1], LLMResponse("ok")]), model="m", store=store)
    assert warm.tool(_adder([])).build().run("warm up") == "ok"  # the ledger's connection is made
    statements: list[str] = []
    ledger = ledger_of(store)
    ledger._db.set_trace_callback(statements.append)
    agent = Agent.create(provider=scripted([*replies, LLMResponse("done")]), model="m", store=store)
    built = agent.tool(_adder(ran, is_async)).max_iterations(20).build()
    assert built.run("add ten times") == "done"
    ledger._db.set_trace_callback(None)
    assert len(ran) == 10
    assert sum(s.startswith("INSERT INTO effects") for s in statements) == 10
    assert sum(s.startswith(_LOOK) for s in statements) == 1
    snapshot = built.last_snapshot()
    assert snapshot is not None
    run_id = snapshot.shared_state["tool_effects"][0]["key"].split(":")[0]
    entries = EffectLedger(SqliteStore(str(tmp_path / "runs.db"))).entries(run_id)
    assert [e["receipt"] for e in entries] == [{"result": str(n + 1)} for n in range(10)]


def test_each_segment_looks_again_so_a_call_left_in_doubt_between_segments_is_found(tmp_path: Path) -> None:
    """A run pauses after one call (its segment found nothing in doubt); before it is resumed a
    worker leaves ``add(7, 1)`` in doubt under another call id. The resumed segment looks again:
    its ``add(7, 1)``, named ``c9`` by the model, is the call in doubt — re-sent under its first
    name and key, not sent as a new call."""
    path = tmp_path / "runs.db"
    store = SqliteStore(str(path))
    ran: list[dict[str, Any]] = []
    confirm = define_tool(
        name="confirm",
        description="Ask a person.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: __import__("agent").ask_human({"question": "go on?"}),
    )
    replies = [
        LLMResponse("", (ToolCall("c1", "add", {"a": 1, "b": 1}),), finish_reason="tool_use"),
        LLMResponse("", (ToolCall("c2", "confirm", {}),), finish_reason="tool_use"),
        LLMResponse("", (ToolCall("c9", "add", {"a": 7, "b": 1}),), finish_reason="tool_use"),
        LLMResponse("done"),
    ]
    agent = Agent.create(provider=scripted(replies), model="m", store=store).tool(_adder(ran)).tool(confirm).build()
    paused = agent.run("add, confirm, add")
    assert isinstance(paused, Paused)
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    run_id = snapshot.shared_state["tool_effects"][0]["key"].split(":")[0]
    other = EffectLedger(SqliteStore(str(path)))  # the worker that died after its intent
    body = {"tool": "add", "effect": "idempotent", "tool_call_id": "c3", "iteration": 3}
    assert other.intend(run_id, f"{run_id}:c3", body, {"a": 7, "b": 1}) == (None, [])
    assert agent.resume_run(run_id, "yes") == "done"
    assert ran == [{"a": 1, "b": 1}, {"a": 7, "b": 1}]
    final = agent.last_snapshot()
    assert final is not None
    rows = final.shared_state["tool_effects"]
    assert [(r["tool_call_id"], r["key"], r["outcome"]) for r in rows][-1] == ("c3", f"{run_id}:c3", "re-sent")
    receipts = {e["key"]: e["receipt"] for e in other.entries(run_id)}
    assert receipts[f"{run_id}:c3"] == {"result": "8"}
