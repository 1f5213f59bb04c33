"""In a signed store the effect ledger is part of the run's seal: a ledger row deleted (or added,
or changed) behind the store is named by ``verify`` and by every read, and a ledger write on a
tampered ledger is refused before the effect is intended. Real SQLite files and a real PostgreSQL
edited behind the store's back."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from effect_agent import RefundBot
from servers import fresh_pg_dsn

from agent import Agent, define_tool
from flowchart.store import PostgresStore, RunStore, SqliteStore, StoredRowError
from flowchart.store import sealing as sealing_module
from flowchart.store.effects import ledger_of

KEY = b"k" * 32


def refund_agent(store: RunStore) -> Agent:
    """The refund agent with an idempotent tool on ``store``."""

    def issue_refund(args: dict[str, Any], ctx: Any) -> str:
        return f"refunded {args['amount']:.2f} on {args['order_id']}"

    tool = define_tool(
        name="issue_refund",
        description="Refund an order.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}}},
        execute=issue_refund,
        effect="idempotent",
    )
    return Agent.create(provider=RefundBot(), store=store).tool(tool).build()


def finished(agent: Agent) -> str:
    """A stored run of ``agent`` advanced to its end; its id."""
    from agent._run import durable

    run_id = durable.create(agent, durable.make_input("Refund order A-1001"))
    assert durable.advance_now(agent, run_id) == "Done: refunded 129.00 on A-1001"
    return run_id


def open_store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[RunStore, Any]:
    """A signed store, and a function running raw SQL on its database behind its back."""
    if backend == "sqlite":
        path = tmp_path / "runs.db"

        def raw_sqlite(sql: str, *params: object) -> list[Any]:
            with sqlite3.connect(path) as db:
                return db.execute(sql, params).fetchall()

        return SqliteStore(path, key=KEY), raw_sqlite
    import psycopg

    dsn = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))

    def raw_pg(sql: str, *params: object) -> list[Any]:
        with psycopg.connect(dsn, autocommit=True) as db:
            cur = db.execute(sql.replace("?", "%s"), params)
            return cur.fetchall() if cur.description else []

    return PostgresStore(dsn, key=KEY), raw_pg


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_deleted_ledger_row_is_named_by_verify_and_by_every_read(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """A finished run's intent-and-receipt row is deleted behind the store: ``verify`` and ``get``
    name ``effects`` with the counts sealed and found; the untouched run next to it still reads."""
    store, raw = open_store(backend, tmp_path, request)
    agent = refund_agent(store)
    victim, other = finished(agent), finished(agent)
    head = store.verify(victim)
    assert [e["receipt"] is not None for e in ledger_of(store).entries(victim)] == [True]
    raw("DELETE FROM effects WHERE run_id = ?", victim)
    expected = (
        rf"^Invalid stored run '{victim}' \(effects\): its rows differ from the sealed ones \(1 sealed, 0 found\)"
    )
    with pytest.raises(StoredRowError, match=expected):
        store.verify(victim)
    with pytest.raises(StoredRowError, match=r"\(effects\): "):
        store.get(victim)
    assert store.get(other).status == "done" and len(store.verify(other)) == 64
    assert len(head) == 64


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_in_doubt_intent_deleted_is_named_and_no_effect_is_intended_on_that_ledger(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """An intent written mid-segment (no receipt: in doubt) is deleted behind the store — what would
    make the call look never begun. ``verify`` names ``effects``, and the next intent on that run
    is refused with ``StoredRowError`` (the tool is not run on a ledger that was tampered with)."""
    store, raw = open_store(backend, tmp_path, request)
    store.create("r1", kind="agent", chart_fingerprint="f", input={})
    ledger = ledger_of(store)
    assert ledger.intend("r1", "r1:c1", {"tool": "issue_refund"}) == (None, [])
    store.verify("r1")  # the seal holds the intent
    raw("DELETE FROM effects WHERE run_id = ?", "r1")
    with pytest.raises(StoredRowError, match=r"^Invalid stored run 'r1' \(effects\): .*\(1 sealed, 0 found\)"):
        store.verify("r1")
    with pytest.raises(StoredRowError, match=r"\(effects\): its rows differ from the sealed ones"):
        ledger.intend("r1", "r1:c2", {"tool": "issue_refund"})
    assert raw("SELECT COUNT(*) FROM effects WHERE run_id = ?", "r1") == [(0,)]


def test_a_receipt_removed_or_a_row_added_is_named_too(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A receipt set back to NULL (a settled call made to look in doubt) and a forged row added are
    changes to the sealed ledger, named like a deletion."""
    store, raw = open_store("sqlite", tmp_path, request)
    run_id = finished(refund_agent(store))
    raw("UPDATE effects SET receipt = NULL WHERE run_id = ?", run_id)
    with pytest.raises(
        StoredRowError, match=r"\(effects\): its rows differ from the sealed ones \(1 sealed, 1 found\)"
    ):
        store.verify(run_id)
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    store, raw = open_store("sqlite", fresh, request)
    run_id = finished(refund_agent(store))
    raw("INSERT INTO effects VALUES (?, 'forged', '{}', NULL, 0, NULL)", run_id)
    with pytest.raises(StoredRowError, match=r"\(effects\): .*\(1 sealed, 2 found\)"):
        store.verify(run_id)


def test_a_run_sealed_before_the_ledger_was_reads_and_is_sealed_at_its_next_ledger_write(tmp_path: Path) -> None:
    """A seal written before the ledger was sealed (no ``effects`` part) still reads; the run's next
    ledger write seals its ledger, after which a deleted row is named."""
    path = tmp_path / "runs.db"
    store = SqliteStore(path, key=KEY)
    store.create("r1", kind="agent", chart_fingerprint="f", input={})
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT seal FROM runs WHERE run_id = 'r1'").fetchone()
        parts = json.loads(text)["parts"]
        del parts["effects"]
        db.execute("UPDATE runs SET seal = ? WHERE run_id = 'r1'", (sealing_module._sealed("r1", parts, KEY),))
    assert len(store.verify("r1")) == 64  # an older seal: nothing of the ledger to check
    ledger_of(store).intend("r1", "r1:c1", {"tool": "issue_refund"})
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM effects")
    with pytest.raises(StoredRowError, match=r"\(effects\): .*\(1 sealed, 0 found\)"):
        store.verify("r1")
