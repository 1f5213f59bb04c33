"""``agent runs export RUN... -o DIR``: stored runs as shown trace files, the replay fixtures."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

from agent import Agent
from agent._edge.replay_cli import fixture_name
from agent.cli import main as agent_main
from agent.providers import scripted
from flowchart import Redaction, Trace
from flowchart.store import SqliteStore


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = agent_main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_an_exported_run_hides_what_the_run_hid(tmp_path: Path) -> None:
    """The store keeps the real input (a queued run must start); the fixture file does not."""
    db = tmp_path / "runs.db"
    rule = Redaction(keys={"input_message", "user_message"}, fields={"history": ["[role=user].content"]})
    agent = Agent.create(provider=scripted(["Hello."]), model="m", store=SqliteStore(db), redaction=rule).build()
    agent.run("my card is 4111 1111 1111 1111")
    run_id = agent.last_snapshot().record.run_id
    status, out, _ = _cli("runs", "export", run_id, "-o", str(tmp_path / "runs"), "--db", str(db))
    path = tmp_path / "runs" / f"{run_id}.trace.json"
    assert status == 0 and out.strip() == str(path)
    assert "4111" not in path.read_text()
    assert Trace.load(path).run_input == {"input_message": "REDACTED"}


def test_an_unknown_run_and_an_unsafe_id_are_handled(tmp_path: Path) -> None:
    """An unknown run is one error line; a run id that is not a file name gets a safe one."""
    db = tmp_path / "runs.db"
    SqliteStore(db)
    status, _, err = _cli("runs", "export", "nope", "-o", str(tmp_path / "runs"), "--db", str(db))
    assert status == 2 and err.startswith("agent: error:") and "nope" in err
    assert fixture_name("../../etc/passwd") == "_.._etc_passwd.trace.json"
