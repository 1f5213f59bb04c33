"""A stored run keeps its subflow logs and its narrative as records (stage ids), on every
backend; databases and rows from before (schema 2, bare narrative lines) still load."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from old_schema import insert_old_run, schema_database

from flowchart import Redaction, narrative
from flowchart.store import RunStore, SqliteStore, StoreError, codec
from flowchart.store.export import record_trace
from flowchart.store.schema import SCHEMA_VERSION

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pause"))
import pause_charts


def test_a_stored_run_keeps_each_segments_subflow_logs(store: RunStore) -> None:
    """Paused inside a subflow, then resumed: the record holds both subflow executions' logs,
    and its trace carries them (the resumed half's Ask and Finish)."""
    chart = pause_charts.CHARTS["subflow"]([])
    chart.run({}, store=store, run_id="s", recorders=[narrative()])
    chart.resume_run("s", {"ok": 1}, store=store, recorders=[narrative()])
    record = store.get("s")
    logs = {rid: [c.runtime_stage_id for c in sub.commit_log] for rid, sub in record.subflows.items()}
    assert logs == {"sf#1": ["sf/prep#2", "sf/ask#3"], "sf#4": ["sf/ask#5", "sf/finish#6"]}
    trace = record_trace(record)
    assert {rid: [c.runtime_stage_id for c in s.commit_log] for rid, s in trace.subflows.items()} == logs
    assert trace.subflows["sf#4"].mount_id == "sf"


def test_a_stored_run_keeps_its_narrative_as_records(store: RunStore) -> None:
    """Every stored narrative line comes back as a record with the runtime stage id that told it."""
    chart = pause_charts.CHARTS["subflow"]([])
    chart.run({}, store=store, run_id="r", recorders=[narrative()])
    chart.resume_run("r", {"ok": 1}, store=store, recorders=[narrative()])
    record = store.get("r")
    assert record.narrative == tuple(r.text for r in record.narrative_records)
    assert all(r.runtime_stage_id for r in record.narrative_records)
    stage = next(r for r in record.narrative_records if r.text.endswith("began with sf/Prep."))
    assert (stage.type, stage.depth, stage.runtime_stage_id, stage.subflow_id) == ("stage", 0, "sf/prep#2", "sf")
    assert record_trace(record).narrative == list(record.narrative_records)


def test_a_stored_subflows_initial_state_is_hidden_by_the_runs_rule(store: RunStore) -> None:
    """The store keeps values raw; the trace hides a subflow's initial state under the stored rule."""
    chart = pause_charts.CHARTS["subflow"]([])
    chart.run({}, store=store, run_id="h", recorders=[narrative()], redaction=Redaction(keys={"seed"}))
    chart.resume_run("h", {"ok": 1}, store=store, recorders=[narrative()])
    trace = record_trace(store.get("h"))
    assert trace.subflows["sf#1"].initial_state == {"seed": "REDACTED"}


def _schema_2_database(path: Path) -> None:
    raw = schema_database(path, 2)
    now = insert_old_run(raw)
    raw.execute(
        "INSERT INTO segments VALUES ('old', 0, 0, 'done', ?, ?)", ('["Stage 1: The process began with A."]', now)
    )
    raw.commit()
    raw.close()


def test_a_schema_2_database_migrates_and_its_lines_load_as_records(tmp_path: Path) -> None:
    """A database from before subflow logs (schema 2; 3 added conversations) is migrated in
    place; its bare lines load as records of type ``line`` (no stage id) and its runs have no
    subflow logs."""
    _schema_2_database(tmp_path / "old.db")
    store = SqliteStore(tmp_path / "old.db")
    assert store.schema_version() == SCHEMA_VERSION
    record = store.get("old")
    assert record.narrative == ("Stage 1: The process began with A.",)
    assert [(r.type, r.runtime_stage_id) for r in record.narrative_records] == [("line", None)]
    assert record.subflows == {}


@pytest.mark.parametrize(
    ("column", "text", "message"),
    [
        ("narrative", '[{"type": "stage"}]', r"Invalid stored run 'old' \(narrative\): "),
        (
            "narrative",
            '{"a": 1}',
            r"Invalid stored run 'old' \(narrative\): required key missing @ \$\.narrative\.type; ",
        ),
        ("narrative", "1", r"Invalid stored run 'old' \(narrative\): not a list$"),
        (
            "narrative",
            '{"type": ["stage"], "depth": [0], "text": [], "stage_name": [null], "stage_id": [null], '
            '"runtime_stage_id": [null], "subflow_id": [null], "key": [null], "step_number": [null]}',
            r"Invalid stored run 'old' \(narrative\): narrative column 'text' has 0 values where 'type' ",
        ),
        ("subflows", '{"sf#1": {"mount_id": 3}}', r"Invalid stored run 'old' \(subflows\): "),
    ],
)
def test_a_stored_narrative_or_subflow_log_that_is_not_one_is_refused(
    tmp_path: Path, column: str, text: str, message: str
) -> None:
    """Fail closed: a narrative item that is not a line or a record, columns that are not a
    narrative's (a missing field; unequal lengths, which would drop records silently), or a
    subflows column that is not subflow logs, is a ``StoreError`` naming the run and the column."""
    _schema_2_database(tmp_path / "old.db")
    store = SqliteStore(tmp_path / "old.db")
    raw = sqlite3.connect(tmp_path / "old.db")
    raw.execute(f"UPDATE segments SET {column} = ? WHERE run_id = 'old'", (text,))
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match=message):
        store.get("old")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)
RECORD_KEYS = st.fixed_dictionaries(
    {k: JSON for k in ("type", "depth", "text", "stage_name", "stage_id", "runtime_stage_id", "subflow_id")}
)


@settings(max_examples=150, deadline=None)
@given(items=st.lists(JSON | RECORD_KEYS, max_size=4), subflows=JSON | st.dictionaries(st.text(max_size=6), JSON))
def test_fuzz_stored_narrative_and_subflows_load_or_refuse_with_store_error(items: Any, subflows: Any) -> None:
    """Property: any JSON in the two columns either loads (records, subflow logs) or is a
    ``StoreError`` naming the run — never another exception."""
    for load, value in ((codec.decode_narrative, items), (codec.decode_subflows, subflows)):
        try:
            load(json.dumps(value), "fz")
        except StoreError as exc:
            assert str(exc).startswith("Invalid stored run 'fz' (")
