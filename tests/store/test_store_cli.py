"""The ``agent runs`` command line, on a SQLite store (in-process and as a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from refund_agent import REFUNDS, refund_agent

from agent import Paused
from agent.cli import main
from flowchart import Trace
from flowchart.store import SqliteStore

HERE = Path(__file__).parent


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A SQLite run store with one paused refund run and one finished run; $RUNS_DB points at it."""
    path = str(tmp_path / "runs.db")
    monkeypatch.setenv("RUNS_DB", path)
    monkeypatch.delenv("AGENT_RUNS_DB", raising=False)
    monkeypatch.delenv("AGENT_RUNS_DSN", raising=False)
    REFUNDS.clear()
    agent = refund_agent(SqliteStore(path))
    paused = agent.run("refund order A-1 150")
    assert isinstance(paused, Paused)
    agent.run("refund order A-1 20")
    REFUNDS.clear()
    return path


def _paused_id(db: str) -> str:
    (record,) = SqliteStore(db).list(status="paused")
    return record.run_id


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_shows_runs_and_filters_by_status(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """list prints a header and a line per run; --status paused shows the check-in question."""
    code, out, _ = _run(capsys, "runs", "list", "--db", db)
    assert code == 0 and out.splitlines()[0].startswith("RUN") and len(out.splitlines()) == 3
    code, out, _ = _run(capsys, "runs", "list", "--status", "paused", "--db", db)
    (line,) = out.splitlines()[1:]
    assert line.startswith(_paused_id(db)) and 'check-in: refund {"amount": 150.0, "order_id": "A-1"}' in line


def test_show_prints_question_evidence_and_narrative(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """show prints the pending request, its evidence pack and the narrative so far."""
    run_id = _paused_id(db)
    code, out, _ = _run(capsys, "runs", "show", run_id, "--db", db)
    assert code == 0
    assert f"run {run_id} (agent): paused" in out and "question: check-in: refund" in out
    assert "evidence:" in out and "narrative:" in out
    code, out, _ = _run(capsys, "runs", "show", run_id, "--db", db, "--json")
    data = json.loads(out)
    assert data["status"] == "paused" and data["question"]["check_in"]["evidence"]


def test_approve_resumes_with_the_agent_and_records_by(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """approve --by --agent resumes the run; the answer is recorded once."""
    run_id = _paused_id(db)
    argv = [
        "runs",
        "approve",
        run_id,
        "--by",
        "alice",
        "--note",
        "ok",
        "--agent",
        "refund_agent:refund_agent",
        "--db",
        db,
    ]
    code, out, _ = _run(capsys, *argv)
    assert code == 0 and out.strip() == f"run {run_id}: approved by alice; done: Done: refunded 150.00 on A-1"
    code, _, err = _run(capsys, *argv)
    assert code == 2 and err.strip() == f"agent: error: run '{run_id}' is done: it is not waiting for an answer"
    assert [f"{run_id}:call-1"] == REFUNDS


def test_decline_resumes_without_running_the_tool(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """decline --note lets the model read the note; the refund never runs."""
    run_id = _paused_id(db)
    code, out, _ = _run(
        capsys, "runs", "decline", run_id, "--by", "bob", "--note", "fraud", "--agent", "refund_agent:refund_agent"
    )
    assert code == 0 and out.strip().endswith("done: Done: declined by human: fraud")
    assert REFUNDS == []


def test_trace_feeds_flowchart_why(db: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """trace writes a valid trace file that `flowchart why` explains."""
    from flowchart.cli import main as flowchart_main

    run_id = _paused_id(db)
    code, out, _ = _run(capsys, "runs", "trace", run_id, "--db", db)
    assert code == 0 and Trace.from_json(out).paused
    (tmp_path / "run.trace.json").write_text(out)
    assert flowchart_main(["why", str(tmp_path / "run.trace.json"), "paused_tool_call"]) == 0
    assert "paused_tool_call" in capsys.readouterr().out


def test_trace_with_the_agent_hides_what_its_redaction_hides(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The store keeps the real input; `trace --agent` applies that agent's redaction to it."""
    run_id = _paused_id(db)
    _, plain, _ = _run(capsys, "runs", "trace", run_id, "--db", db)
    code, hidden, _ = _run(
        capsys, "runs", "trace", run_id, "--db", db, "--agent", "refund_agent:redacting_refund_agent"
    )
    assert Trace.from_json(plain).run_input == {"input_message": "refund order A-1 150"}
    assert code == 0 and Trace.from_json(hidden).run_input == {"input_message": "REDACTED"}


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["runs", "show", "nope"], "no run 'nope' in run store"),
        (["runs", "approve", "nope", "--by", "x"], "approve resumes the run, so it needs the agent"),
        (["runs", "approve", "nope", "--by", "x", "--agent", "nomod:x"], "cannot import 'nomod'"),
        (["runs", "approve", "nope", "--by", "x", "--agent", "refund_agent:REFUND"], "is a Tool, not an Agent"),
        (["runs", "list", "--status", "stuck"], "argument --status: invalid choice: 'stuck'"),
        (["runs", "list", "--db", "/nonexistent/x.db"], "no run store at /nonexistent/x.db"),
    ],
)
def test_mistakes_are_one_line_exit_2(
    db: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str], message: str
) -> None:
    """Every mistake is one 'agent: error:' line on stderr and exit status 2."""
    monkeypatch.setenv("AGENT_RUNS_DB", db)
    monkeypatch.delenv("AGENT_SPEC", raising=False)
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("agent: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_the_console_script_answers_from_another_process(db: str, tmp_path: Path) -> None:
    """A real `agent` process approves a run paused by this one; a second approval is refused."""
    run_id = _paused_id(db)
    env = {**os.environ, "PYTHONPATH": str(HERE), "REFUND_LOG": str(tmp_path / "refunds.log")}
    argv = [
        sys.executable,
        "-m",
        "agent.cli",
        "runs",
        "approve",
        run_id,
        "--by",
        "carol",
        "--agent",
        "refund_agent:refund_agent",
        "--db",
        db,
    ]
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 2 and second.stderr.startswith("agent: error:") and "Traceback" not in second.stderr
    assert (tmp_path / "refunds.log").read_text().splitlines() == [f"{run_id}:call-1"]
    assert SqliteStore(db).get(run_id).status == "done"


def test_show_prints_who_decided(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """After an approval, ``runs show`` prints the decision's sentence and ``--json`` its row."""
    run_id = _paused_id(db)
    argv = ["runs", "approve", run_id, "--by", "alice", "--note", "ok", "--agent", "refund_agent:refund_agent"]
    assert _run(capsys, *argv, "--db", db)[0] == 0
    code, out, _ = _run(capsys, "runs", "show", run_id, "--db", db)
    assert code == 0
    assert "decided:\n  alice approved refund(order_id=A-1, amount=150.0): ok (at " in out
    code, out, _ = _run(capsys, "runs", "show", run_id, "--json", "--db", db)
    (row,) = json.loads(out)["human_decisions"]
    assert (row["by"], row["approved"], row["note"], row["tool"]) == ("alice", True, "ok", "refund")


def test_show_of_a_finished_agent_run_explains_its_answer(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A finished agent run's ``runs show`` has the ``agent why`` section: the answer, what the
    model was sent, and who approved the call whose result it read."""
    from agent import explain_answer
    from flowchart.store.export import record_trace

    run_id = _paused_id(db)
    argv = ["runs", "approve", run_id, "--by", "alice", "--note", "ok", "--agent", "refund_agent:refund_agent"]
    assert _run(capsys, *argv, "--db", db)[0] == 0
    code, out, _ = _run(capsys, "runs", "show", run_id, "--db", db)
    assert code == 0
    section = out.split("why the answer (agent why):\n", 1)[1].split("\nnarrative:", 1)[0]
    expected = explain_answer(record_trace(SqliteStore(db).get(run_id))).format()
    assert section.splitlines() == ["  " + line for line in expected.splitlines()]
    assert "approved by alice" in section


def test_approving_the_demo_through_the_cli_refunds_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The demo agent rebuilt by ``agent runs approve`` continues its script where the stored run is
    (the scripted provider answers by the conversation's position): one approval finishes the run,
    the refund runs exactly once, and ``agent why`` lists one approval — not the replayed pause and
    second refund the call-counting script made."""
    from examples import support_agent as demo

    path = str(tmp_path / "demo.db")
    first = demo.build_agent(SqliteStore(path)).run(demo.QUESTION)
    assert isinstance(first, Paused) and first.run_id and first.check_in
    argv = ["runs", "approve", first.run_id, "--by", "alice", "--agent", "examples.support_agent:build_agent"]
    code, out, err = _run(capsys, *argv, "--db", path)
    assert code == 0, err
    assert out.strip() == (
        f"run {first.run_id}: approved by alice; done: I've refunded the duplicate charge of 129.00 on order "
        "A-1001. You'll see it on your card in 3-5 days."
    )
    stored = SqliteStore(path).get(first.run_id)
    assert stored.status == "done" and stored.answered == frozenset({first.check_in.id})
    results = [m for m in stored.record.shown().final_state["history"] if m.get("role") == "tool"]
    assert [m["content"] for m in results if m.get("tool_name") == "issue_refund"] == ["refunded 129.00 on A-1001"]
    code, out, err = _run(capsys, "why", first.run_id, "--db", path)
    assert code == 0, err
    assert out.count("approved by alice") == 1 and out.count("refunded 129.00 on A-1001") == 1, out


def test_a_command_run_in_process_leaves_no_connection_open(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``main`` closes the store a command opened: twenty in-process ``runs list`` / ``runs show``
    calls (the garbage collector off) leave no file open on the database — the stored-row campaign
    ran out of file descriptors calling them, each leaving its connection to the collector."""
    import gc

    def open_files() -> int:
        return sum(1 for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}").startswith(db))

    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("counts open files through /proc (Linux)")
    run_id = _paused_id(db)
    gc.collect()
    before = open_files()
    gc.disable()
    try:
        for _ in range(10):
            assert main(["runs", "list", "--db", db]) == 0
            assert main(["runs", "show", run_id, "--db", db]) == 0
        assert open_files() == before
    finally:
        gc.enable()
    capsys.readouterr()


def test_list_pages_with_after(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A full page ends with the command for the next one; ``--after CURSOR`` prints that page."""
    code, out, _ = _run(capsys, "runs", "list", "--limit", "1", "--db", db)
    assert code == 0
    *rows, more = out.splitlines()
    assert len(rows) == 2 and more.startswith("more: agent runs list --after u:")
    cursor = more.rsplit(" ", 1)[1]
    code, out, _ = _run(capsys, "runs", "list", "--limit", "1", "--after", cursor, "--db", db)
    assert code == 0
    second = out.splitlines()[1]
    assert second.split()[0] != rows[1].split()[0]
    code, _, err = _run(capsys, "runs", "list", "--after", "nope", "--db", db)
    assert code == 2 and "list(after='nope'): not a cursor of this listing" in err
