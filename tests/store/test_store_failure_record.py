"""A failure leaves a record, never a stuck run: commits, error, failing stage, narrative so far.

Every test runs on each backend (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from charts import approval_chart

from agent import Agent
from agent.providers import scripted
from flowchart import Redaction, ScopeWriteError, flow_chart, narrative, replay
from flowchart.store import RunStore, SqliteStore
from flowchart.store.export import record_trace
from flowchart.store.schema import MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE


def _two_step_chart() -> Any:
    def first(scope: Any) -> None:
        scope.seen = ["first"]

    def second(scope: Any) -> None:
        scope.partial = True
        raise LookupError("order A-9 is gone")

    return flow_chart("First", first, "first").add_function("Second", second, "second").build()


class DownProvider:
    """A provider whose server is down: every call raises."""

    def complete(self, req: Any) -> Any:
        raise ConnectionError("model server unreachable")


def test_a_failed_run_keeps_its_commits_error_stage_and_narrative(store: RunStore) -> None:
    """The stored failed run holds every commit before the failure (the failing stage's partial
    commit too), the error's class and message, the failing stage's runtime id, the narrative."""
    with pytest.raises(LookupError, match=r"^order A-9 is gone$"):
        _two_step_chart().run(store=store, run_id="r1", recorders=[narrative()])
    record = store.get("r1")
    assert record.status == "failed"
    assert [c.runtime_stage_id for c in record.commit_log] == ["first#0", "second#1"]
    assert replay(record.commit_log) == {"seen": ["first"], "partial": True}
    assert record.failure is not None
    assert (record.failure.error_type, record.failure.message) == ("LookupError", "order A-9 is gone")
    assert (record.failure.stage_id, record.failure.runtime_stage_id) == ("second", "second#1")
    assert record.error == "LookupError: order A-9 is gone"
    assert record.narrative[0] == "Stage 1: The process began with First."
    assert any("order A-9 is gone" in line for line in record.narrative)


def test_an_agent_whose_provider_raises_is_stored_failed_with_what_it_committed(store: RunStore) -> None:
    """The provider's error fails the run at call-llm; the seed's commit and the narrative stay."""
    agent = Agent.create(provider=DownProvider(), model="m", store=store).build()
    with pytest.raises(ConnectionError, match=r"^model server unreachable$"):
        agent.run("hello")
    (record,) = store.list()
    assert record.status == "failed"
    assert [c.stage_id for c in record.commit_log] == ["seed", "call-llm"]
    assert record.failure is not None
    assert record.failure.runtime_stage_id == "call-llm#1"
    assert record.failure.error_type == "ConnectionError"
    assert record.narrative and "model server unreachable" in "\n".join(record.narrative)


def test_a_failed_run_trace_carries_the_failure_and_other_traces_do_not(store: RunStore) -> None:
    """``record_trace`` of a failed run has ``failure`` (and it loads back); a done run's has no such key."""
    with pytest.raises(LookupError, match=r"^order A-9 is gone$"):
        _two_step_chart().run(store=store, run_id="bad")
    trace = record_trace(store.get("bad"))
    assert trace.failure is not None and trace.failure.runtime_stage_id == "second#1"
    assert trace.to_dict()["failure"]["error_type"] == "LookupError"
    assert [c.runtime_stage_id for c in trace.commit_log] == ["first#0", "second#1"]
    good = flow_chart("One", lambda scope: "ok", "one").build()
    good.run(store=store, run_id="good")
    assert "failure" not in record_trace(store.get("good")).to_dict()


def test_a_lone_surrogate_written_by_a_stage_is_refused_and_the_run_is_not_left_running(store: RunStore) -> None:
    """A stage writing ``"\\ud800"`` gets ``ScopeWriteError`` naming the key; the run is stored failed."""

    def reply(scope: Any) -> None:
        scope.reply = "caf\ud800"

    chart = flow_chart("Reply", reply, "reply").build()
    with pytest.raises(ScopeWriteError, match=r"^Cannot write 'reply': a string with a lone surrogate \(U\+D800\)"):
        chart.run(store=store, run_id="s1")
    record = store.get("s1")
    assert record.status == "failed" and record.failure is not None and record.failure.error_type == "ScopeWriteError"


def test_a_model_reply_with_a_lone_surrogate_fails_the_run_cleanly(store: RunStore) -> None:
    """A model reply carrying a lone surrogate is refused at the write naming the key; the run is failed."""
    agent = Agent.create(provider=scripted(["bad \udc80 text"]), model="m", store=store).build()
    with pytest.raises(ScopeWriteError, match=r"^Cannot write 'llm_latest_content': a string with a lone surrogate"):
        agent.run("hi")
    (record,) = store.list()
    assert record.status == "failed" and record.failure is not None
    assert record.failure.runtime_stage_id == "call-llm#1"


def test_an_error_message_with_a_lone_surrogate_is_stored_escaped(store: RunStore) -> None:
    """The record never makes the write that ends a run fail: an unencodable error text is escaped."""

    def boom(scope: Any) -> None:
        raise ValueError("bad byte \udcff here")

    with pytest.raises(ValueError, match="bad byte"):
        flow_chart("Boom", boom, "boom").build().run(store=store, run_id="e1", recorders=[narrative()])
    record = store.get("e1")
    assert record.status == "failed"
    assert record.error == "ValueError: bad byte \\udcff here"
    assert record.failure is not None and record.failure.message == "bad byte \\udcff here"


def test_the_redaction_is_stored_with_the_run(store: RunStore) -> None:
    """``create(..., redaction=)`` keeps the rule with the run: keys, patterns with flags, fields."""
    rule = Redaction(keys={"ssn"}, patterns=[r"(?i)token"], fields={"card": ["num"]})
    approval_chart().run({"amount": 3}, store=store, run_id="p", redaction=rule)
    assert store.get("p").redaction == rule
    approval_chart().run({"amount": 3}, store=store, run_id="q")
    assert store.get("q").redaction is None


def test_a_chart_run_resumed_without_a_rule_keeps_the_stored_one(store: RunStore) -> None:
    """resume_run without ``redaction=`` records the second segment under the rule the run started with."""
    rule = Redaction(keys={"approved"})
    approval_chart().run({"amount": 3}, store=store, run_id="p", redaction=rule)
    approval_chart().resume_run("p", {"ok": True}, store=store)
    record = store.get("p")
    written = [op.value for c in record.commit_log for op in c.trace if op.path == ("approved",)]
    assert written == ["REDACTED"]


def test_a_version_1_sqlite_store_migrates_and_its_rows_still_load(tmp_path: Path) -> None:
    """A database written before runs kept their rule and failure is migrated in place; its
    old rows load with ``redaction`` and ``failure`` of ``None``."""
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path)
    raw.execute(VERSION_TABLE)
    for statement in MIGRATIONS[1]:
        raw.execute(statement)
    raw.execute("INSERT INTO schema_version VALUES (1, 0)")
    now = time.time()
    raw.execute(
        "INSERT INTO runs (run_id, kind, chart_fingerprint, status, input, error, created_at, updated_at) "
        "VALUES ('old', 'chart', 'f', 'failed', '{}', 'RuntimeError: x', ?, ?)",
        (now, now),
    )
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    assert store.schema_version() == SCHEMA_VERSION
    record = store.get("old")
    assert (record.status, record.error, record.failure, record.redaction) == ("failed", "RuntimeError: x", None, None)


@pytest.mark.parametrize(
    ("column", "text", "message"),
    [
        ("redaction", '{"keys": 1, "patterns": [], "fields": {}}', r"\(redaction\): "),
        ("redaction", '{"keys": [], "patterns": [["(", 0]], "fields": {}}', r"\(redaction\): "),
        ("failure", '{"error_type": 3}', r"\(failure\): "),
    ],
)
def test_a_stored_rule_or_failure_that_is_not_one_is_refused(
    tmp_path: Path, column: str, text: str, message: str
) -> None:
    """Rows are untrusted: a column that is not a rule / failure is a ``StoreError`` naming the run."""
    from flowchart.store import StoreError

    store = SqliteStore(tmp_path / "runs.db")
    approval_chart().run({"amount": 3}, store=store, run_id="p")
    raw = sqlite3.connect(tmp_path / "runs.db")
    raw.execute(f"UPDATE runs SET {column} = ? WHERE run_id = 'p'", (text,))
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match=rf"^Invalid stored run 'p' {message}"):
        store.get("p")


def test_a_message_with_a_lone_surrogate_is_refused_before_a_run_is_stored(store: RunStore) -> None:
    """``agent.run("\\ud800")`` on a store is refused like a chart's input, and no run is created
    (no row with a mangled input left to fail later)."""
    agent = Agent.create(provider=scripted(["x"]), model="m", store=store).build()
    with pytest.raises(TypeError, match=r"^run input is not JSON-safe: a string with a lone surrogate \(U\+D800\) at"):
        agent.run("hi \ud800")
    assert store.list() == []
