"""A stored row is untrusted input: an edited column fails THAT run's read with a
``StoredRowError`` naming the run and the column, and ``list`` still lists every other run
(the bad one in ``unreadable``) — never a raw ``KeyError``, ``TypeError`` or ``RecursionError``
that breaks ``agent runs list`` for everyone."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from flowchart import CheckpointError, Redaction, flow_chart
from flowchart.store import SqliteStore, StoredRowError, StoreError
from flowchart.store.export import record_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pause"))


def two_runs(path: Path) -> SqliteStore:
    """A store holding runs 'good' and 'bad' of a small chart (recorded under a rule)."""
    chart = flow_chart("Write", lambda scope: setattr(scope, "x", 1), "write").build()
    store = SqliteStore(path)
    for run_id in ("bad", "good"):
        chart.run(store=store, run_id=run_id, redaction=Redaction(keys={"ssn"}))
    return store


def edit(path: Path, sql: str, *params: object) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql, params)


BODY = (
    '{"idx":0,"stage":"Write","stage_id":"write","runtime_stage_id":"write#0",'
    '"trace":[{"path":["x"],"verb":"set","value":1}],"reads":[],"redacted_paths":[]}'
)
"""The commit row of each run of ``two_runs``, as the store wrote it."""

EDITS = [
    ("UPDATE commits SET body = ? WHERE run_id = 'bad'", '{"stage":"Write"}', "commit 0"),
    ("UPDATE commits SET body = ? WHERE run_id = 'bad'", "[" * 5000 + "]" * 5000, "commit 0"),
    ("UPDATE runs SET redaction = ? WHERE run_id = 'bad'", '{"keys": 7}', "redaction"),
    ("UPDATE runs SET redaction = ? WHERE run_id = 'bad'", '{"keys": [' * 300 + "]}" * 300, "redaction"),
    ("UPDATE runs SET redaction = ? WHERE run_id = 'bad'", "[1, 2]", "redaction"),
    ("UPDATE runs SET input = ? WHERE run_id = 'bad'", "[1, 2]", "input"),
    ("UPDATE runs SET failure = ? WHERE run_id = 'bad'", '{"error_type": []}', "failure"),
    ("UPDATE runs SET created_at = ? WHERE run_id = 'bad'", "yesterday", "created_at"),
    ("UPDATE runs SET error = ? WHERE run_id = 'bad'", b"\xff", "error"),
    ("UPDATE segments SET narrative = ? WHERE run_id = 'bad'", '{"type": ["stage"]}', "narrative"),
    ("UPDATE segments SET subflows = ? WHERE run_id = 'bad'", '{"m#1": 5}', "subflows"),
    ("UPDATE runs SET checkpoint = ? WHERE run_id = 'bad'", '{"version": 2}', "checkpoint"),
    # found by the stored-row campaign (bench/fuzz_loaders.py): each loaded, then failed a reader
    ("UPDATE runs SET created_at = ? WHERE run_id = 'bad'", 1e300, "created_at"),
    ("UPDATE runs SET updated_at = ? WHERE run_id = 'bad'", -1e20, "updated_at"),
    ("UPDATE commits SET body = ? WHERE run_id = 'bad'", BODY.replace('"stage":"Write"', '"stage":{}'), "commit 0"),
    ("UPDATE commits SET body = ? WHERE run_id = 'bad'", BODY.replace('"path":["x"]', '"path":[7]'), "commit 0"),
    ("UPDATE commits SET seq = ? WHERE run_id = 'bad'", 3, "commit 3"),
    ("INSERT INTO commits VALUES ('bad', 1, ?)", BODY, "commit 1"),
    ("INSERT INTO answers VALUES ('bad', ?, '1', NULL, 0)", b"\xff", "answers"),
]


@pytest.mark.parametrize(("sql", "value", "column"), EDITS, ids=[f"{c}-{i}" for i, (_, _, c) in enumerate(EDITS)])
def test_an_edited_column_fails_only_its_own_run_by_name(tmp_path: Path, sql: str, value: object, column: str) -> None:
    """Each edit makes ``get('bad')`` a ``StoredRowError`` naming the run and the column; ``list``
    returns the good run and sets the bad one aside; ``get('good')`` still works."""
    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, sql, value)
    store = SqliteStore(path)
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run 'bad' \({column}\): .+$") as caught:
        store.get("bad")
    assert caught.value.run_id == "bad" and caught.value.column == column
    listed = store.list()
    assert [r.run_id for r in listed] == ["good"]
    assert [(e.run_id, e.column) for e in listed.unreadable] == [("bad", column)]
    assert store.get("good").status == "done"


def test_a_stored_row_error_is_both_a_store_error_and_a_checkpoint_error(tmp_path: Path) -> None:
    """Code that catches a store's refusals, or every untrusted loader's, catches a bad row."""
    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, "UPDATE runs SET input = ? WHERE run_id = 'bad'", "{")
    store = SqliteStore(path)
    for base in (StoreError, CheckpointError):
        with pytest.raises(base, match=r"^Invalid stored run 'bad' \(input\): not JSON"):
            store.get("bad")


def test_agent_runs_list_shows_the_other_runs_and_names_the_unreadable_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent runs list`` exits 0 with the readable runs and one UNREADABLE line naming the bad
    run and column (one bad row made the command fail for everyone)."""
    from agent.cli import main

    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, "UPDATE runs SET redaction = ? WHERE run_id = 'bad'", '{"keys": 7}')
    assert main(["runs", "list", "--db", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("good ")
    assert lines[2].startswith("bad ") and "UNREADABLE  Invalid stored run 'bad' (redaction): " in lines[2]


def test_an_edited_chart_spec_is_refused_for_every_run_of_that_chart(tmp_path: Path) -> None:
    """A spec that no longer has its fingerprint (a stage renamed behind the store) is refused by
    name: it loaded before, and its trace, page and ``agent runs show`` then failed."""
    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, 'UPDATE charts SET spec = replace(spec, \'"name":"Write"\', \'"name":"Pay"\')')
    store = SqliteStore(path)
    with pytest.raises(
        StoredRowError, match=r"^Invalid stored run 'bad' \(chart spec\): .*does not match its fingerprint"
    ):
        store.get("bad")
    listed = store.list()
    assert list(listed) == [] and sorted(e.run_id for e in listed.unreadable) == ["bad", "good"]


def test_an_edited_subflow_log_is_refused_by_name(tmp_path: Path) -> None:
    """A subflow log filed under another runtime id is refused as a trace file's is (it loaded, and
    ``record_trace`` then raised ``TraceError``)."""
    path = tmp_path / "runs.db"
    stored_subflow_run(path)
    edit(path, "UPDATE segments SET subflows = replace(subflows, '\"sf#1\":', '\"sf#9\":') WHERE n = 0")
    with pytest.raises(StoredRowError, match=r"^Invalid stored run 's' \(subflows\): subflow 'sf#9' says it is 'sf#1'"):
        SqliteStore(path).get("s")


def stored_subflow_run(path: Path) -> None:
    """Run 's' of the subflow pause chart in ``path``, paused and answered (done)."""
    from pause_charts import CHARTS

    store = SqliteStore(path)
    chart = CHARTS["subflow"]([])
    chart.run({}, store=store, run_id="s")
    chart.resume_run("s", {"ok": 1}, store=store)
    store.close()


def test_a_subflow_log_numbered_otherwise_reads_by_position_and_writes_a_trace(tmp_path: Path) -> None:
    """A subflow log whose commits are not numbered by position (as a stored fork inside a subflow
    wrote them before) reads numbered by position, so its trace loads; it raised ``TraceError``."""
    path = tmp_path / "runs.db"
    stored_subflow_run(path)
    edit(path, "UPDATE segments SET subflows = replace(subflows, '\"idx\":1,', '\"idx\":0,') WHERE n = 0")
    record = SqliteStore(path).get("s")
    assert [c.idx for c in record.subflows["sf#1"].commit_log] == [0, 1]
    assert [c.runtime_stage_id for c in record_trace(record).subflows["sf#1"].commit_log] == [
        "sf/prep#2",
        "sf/ask#3",
    ]


def test_a_subflow_op_no_trace_holds_is_refused_by_name(tmp_path: Path) -> None:
    """A delete op carrying a value inside a stored subflow log is refused as a trace file's is."""
    path = tmp_path / "runs.db"
    stored_subflow_run(path)
    edit(path, 'UPDATE segments SET subflows = replace(subflows, \'"verb":"set"\', \'"verb":"delete"\')')
    with pytest.raises(
        StoredRowError, match=r"^Invalid stored run 's' \(subflows\): a delete op carries no value @ \$\[\"sf#1\"\]"
    ):
        SqliteStore(path).get("s")


def test_a_non_integer_next_seq_is_refused_by_name_when_the_run_is_resumed(tmp_path: Path) -> None:
    """``next_seq`` is read by the writers: an edited one makes ``resume_run`` refuse with a
    ``StoredRowError`` naming it (it raised a bare ``ValueError`` from ``int()``)."""
    from charts import approval_chart

    path = tmp_path / "runs.db"
    chart = approval_chart()
    chart.run({"amount": 5}, store=SqliteStore(path), run_id="p")
    edit(path, "UPDATE runs SET next_seq = 'two' WHERE run_id = 'p'")
    store = SqliteStore(path)
    assert store.get("p").status == "paused"
    with pytest.raises(
        StoredRowError, match=r"^Invalid stored run 'p' \(next_seq\): expected a commit count, got 'two'$"
    ):
        chart.resume_run("p", {"ok": True}, store=store)


def test_a_keyed_store_refuses_a_seal_edited_to_parse_alike_or_nested_deep(tmp_path: Path) -> None:
    """With ``key=``, the seal is one exact text: the same seal re-spaced is refused, and a seal
    nested 5,000 deep is refused by name — ``list`` raised ``RecursionError`` for every run."""
    path = tmp_path / "runs.db"
    chart = flow_chart("Write", lambda scope: setattr(scope, "x", 1), "write").build()
    store = SqliteStore(path, key=b"k" * 32)
    for run_id in ("bad", "good"):
        chart.run(store=store, run_id=run_id)
    store.close()
    with sqlite3.connect(path) as db:
        (seal,) = db.execute("SELECT seal FROM runs WHERE run_id = 'bad'").fetchone()
    for edited in (json.dumps(json.loads(seal), indent=1), "[" * 5000 + "]" * 5000):
        edit(path, "UPDATE runs SET seal = ? WHERE run_id = 'bad'", edited)
        store = SqliteStore(path, key=b"k" * 32)
        with pytest.raises(StoredRowError, match=r"^Invalid stored run 'bad' \(seal\): not a seal \("):
            store.get("bad")
        listed = store.list()
        assert [r.run_id for r in listed] == ["good"] and [e.column for e in listed.unreadable] == ["seal"]


def paused_approval(path: Path) -> dict[str, object]:
    """A run 'p' of the approval chart paused in ``path``; its checkpoint column as a dict."""
    from charts import approval_chart

    approval_chart().run({"amount": 5}, store=SqliteStore(path), run_id="p")
    with sqlite3.connect(path) as db:
        (text,) = db.execute("SELECT checkpoint FROM runs WHERE run_id = 'p'").fetchone()
    data: dict[str, object] = json.loads(text)
    return data


def nest(depth: int) -> object:
    """``depth`` nested lists."""
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"chart_fingerprint": "0" * 64}, "the checkpoint belongs to another chart than the run's"),
        ({"shared_state": {"requested": 5, "deep": nest(198)}}, "nested deeper than the run's trace can carry it"),
    ],
    ids=["another-chart", "deeper-than-a-trace"],
)
def test_a_checkpoint_that_loads_but_no_trace_could_carry_is_refused(
    tmp_path: Path, change: dict[str, object], problem: str
) -> None:
    """A checkpoint of another chart, or nested one level too deep for the run's trace: each loaded
    as a checkpoint and then failed ``record_trace`` (``TraceError``), ``agent view`` and ``runs
    trace``; now ``get`` refuses it by name."""
    path = tmp_path / "runs.db"
    data = paused_approval(path)
    edit(path, "UPDATE runs SET checkpoint = ? WHERE run_id = 'p'", json.dumps({**data, **change}))
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run 'p' \(checkpoint\): ValueError: {problem}"):
        SqliteStore(path).get("p")


@pytest.mark.parametrize(
    ("sql", "value", "column", "levels"),
    [
        ("UPDATE runs SET input = ? WHERE run_id = 'bad'", json.dumps({"deep": nest(199)}), "input", 199),
        ("UPDATE commits SET body = ? WHERE run_id = 'bad'", BODY.replace("1}]", f"{nest(197)}}}]"), "commit 0", 198),
    ],
    ids=["input", "commit"],
)
def test_a_column_within_the_limits_that_no_trace_could_carry_is_refused(
    tmp_path: Path, sql: str, value: str, column: str, levels: int
) -> None:
    """An input, or an op's value, nested just inside the limits as a row but past them where the
    run's trace carries it (one and two levels down): it loaded, then the trace refused it."""
    path = tmp_path / "runs.db"
    two_runs(path).close()
    edit(path, sql, value)
    store = SqliteStore(path)
    with pytest.raises(
        StoredRowError,
        match=rf"^Invalid stored run 'bad' \({column}\): ValueError: nested deeper than the run's trace can carry it "
        rf"\({levels} levels\)$",
    ):
        store.get("bad")
    assert [r.run_id for r in store.list()] == ["good"]
