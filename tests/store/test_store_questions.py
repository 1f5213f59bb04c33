"""A stored agent run's question is typed in any process: the reader is declared (entry point
``flowchart.question_readers``), not registered by importing the agent."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from refund_agent import refund_agent

from flowchart.store import SqliteStore

REPO = Path(__file__).resolve().parents[2]


def test_a_process_that_never_imported_the_agent_reads_the_typed_question(tmp_path: Path) -> None:
    """A fresh interpreter that imports only ``flowchart.store`` gets the paused agent run's
    question as a ``CheckInRequest`` (before: the raw stored dict, because the agent's reader was
    registered only when ``agent`` was imported), and the agent package stays unimported."""
    db = tmp_path / "runs.db"
    paused = refund_agent(SqliteStore(db)).run("Refund order A-1 of 150")
    probe = (
        "import sys\n"
        "from flowchart.store import SqliteStore\n"
        f"q = SqliteStore({str(db)!r}).get({paused.run_id!r}).question\n"
        "print(type(q).__name__, q.tool, 'agent' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.split() == ["CheckInRequest", "refund", "False"]
