"""`agent serve` as a real process, and the inbox demo (`make demo-inbox`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from inbox_server import Setup, free_port

from examples import inbox_demo

REPO = Path(__file__).resolve().parents[2]


def test_agent_serve_binds_loopback_says_so_and_serves(setup: Setup) -> None:
    """`agent serve` on the demo's store: it says where it listens (127.0.0.1, only this machine),
    answers /health, and lists the paused refund for a token from the users file."""
    from examples import support_agent as demo
    from flowchart.store import SqliteStore

    demo.build_agent(SqliteStore(setup.db)).run(demo.QUESTION)
    port = free_port()
    agent_cmd = str(Path(sys.executable).with_name("agent"))
    argv = [
        agent_cmd,
        "serve",
        "--store",
        setup.db,
        "--users",
        setup.users,
        "--port",
        str(port),
        "--agent",
        "examples.support_agent:build_agent",
        "--app-dir",
        str(REPO),
    ]
    server = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    try:
        assert server.stdout is not None
        first = server.stdout.readline()
        assert first == (
            f"agent serve: the approval inbox on http://127.0.0.1:{port}/ (only this machine can reach it)\n"
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "agent serve did not answer"
                time.sleep(0.1)
        runs = httpx.get(f"http://127.0.0.1:{port}/api/runs", headers=setup.headers("alice")).json()["runs"]
        assert [r["wants"] for r in runs] == ["issue_refund(order_id=A-1001, amount=129.0)"]
    finally:
        server.terminate()
        server.wait(10)


def test_agent_serve_refuses_to_start_with_nobody_able_to_log_in(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --users or --trust-header nobody could log in; an absent store is named: one error
    line each, exit 2."""
    from agent.cli import main
    from flowchart.store import SqliteStore

    assert main(["serve", "--store", setup.db]) == 2
    assert capsys.readouterr().err.startswith(f"agent: error: --store {setup.db}: ")
    SqliteStore(setup.db).close()
    assert main(["serve", "--store", setup.db]) == 2
    assert capsys.readouterr().err == (
        "agent: error: nobody could log in: pass --users FILE (agent users add ...) or --trust-header\n"
    )


def test_the_inbox_demo_prepares_paused_refunds_and_a_token(tmp_path: Path) -> None:
    """`make demo-inbox`'s store: three paused refunds; alice's token authenticates her."""
    from agent.serve import UsersFile

    store, users, token, ids = inbox_demo.prepare(tmp_path / "inbox")
    assert [r.status for r in store.list()] == ["paused"] * 3 and len(ids) == 3
    approver = UsersFile(users).check(token)
    assert approver is not None and (approver.name, approver.role) == ("alice", "approver")


def test_the_inbox_benchmark_runs_at_a_tiny_size() -> None:
    """bench/inbox.py (never timed here) makes its runs, serves them, lists and approves: exit 0,
    four figures (the first page, approve → done, the page after, the page in process), no
    failed decision."""
    import json

    out = subprocess.run(
        [sys.executable, "-m", "bench.inbox", "--runs", "55", "--decisions", "8", "--pages", "3"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr
    figures = [json.loads(line) for line in out.stdout.splitlines()]
    assert [f["n"] for f in figures] == [3, 8, 3, 3] and figures[1]["failures"] == 0
    assert {f["peer"] for f in figures} == {"pyfootprint"}
