"""An idempotent call's receipt rides on the ledger's next write; an intent never waits.

Real SQLite run stores and real processes: what one ledger object keeps for later is seen by
another connection only once it is written — with the next intent, at the segment's end, or at
the process's normal exit — and a process that dies first leaves the call in doubt.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agent import Agent, define_tool
from agent.providers import LLMResponse, ToolCall, scripted
from flowchart.store import SqliteStore
from flowchart.store.effects import EffectLedger, ledger_of

ROOT = Path(__file__).parent.parent.parent


def _fresh_view(path: Path, run_id: str) -> list[dict[str, Any]]:
    """The ledger's rows as another process would read them (a new store, a new connection)."""
    return EffectLedger(SqliteStore(str(path))).entries(run_id)


def test_an_intent_is_written_before_the_tool_runs_and_a_receipt_with_the_next_intent(tmp_path: Path) -> None:
    """Inside the second call of an idempotent tool, a fresh connection sees both intents and the
    first call's receipt (written in the second intent's transaction), not yet the second's;
    when the run's segment ends every receipt is written."""
    path = tmp_path / "runs.db"
    seen: list[list[tuple[str, Any]]] = []

    def add(args: dict[str, Any], ctx: Any) -> int:
        run_id = ctx.idempotency_key.split(":")[0]
        seen.append([(row["body"]["tool_call_id"], row["receipt"]) for row in _fresh_view(path, run_id)])
        return int(args["a"]) + 1

    tool = define_tool(
        name="add",
        description="Add one.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        execute=add,
        effect="idempotent",
    )
    replies = [
        LLMResponse("", (ToolCall("c1", "add", {"a": 1}),), finish_reason="tool_use"),
        LLMResponse("", (ToolCall("c2", "add", {"a": 2}),), finish_reason="tool_use"),
        LLMResponse("done"),
    ]
    agent = Agent.create(provider=scripted(replies), model="m", store=SqliteStore(str(path))).tool(tool).build()
    assert agent.run("add") == "done"
    assert seen == [[("c1", None)], [("c1", {"result": "2"}), ("c2", None)]]
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    run_id = snapshot.shared_state["tool_effects"][0]["key"].split(":")[0]
    assert [row["receipt"] for row in _fresh_view(path, run_id)] == [{"result": "2"}, {"result": "3"}]


_CHILD = """
import os, sys
from flowchart.store import SqliteStore
from flowchart.store.effects import ledger_of
ledger = ledger_of(SqliteStore(sys.argv[1]))
ledger.intend("r-1", "r-1:c1", {"tool": "add", "effect": "idempotent", "tool_call_id": "c1", "iteration": 1}, {})
ledger.settle_later("r-1", "r-1:c1", {"result": "2"})
if sys.argv[2] == "die":
    os._exit(0)  # no exit handlers: as a SIGKILL after the tool returned
"""


def test_a_receipt_kept_for_later_is_written_at_exit_and_lost_only_with_the_process(tmp_path: Path) -> None:
    """A process that ends normally writes the receipts it kept (the call is settled); one that
    dies before leaves the call in doubt (an intent without a receipt), never a receipt without
    its intent."""
    for how, receipt in (("exit", {"result": "2"}), ("die", None)):
        path = tmp_path / f"{how}.db"
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), how], capture_output=True, text=True, cwd=ROOT, timeout=60
        )
        assert done.returncode == 0, done.stderr
        [row] = _fresh_view(path, "r-1")
        assert row["receipt"] == receipt, how


def test_flush_writes_what_settle_later_kept_and_the_first_receipt_stands(tmp_path: Path) -> None:
    """``flush`` writes the kept receipts in one transaction; a kept receipt never overwrites one
    already written (the first stands); a ledger with nothing kept writes nothing."""
    store = SqliteStore(str(tmp_path / "runs.db"))
    ledger = ledger_of(store)
    body = {"tool": "add", "effect": "idempotent", "tool_call_id": "c1", "iteration": 1}
    ledger.flush()
    assert ledger.intend("r-1", "r-1:c1", body, {}) == (None, [])
    ledger.settle("r-1", "r-1:c1", {"result": "first"})
    ledger.settle_later("r-1", "r-1:c1", {"result": "second"})
    assert _fresh_view(tmp_path / "runs.db", "r-1")[0]["receipt"] == {"result": "first"}
    ledger.flush()
    assert _fresh_view(tmp_path / "runs.db", "r-1")[0]["receipt"] == {"result": "first"}
    found, others = ledger.intend("r-1", "r-1:c1", body, {})
    assert found is not None and found["receipt"] == {"result": "first"} and others == []


def test_the_memory_ledger_returns_a_runs_unsettled_intents_as_a_stores_does(tmp_path: Path) -> None:
    """The memory ledger and a SQLite store's ledger answer alike: a new intent comes back with
    the run's other intents that have no receipt (not another run's, not settled ones), a
    reopened one is unsettled again, and an intent on a known key returns its row. (Each call has
    its own arguments: in a store's ledger an intent with the tool and arguments of an unsettled
    one is that call renamed — ``test_store_effect_renamed.py``.)"""
    from flowchart.store.effects import MemoryLedger

    body = {"tool": "add", "effect": "idempotent", "iteration": 1}
    for ledger in (MemoryLedger(), ledger_of(SqliteStore(str(tmp_path / "runs.db")))):
        assert ledger.intend("r-1", "k1", {**body, "tool_call_id": "c1"}, {"n": 1}) == (None, [])
        assert ledger.intend("r-2", "k9", {**body, "tool_call_id": "c9"}, {"n": 9}) == (None, [])
        _, others = ledger.intend("r-1", "k2", {**body, "tool_call_id": "c2"}, {"n": 2})
        assert [o["key"] for o in others] == ["k1"]
        ledger.settle("r-1", "k1", {"result": "2"})
        ledger.settle("r-1", "k2", {"result": "3"})
        assert ledger.intend("r-1", "k3", {**body, "tool_call_id": "c3"}, {"n": 3})[1] == []
        ledger.reopen("r-1", "k1")
        four = ledger.intend("r-1", "k4", {**body, "tool_call_id": "c4"}, {"n": 4})
        assert sorted(o["key"] for o in four[1]) == ["k1", "k3"]
        found, others = ledger.intend("r-1", "k2", {**body, "tool_call_id": "c2"}, {"n": 2})
        assert found is not None and found["receipt"] == {"result": "3"} and others == []
