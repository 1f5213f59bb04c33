"""A call renamed on the re-run after a crash is settled: its new name's intent never stays in doubt.

A worker is SIGKILLed between the refund's intent and its receipt (``effect_agent.py`` in a real
subprocess, as ``test_store_effects.py`` does); the next worker's model names the same call
``call-2``. The call is recovered under its first name and key, and the new name's intent is
written superseded by it — so every intent ends with one receipt, no later segment finds anything
in doubt, and a later identical call is never matched to the name that never ran. On SQLite and a
real PostgreSQL, plain and signed (``key=``). The in-process tests plant the dead worker's intent
through a second ledger on the same file, as ``test_store_effect_lookups.py`` does.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from effect_agent import build, counts, store_of
from hypothesis import given, settings
from hypothesis import strategies as st
from servers import fresh_pg_dsn
from test_store_effects import worker

from agent import Agent, Paused, define_tool
from agent.providers import LLMResponse, ToolCall, scripted
from flowchart import replay
from flowchart.store import SqliteStore, StoredRowError
from flowchart.store.effects import EffectLedger, ledger_of

HERE = Path(__file__).parent
REFUND = {"order_id": "A-1001", "amount": 129.0}


@pytest.fixture(params=["sqlite", "postgres", "sqlite signed", "postgres signed"])
def where(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A run store's address (a SQLite path, or a DSN on a fresh PostgreSQL schema); a signed
    store's key is in ``EFFECT_STORE_KEY`` for this process and the workers alike."""
    if request.param.endswith("signed"):
        monkeypatch.setenv("EFFECT_STORE_KEY", "k" * 32)
    if request.param.startswith("sqlite"):
        yield str(tmp_path / "runs.db")
    else:
        yield fresh_pg_dsn(request.getfixturevalue("pg_dsn"))


def crashed_run(where: str, effect: str) -> str:
    """A run whose worker was SIGKILLed after the refund's effect, before its receipt."""
    started = worker("start", where, effect, crash=True)
    assert started.returncode == -signal.SIGKILL, started.stderr
    run_id = started.stdout.split()[0]
    [entry] = ledger_of(store_of(where)).entries(run_id)
    assert entry["receipt"] is None  # in doubt
    return run_id


def receipts(where: str, run_id: str) -> dict[str, Any]:
    return {e["key"]: e["receipt"] for e in ledger_of(store_of(where)).entries(run_id)}


def effect_rows(where: str, run_id: str) -> list[dict[str, Any]]:
    return list(replay(store_of(where).get(run_id).commit_log).get("tool_effects", []))


def later_intent(where: str, run_id: str) -> tuple[Any, list[dict[str, Any]]]:
    """What a later segment's identical refund (``call-3``) finds when it writes its intent."""
    body = {"tool": "issue_refund", "effect": "unsafe", "tool_call_id": "call-3", "iteration": 1}
    return ledger_of(store_of(where)).intend(run_id, f"{run_id}:call-3", body, dict(REFUND))


def test_a_renamed_idempotent_call_is_re_sent_once_and_its_new_name_is_superseded(where: str) -> None:
    """idempotent, renamed ``call-2``: one refund; the ledger holds call-1's receipt and call-2's
    intent superseded by call-1 (before: call-2's intent stayed without a receipt for good); the
    record has one row saying call-1 was re-sent, called ``call-2``; a later identical call finds
    nothing in doubt."""
    run_id = crashed_run(where, "idempotent")
    finished = worker("advance", where, "idempotent", run_id, call_id="call-2")
    assert finished.stdout.strip() == "done: Done: refunded 129.00 on A-1001", finished.stderr
    assert counts(where) == (1, 2)
    first, renamed = f"{run_id}:call-1", f"{run_id}:call-2"
    assert receipts(where, run_id) == {
        first: {"result": "refunded 129.00 on A-1001"},
        renamed: {"superseded_by": first},
    }
    assert effect_rows(where, run_id) == [
        {
            "tool_call_id": "call-1",
            "tool": "issue_refund",
            "effect": "idempotent",
            "key": first,
            "outcome": "re-sent",
            "called_as": "call-2",
        }
    ]
    assert later_intent(where, run_id) == (None, [])


def test_a_renamed_unsafe_call_is_asked_about_once_and_a_later_identical_call_is_not(where: str) -> None:
    """unsafe, renamed ``call-2``: the reconciliation names call-1 (its key and id); the answer is
    call-1's receipt, call-2's intent is superseded; a later identical call is matched to nothing
    (before: to call-2, a call that never ran — a person would be asked about it)."""
    run_id = crashed_run(where, "unsafe")
    advanced = worker("advance", where, "unsafe", run_id, call_id="call-2")
    assert advanced.stdout.strip() == "paused", advanced.stderr
    agent = build(where, "unsafe")
    record = agent.store.get(run_id)  # type: ignore[union-attr]
    reconcile = record.checkpoint.pause_data["data"]["reconcile"]  # type: ignore[union-attr]
    first, renamed = f"{run_id}:call-1", f"{run_id}:call-2"
    assert (reconcile["key"], reconcile["tool_call_id"]) == (first, "call-1")
    assert receipts(where, run_id) == {first: None, renamed: {"superseded_by": first}}
    assert agent.resume_run(run_id, "yes: R-77") == "Done: yes: R-77"
    assert counts(where) == (1, 1)
    assert receipts(where, run_id) == {
        first: {"result": "yes: R-77", "answered": True},
        renamed: {"superseded_by": first},
    }
    [row] = effect_rows(where, run_id)
    assert (row["tool_call_id"], row["key"], row["outcome"], row["called_as"]) == (
        "call-1",
        first,
        "asked a person",
        "call-2",
    )
    assert later_intent(where, run_id) == (None, [])


def test_a_renamed_checkable_call_is_checked_once(where: str) -> None:
    """checkable, renamed ``call-2``: the check is asked with call-1's key, finds the refund, and
    its answer is call-1's receipt; call-2's intent is superseded; one row in the record."""
    run_id = crashed_run(where, "checkable")
    finished = worker("advance", where, "checkable", run_id, call_id="call-2")
    assert finished.stdout.strip() == "done: Done: refunded 129.00 on A-1001", finished.stderr
    assert counts(where) == (1, 1)
    first = f"{run_id}:call-1"
    assert receipts(where, run_id) == {
        first: {"result": "refunded 129.00 on A-1001", "checked": True},
        f"{run_id}:call-2": {"superseded_by": first},
    }
    [row] = effect_rows(where, run_id)
    assert (row["tool_call_id"], row["outcome"], row["called_as"]) == ("call-1", "checked: happened", "call-2")


def test_the_same_renamed_reply_after_a_second_crash_goes_on_under_the_first_key(where: str) -> None:
    """The worker that renamed the call dies too, before the refund's receipt; the next one's model
    names it ``call-2`` again: its key is superseded already, so the call is found under call-1's
    key, in doubt, and re-sent with it — one refund, no third intent, one row."""
    run_id = crashed_run(where, "idempotent")
    again = worker("advance", where, "idempotent", run_id, crash=True, call_id="call-2")
    assert again.returncode == -signal.SIGKILL, again.stderr
    first, renamed = f"{run_id}:call-1", f"{run_id}:call-2"
    assert receipts(where, run_id) == {first: None, renamed: {"superseded_by": first}}
    finished = worker("advance", where, "idempotent", run_id, call_id="call-2")
    assert finished.stdout.strip() == "done: Done: refunded 129.00 on A-1001", finished.stderr
    assert counts(where) == (1, 3)  # one refund, sent three times with one key
    assert receipts(where, run_id) == {
        first: {"result": "refunded 129.00 on A-1001"},
        renamed: {"superseded_by": first},
    }
    [row] = effect_rows(where, run_id)
    assert (row["key"], row["outcome"], row["called_as"]) == (first, "re-sent", "call-2")


def _adder(ran: list[dict[str, Any]]) -> Any:
    def add(args: dict[str, Any], ctx: Any) -> int:
        ran.append(dict(args))
        return int(args["a"]) + int(args["b"])

    return define_tool(
        name="add",
        description="Add two numbers.",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
        execute=add,
        effect="unsafe",
    )


def _confirm() -> Any:
    return define_tool(
        name="confirm",
        description="Ask a person.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: __import__("agent").ask_human({"question": "go on?"}),
    )


def test_later_segments_neither_look_per_call_nor_match_the_renamed_intent(tmp_path: Path) -> None:
    """A dead worker left unsafe ``add(7, 1)`` in doubt as ``c3``; the resumed segment's model
    names it ``c9`` and a person answers the reconciliation. The next segment calls ``add(7, 1)``
    again as ``c10`` (the person said it had not happened) and then two more adds: ``c10`` runs —
    it is not matched to ``c9``, which never ran (before: a person was asked about ``c9``) — and
    the segment looks for calls in doubt once, not once a call."""
    path = tmp_path / "runs.db"
    store = SqliteStore(str(path))
    ran: list[dict[str, Any]] = []

    def call(call_id: str, name: str, args: dict[str, Any]) -> LLMResponse:
        return LLMResponse("", (ToolCall(call_id, name, args),), finish_reason="tool_use")

    replies = [
        call("c1", "add", {"a": 1, "b": 1}),
        call("c2", "confirm", {}),
        call("c9", "add", {"a": 7, "b": 1}),
        call("c10", "add", {"a": 7, "b": 1}),
        call("c11", "add", {"a": 2, "b": 1}),
        call("c12", "add", {"a": 3, "b": 1}),
        LLMResponse("done"),
    ]
    agent = Agent.create(provider=scripted(replies), model="m", store=store).tool(_adder(ran)).tool(_confirm()).build()
    assert isinstance(agent.run("add, confirm, add"), Paused)
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    run_id = snapshot.shared_state["tool_effects"][0]["key"].split(":")[0]
    dead = EffectLedger(SqliteStore(str(path)))  # the worker that died after its intent
    body = {"tool": "add", "effect": "unsafe", "tool_call_id": "c3", "iteration": 3}
    assert dead.intend(run_id, f"{run_id}:c3", body, {"a": 7, "b": 1}) == (None, [])
    paused = agent.resume_run(run_id, "yes")
    assert isinstance(paused, Paused)
    assert paused.pause_data["data"]["reconcile"]["key"] == f"{run_id}:c3"  # type: ignore[index]
    statements: list[str] = []
    ledger_of(store)._db.set_trace_callback(statements.append)
    assert agent.resume_run(run_id, "no, it did not happen") == "done"
    ledger_of(store)._db.set_trace_callback(None)
    assert ran == [{"a": 1, "b": 1}, {"a": 7, "b": 1}, {"a": 2, "b": 1}, {"a": 3, "b": 1}]
    assert sum(s.startswith("SELECT key, body FROM effects WHERE run_id =") for s in statements) == 1
    entries = {e["key"]: e["receipt"] for e in dead.entries(run_id)}
    assert entries == {
        f"{run_id}:c1": {"result": "2"},
        f"{run_id}:c3": {"result": "no, it did not happen", "answered": True},
        f"{run_id}:c9": {"superseded_by": f"{run_id}:c3"},
        f"{run_id}:c10": {"result": "8"},
        f"{run_id}:c11": {"result": "3"},
        f"{run_id}:c12": {"result": "4"},
    }
    final = agent.last_snapshot()
    assert final is not None
    rows = [(r["tool_call_id"], r["outcome"], r.get("called_as")) for r in final.shared_state["tool_effects"]]
    assert rows == [
        ("c1", "ran", None),
        ("c3", "asked a person", "c9"),
        ("c10", "ran", None),
        ("c11", "ran", None),
        ("c12", "ran", None),
    ]


def test_a_superseded_receipt_is_signed_for_its_key_and_must_point_at_a_row(tmp_path: Path) -> None:
    """In a signed store the superseded receipt is signed for its run, key and column like any
    receipt: copied onto another key it is refused by name. A superseded row whose first row is
    gone is refused too, naming the key it points at — never taken for a receipt with no result."""
    import sqlite3

    where = str(tmp_path / "runs.db")
    ledger = ledger_of(SqliteStore(where, key=b"k" * 32))
    body = {"tool": "t", "tool_call_id": "c1"}
    assert ledger.intend("r-1", "k1", body, {"n": 1}) == (None, [])
    found, rest = ledger.intend("r-1", "k2", {**body, "tool_call_id": "c2"}, {"n": 1})
    assert (found["key"], found["receipt"], rest) == ("k1", None, [])
    assert ledger.intend("r-1", "k2", body, {"n": 1})[0]["key"] == "k1"  # the same reply again: the first row
    ledger.intend("r-1", "k3", {**body, "tool_call_id": "c3"}, {"n": 3})
    db = sqlite3.connect(where)
    superseded = db.execute("SELECT receipt FROM effects WHERE key = 'k2'").fetchone()[0]
    db.execute("UPDATE effects SET receipt = ? WHERE key = 'k3'", (superseded,))
    db.commit()
    with pytest.raises(StoredRowError, match=r"effects\.receipt of key 'k3'.*signature does not match"):
        ledger.entries("r-1")
    db.execute("UPDATE effects SET receipt = NULL WHERE key = 'k3'")
    db.execute("DELETE FROM effects WHERE key = 'k1'")
    db.commit()
    db.close()
    with pytest.raises(StoredRowError, match=r'superseded by "k1", which the ledger does not hold'):
        ledger.intend("r-1", "k2", body, {"n": 1})


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8) | st.sampled_from(["k1", "k2", "k3", "k4"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(pointer=_JSON)
def test_a_superseded_receipt_pointing_anywhere_is_followed_only_to_a_first_row(pointer: Any) -> None:
    """Stored rows are untrusted: whatever ``superseded_by`` holds, an intent on that key returns
    the row it names only when that row exists and is not superseded itself (``k1``, in doubt);
    anything else — itself, a superseded row, a missing key, not a string — is a ``StoredRowError``
    naming the key."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        ledger = ledger_of(SqliteStore(str(Path(folder) / "runs.db")))
        body = {"tool": "t", "tool_call_id": "c"}
        for key, n in (("k1", 1), ("k2", 2), ("k3", 3)):
            ledger.intend("r-1", key, body, {"n": n})
        ledger.settle("r-1", "k3", {"superseded_by": "k1"})
        ledger.settle("r-1", "k2", {"superseded_by": pointer})
        if pointer == "k1":
            found, rest = ledger.intend("r-1", "k2", body, {"n": 2})
            assert (found["key"], found["receipt"], rest) == ("k1", None, [])
        else:
            with pytest.raises(StoredRowError, match=r"effects\.receipt of key 'k2'.*superseded by") as caught:
                ledger.intend("r-1", "k2", body, {"n": 2})
            assert caught.value.run_id == "r-1"
