"""Nothing an end user typed, or a caller chose as a run id, reaches the operator's terminal raw.

Every ``agent`` command writes through one writer (``flowchart._cli_support.write``), which
escapes control characters visibly: ESC becomes the four characters ``\\x1b``, so an
escape sequence hidden in a message cannot clear the screen, set the window title or fake
a line of output. Each test runs a real command and checks the bytes it printed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from refund_agent import REFUNDS, refund_agent

from agent.cli import main
from flowchart.store import SqliteStore

#: clear the screen, set the window title (OSC), a carriage return and a fake line
HOSTILE = "refund order A-1 \x1b[2J\x1b]0;owned\x07\rStage 9: approved by admin\n 20"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


@pytest.fixture
def hostile_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A run store with one finished run whose user message carries terminal escapes."""
    monkeypatch.delenv("AGENT_RUNS_DB", raising=False)
    monkeypatch.delenv("AGENT_RUNS_DSN", raising=False)
    path = str(tmp_path / "runs.db")
    REFUNDS.clear()
    refund_agent(SqliteStore(path)).run(HOSTILE)
    REFUNDS.clear()
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_show_escapes_the_users_control_characters(hostile_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``agent runs show`` prints the hostile message with ESC as ``\\x1b`` and no raw control byte."""
    (record,) = SqliteStore(hostile_db).list()
    code, out, err = _run(capsys, "runs", "show", record.run_id, "--db", hostile_db)
    assert (code, err) == (0, "")
    assert RAW.search(out) is None
    assert "\\x1b[2J" in out and "\\x1b]0;owned\\x07" in out


def test_every_line_of_runs_show_and_why_is_free_of_raw_controls(
    hostile_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``runs list``, ``runs show --json``, ``why`` and ``conversations``-style outputs carry no raw
    control byte, and no printed line starts with the faked ``Stage 9`` text."""
    (record,) = SqliteStore(hostile_db).list()
    for argv in (
        ["runs", "list", "--db", hostile_db],
        ["runs", "show", record.run_id, "--db", hostile_db],
        ["runs", "show", record.run_id, "--json", "--db", hostile_db],
        ["why", record.run_id, "--db", hostile_db],
        ["why", record.run_id, "--keys", "--db", hostile_db],
    ):
        code, out, err = _run(capsys, *argv)
        assert code == 0, (argv, err)
        assert RAW.search(out) is None, argv
        assert not any(line.lstrip().startswith("Stage 9") for line in out.splitlines()), argv


def test_an_error_naming_a_hostile_run_id_is_escaped(hostile_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A run id typed with an OSC title sequence is named in the one error line, escaped."""
    code, out, err = _run(capsys, "runs", "show", "x\x1b]0;owned\x07", "--db", hostile_db)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and RAW.search(err) is None
    assert "x\\x1b]0;owned\\x07" in err
