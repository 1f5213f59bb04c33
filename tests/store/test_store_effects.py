"""Effects that happen once: a worker SIGKILLed between a tool's intent and its receipt.

Each test runs the refund agent (``effect_agent.py``) in a real subprocess that dies by SIGKILL
right after the refund wrote its effect, before the tool returned; a fresh process then advances
the run. On SQLite and a real PostgreSQL.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from effect_agent import build, counts, store_of
from servers import fresh_pg_dsn

from flowchart.store.effects import ledger_of

HERE = Path(__file__).parent


@pytest.fixture(params=["sqlite", "postgres"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A run store's address: a SQLite path, or a DSN on a fresh PostgreSQL schema."""
    if request.param == "sqlite":
        yield str(tmp_path / "runs.db")
    else:
        yield fresh_pg_dsn(request.getfixturevalue("pg_dsn"))


def worker(*argv: str, crash: bool = False, call_id: str = "call-1") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent.parent)]), "CALL_ID": call_id}
    if crash:
        env["CRASH_AFTER_EFFECT"] = "1"
    return subprocess.run(
        [sys.executable, str(HERE / "effect_agent.py"), *argv], capture_output=True, text=True, env=env, timeout=120
    )


def crashed_run(where: str, effect: str) -> str:
    """A run whose worker was SIGKILLed after the refund's effect, before its receipt."""
    started = worker("start", where, effect, crash=True)
    assert started.returncode == -signal.SIGKILL, started.stderr
    run_id = started.stdout.split()[0]
    [entry] = ledger_of(store_of(where)).entries(run_id)
    assert entry["receipt"] is None and entry["body"]["tool"] == "issue_refund"  # in doubt
    assert counts(where) == (1, 1)
    return run_id


def effects_of(where: str, run_id: str) -> list[dict[str, Any]]:
    record = store_of(where).get(run_id)
    from flowchart import replay

    return list(replay(record.commit_log).get("tool_effects", []))


def test_an_idempotent_effect_in_doubt_is_sent_again_with_the_same_key(where: str) -> None:
    """idempotent: the fresh worker re-sends the call with the same key; the refund table (keyed by
    it) holds one refund, and the record says the call was re-sent."""
    run_id = crashed_run(where, "idempotent")
    finished = worker("advance", where, "idempotent", run_id)
    assert finished.returncode == 0, finished.stderr
    assert finished.stdout.strip() == "done: Done: refunded 129.00 on A-1001"
    assert counts(where) == (1, 2)  # one refund, sent twice with one key
    [row] = effects_of(where, run_id)
    assert row["outcome"] == "re-sent" and row["key"] == f"{run_id}:call-1" and row["effect"] == "idempotent"
    [entry] = ledger_of(store_of(where)).entries(run_id)
    assert entry["receipt"] == {"result": "refunded 129.00 on A-1001"}


def test_a_checkable_effect_in_doubt_is_asked_and_not_run_again(where: str) -> None:
    """checkable: the check finds the refund; its answer is the receipt and the tool does not run again."""
    run_id = crashed_run(where, "checkable")
    finished = worker("advance", where, "checkable", run_id)
    assert finished.stdout.strip() == "done: Done: refunded 129.00 on A-1001", finished.stderr
    assert counts(where) == (1, 1)
    [row] = effects_of(where, run_id)
    assert row["outcome"] == "checked: happened"
    [entry] = ledger_of(store_of(where)).entries(run_id)
    assert entry["receipt"] == {"result": "refunded 129.00 on A-1001", "checked": True}


def test_an_unsafe_effect_in_doubt_pauses_for_a_person_and_is_not_repeated(where: str) -> None:
    """unsafe: the fresh worker pauses with a reconciliation question; the person's answer is the
    call's result and the tool never runs a second time."""
    run_id = crashed_run(where, "unsafe")
    advanced = worker("advance", where, "unsafe", run_id)
    assert advanced.stdout.strip() == "paused", advanced.stderr
    agent = build(where, "unsafe")
    record = agent.store.get(run_id)  # type: ignore[union-attr]
    assert record.status == "paused"
    data = record.checkpoint.pause_data["data"]  # type: ignore[union-attr]
    assert data["question"] == 'issue_refund("A-1001", 129.0) may have run; did it?'
    assert data["reconcile"]["key"] == f"{run_id}:call-1"
    assert agent.resume_run(run_id, "yes: refund R-77 went through") == "Done: yes: refund R-77 went through"
    assert counts(where) == (1, 1)
    [row] = effects_of(where, run_id)
    assert row["outcome"] == "asked a person"
    [entry] = ledger_of(store_of(where)).entries(run_id)  # the answer is the receipt: in doubt no more
    assert entry["receipt"] == {"result": "yes: refund R-77 went through", "answered": True}


def test_a_checkable_that_raises_stays_in_doubt_and_escalates(where: str) -> None:
    """A check that raises never decides: the call stays in doubt and a person is asked, told why."""
    run_id = crashed_run(where, "checkable-raises")
    advanced = worker("advance", where, "checkable-raises", run_id)
    assert advanced.stdout.strip() == "paused", advanced.stderr
    agent = build(where, "checkable-raises")
    paused = agent.store.get(run_id)  # type: ignore[union-attr]
    data = paused.checkpoint.pause_data["data"]  # type: ignore[union-attr]
    assert data["check_failed"] == "ConnectionError: the payment API is down"
    [entry] = ledger_of(store_of(where)).entries(run_id)
    assert entry["receipt"] is None
    assert counts(where) == (1, 1)


def test_without_a_crash_each_effect_has_an_intent_and_a_receipt(tmp_path: Path) -> None:
    """The plain path: one intent, one receipt, the tool run once, outcome "ran"; a read tool
    records nothing."""
    where = str(tmp_path / "runs.db")
    agent = build(where, "unsafe")
    assert agent.run("Refund order A-1001") == "Done: refunded 129.00 on A-1001"
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    [row] = snapshot.shared_state["tool_effects"]
    assert row["outcome"] == "ran"
    run_id = row["key"].split(":")[0]
    [entry] = ledger_of(agent.store).entries(run_id)
    assert entry["receipt"] == {"result": "refunded 129.00 on A-1001"}
    assert counts(where) == (1, 1)


def test_a_call_renamed_on_the_re_run_is_still_found_in_doubt(where: str) -> None:
    """The re-run's model names the same call ``call-2``: the unsettled intent with the same tool
    and arguments is found, and the idempotent call is re-sent under its first name and key (one
    refund)."""
    run_id = crashed_run(where, "idempotent")
    finished = worker("advance", where, "idempotent", run_id, call_id="call-2")
    assert finished.stdout.strip() == "done: Done: refunded 129.00 on A-1001", finished.stderr
    assert counts(where) == (1, 2)
    [row] = effects_of(where, run_id)
    assert row["outcome"] == "re-sent" and row["key"] == f"{run_id}:call-1" and row["tool_call_id"] == "call-1"


def test_a_malformed_ledger_row_is_refused_naming_the_run_and_key(tmp_path: Path) -> None:
    """Stored rows are untrusted: an intent that is not a JSON object raises ``StoreError``."""
    import sqlite3

    from flowchart.store import StoreError

    where = str(tmp_path / "runs.db")
    ledger = ledger_of(store_of(where))
    ledger.intend("r-1", "r-1:c1", {"tool": "t"}, {})
    db = sqlite3.connect(where)
    db.execute("UPDATE effects SET body = '[1, 2]'")
    db.commit()
    db.close()
    with pytest.raises(
        StoreError,
        match=r"Invalid stored run 'r-1' \(effects\.intent of key 'r-1:c1'\): expected a JSON object, got list",
    ):
        ledger.entries("r-1")


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ('{"tool": "t", "x": "\\ud800"}', r"lone surrogate"),
        ("[" * 300 + "]" * 300, r"nested deeper"),
        ('{"tool": 1e999}', r"a non-finite float \(inf\) @ \$\.tool"),
    ],
)
def test_a_ledger_cell_loads_through_the_one_codec(tmp_path: Path, cell: str, message: str) -> None:
    """An intent is read with the limits every untrusted document meets (depth, numbers, lone
    surrogates) and refused as a ``StoredRowError`` naming the run and the column (before:
    ``json.loads`` took a lone surrogate, an infinity and any depth)."""
    import sqlite3

    from flowchart.store import StoredRowError

    where = str(tmp_path / "runs.db")
    ledger = ledger_of(store_of(where))
    ledger.intend("r-1", "r-1:c1", {"tool": "t"}, {})
    db = sqlite3.connect(where)
    db.execute("UPDATE effects SET body = ?", (cell,))
    db.commit()
    db.close()
    with pytest.raises(StoredRowError, match=message) as caught:
        ledger.entries("r-1")
    assert (caught.value.run_id, caught.value.column) == ("r-1", "effects.intent of key 'r-1:c1'")


def test_a_signed_stores_ledger_refuses_an_edited_or_moved_cell(tmp_path: Path) -> None:
    """With ``key=``, each intent and receipt is signed for its run, key and column: an edited
    receipt (a forged "it happened"), or an intent copied to another key, is refused by name
    (before, the ledger was read unchecked even in a signed store)."""
    import sqlite3

    from flowchart.store import SqliteStore, StoredRowError

    where = str(tmp_path / "runs.db")
    ledger = ledger_of(SqliteStore(where, key=b"k" * 32))
    ledger.intend("r-1", "k1", {"tool": "t"}, {"amount": 1})
    ledger.settle("r-1", "k1", {"result": "ok"})
    ledger.intend("r-1", "k2", {"tool": "t"}, {"amount": 2})
    assert [row["receipt"] for row in ledger.entries("r-1")] == [{"result": "ok"}, None]
    db = sqlite3.connect(where)
    body_k1 = db.execute("SELECT body FROM effects WHERE key = 'k1'").fetchone()[0]
    db.execute("UPDATE effects SET body = ? WHERE key = 'k2'", (body_k1,))
    db.commit()
    with pytest.raises(StoredRowError, match=r"effects\.intent of key 'k2'.*signature does not match"):
        ledger.entries("r-1")
    db.execute("UPDATE effects SET body = ? WHERE key = 'k2'", (body_k1.replace('"amount":1', '"amount":2'),))
    db.execute("UPDATE effects SET receipt = replace(receipt, 'ok', 'OK') WHERE key = 'k1'")
    db.commit()
    db.close()
    with pytest.raises(StoredRowError, match=r"effects\.receipt of key 'k1'.*signature does not match"):
        ledger.entries("r-1")


def test_a_person_answers_the_reconciliation_from_the_command_line(tmp_path: Path, capsys: Any) -> None:
    """``agent runs show`` names the effect in doubt; ``agent runs approve`` answers "it happened"
    (decline: it did not), and the run finishes without running the tool again."""
    from agent.cli import main as agent_main

    where = str(tmp_path / "runs.db")
    run_id = crashed_run(where, "unsafe")
    assert worker("advance", where, "unsafe", run_id).stdout.strip() == "paused"
    (tmp_path / "refunds_app.py").write_text(
        f"from effect_agent import build\n\n\ndef make():\n    return build({where!r}, 'unsafe')\n"
    )
    sys.path.insert(0, str(HERE))
    try:
        assert agent_main(["runs", "show", run_id, "--db", where]) == 0
        shown = capsys.readouterr().out
        assert 'question: reconcile: issue_refund("A-1001", 129.0) may have run; did it?' in shown
        args = ["runs", "approve", run_id, "--by", "ada", "--note", "R-77", "--db", where]
        assert agent_main([*args, "--agent", "refunds_app:make", "--app-dir", str(tmp_path)]) == 0
        said = capsys.readouterr().out
        assert said.startswith(f"run {run_id}: approved by ada; done: Done: ")
        assert said.strip().endswith('Done: {"happened":true,"by":"ada","note":"R-77"}')
    finally:
        sys.path.remove(str(HERE))
    assert counts(where) == (1, 1)
