"""What the ``agent runs`` commands print is the record: hidden stays hidden, failures show.

The demo's support agent (``examples/support_agent.py``) hides the customer's raw message,
which holds a card number; a stored run keeps its rule, so no reader needs ``--agent``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, Paused, define_tool
from agent._edge.viewer_panel import PANEL
from agent.cli import main
from agent.providers import scripted
from examples.support_agent import QUESTION, build_agent
from flowchart import narrative
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace
from flowchart.viewer import build_payload
from flowchart.viewer import render_page as build_page

CARD = "4111 1111 1111 1111"


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def demo_db(tmp_path: Path) -> tuple[str, str]:
    """A SQLite store holding the demo's paused refund run: (path, run id)."""
    path = str(tmp_path / "runs.db")
    paused = build_agent(SqliteStore(path)).run(QUESTION)
    assert isinstance(paused, Paused) and paused.run_id
    assert CARD in json.dumps(SqliteStore(path).get(paused.run_id).input)  # the store keeps the real input
    return path, paused.run_id


def test_runs_show_hides_what_the_run_hid_without_the_agent(
    demo_db: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent runs show`` (text and ``--json``) prints the input under the run's stored rule."""
    db, run_id = demo_db
    for extra in ((), ("--json",)):
        code, out, _ = _run(capsys, "runs", "show", run_id, "--db", db, *extra)
        assert code == 0
        assert CARD not in out and "1111" not in out
    assert json.loads(out)["input"] == {"input_message": "REDACTED"}


def test_runs_list_json_hides_what_each_run_hid(demo_db: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """``agent runs list --json`` applies each run's own rule to its input."""
    db, run_id = demo_db
    code, out, _ = _run(capsys, "runs", "list", "--json", "--db", db)
    assert code == 0 and CARD not in out
    (row,) = json.loads(out)
    assert (row["run_id"], row["input"]) == (run_id, {"input_message": "REDACTED"})


def test_runs_trace_and_the_viewer_hide_the_input_without_the_agent(
    demo_db: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent runs trace`` with no ``--agent``, ``record_trace`` and the viewer page built
    from it all apply the stored rule."""
    db, run_id = demo_db
    code, out, _ = _run(capsys, "runs", "trace", run_id, "--db", db)
    assert code == 0 and CARD not in out
    assert json.loads(out)["run_input"] == {"input_message": "REDACTED"}
    trace = record_trace(SqliteStore(db).get(run_id))
    assert trace.run_input == {"input_message": "REDACTED"}
    assert CARD not in build_page(trace)


class _Down:
    def complete(self, req: Any) -> Any:
        raise ConnectionError("model server unreachable")


def test_runs_show_prints_a_failed_runs_error_stage_and_narrative(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed run shows its error, the stage that raised, its commits and the narrative so far."""
    db = str(tmp_path / "runs.db")
    agent = Agent.create(provider=_Down(), model="m", store=SqliteStore(db)).build()
    with pytest.raises(ConnectionError):
        agent.run("hello")
    (record,) = SqliteStore(db).list()
    code, out, _ = _run(capsys, "runs", "show", record.run_id, "--db", db)
    assert code == 0
    assert f"run {record.run_id} (agent): failed, 2 commits" in out
    assert "error: ConnectionError: model server unreachable" in out
    assert "failed at: call-llm#1" in out
    assert "narrative:\n  Stage 1:" in out
    code, out, _ = _run(capsys, "runs", "show", record.run_id, "--db", db, "--json")
    assert json.loads(out)["failure"] == {
        "error_type": "ConnectionError",
        "message": "model server unreachable",
        "stage_id": "call-llm",
        "runtime_stage_id": "call-llm#1",
    }


def _lookup(args: dict[str, Any], ctx: Any) -> Any:
    raise LookupError(f"no order {args['order_id']}")


def test_a_tool_that_raises_is_recorded_for_the_developer_not_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The model reads the message; the record (``tool_errors``), the ``tool.error`` event,
    ``agent runs show`` and the viewer get the exception class and a short traceback."""
    db = str(tmp_path / "runs.db")
    tool = define_tool(
        name="lookup",
        description="Look an order up.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
        execute=_lookup,
    )
    provider = scripted(
        [{"content": "", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"order_id": "X"}}]}, "ok"]
    )
    agent = Agent.create(provider=provider, model="m", store=SqliteStore(db)).tool(tool).build()
    seen: list[Any] = []
    agent.on("tool.error", lambda _name, payload: seen.append(payload))
    assert agent.run("where is X?") == "ok"
    row = {
        "tool_name": "lookup",
        "tool_call_id": "c1",
        "iteration": 1,
        "error_type": "LookupError",
        "message": "no order X",
        "traceback": [f"{__name__}:{_lookup.__code__.co_firstlineno + 1} in _lookup"],
    }
    assert seen == [row]
    assert agent.last_snapshot().shared_state["tool_errors"] == [row]
    sent = provider.requests[-1].messages
    assert [m["content"] for m in sent if m["role"] == "tool"] == ["no order X"]
    assert "LookupError" not in json.dumps(sent) and "traceback" not in json.dumps(sent)
    (record,) = SqliteStore(db).list()
    code, out, _ = _run(capsys, "runs", "show", record.run_id, "--db", db)
    assert code == 0 and "tool error: lookup (call c1, iteration 1): LookupError: no order X" in out
    assert f"  {row['traceback'][0]}" in out
    assert build_payload(record_trace(record), [PANEL])["panels"]["agent"]["tool_errors"] == [row]


def test_a_run_without_tool_errors_has_no_tool_errors_key() -> None:
    """Absent means byte-identical: no tool raised, no ``tool_errors`` key."""
    agent = Agent.create(provider=scripted(["hi"]), model="m").build()
    agent.run("hello")
    assert "tool_errors" not in agent.last_snapshot().shared_state


def test_the_cli_writes_utf8_even_on_an_ascii_terminal(tmp_path: Path) -> None:
    """A real ``agent`` process whose stdout is ASCII-only prints UTF-8 (with replacement),
    never a traceback."""
    db = str(tmp_path / "runs.db")
    Agent.create(provider=scripted(["ça va — très bien"]), model="m", store=SqliteStore(db)).build().run("ça va ?")
    (record,) = SqliteStore(db).list()
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    argv = [sys.executable, "-m", "agent.cli", "runs", "show", record.run_id, "--db", db]
    done = subprocess.run(argv, capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr
    assert "output: ça va — très bien" in done.stdout.decode("utf-8")


def test_the_flowchart_cli_writes_utf8_even_on_an_ascii_terminal(tmp_path: Path) -> None:
    """``flowchart narrate`` on an ASCII-only stdout prints the narrative as UTF-8, exit 0."""
    from flowchart import flow_chart

    def seed(scope: Any) -> None:
        scope.greeting = "héllo ✓"

    path = tmp_path / "t.json"
    flow_chart("Seed", seed, "seed").build().run(recorders=[narrative()]).trace().save(path)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-m", "flowchart.cli", "narrate", str(path)], capture_output=True, env=env)
    assert done.returncode == 0 and b"Traceback" not in done.stderr
    assert "héllo ✓" in done.stdout.decode("utf-8")
