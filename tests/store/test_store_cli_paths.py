"""Command lines that touch the file system only where the operator said.

``agent view RUN`` writes ``RUN.html`` in the current directory — a run id is not a path,
so ``../../x`` gets a safe name there, never a file outside it. ``flowchart show`` and the
``agent`` command's ``--agent`` import the module they name from the installed packages;
the current directory is searched only with ``--app-dir .``.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import pytest

from agent.cli import main as agent_main
from flowchart import flow_chart
from flowchart._core.run_ids import file_name
from flowchart.cli import main as flowchart_main
from flowchart.store import SqliteStore

_names = itertools.count()


def _seed(scope: Any) -> None:
    scope.done = True


@pytest.fixture
def deep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory two levels below ``tmp_path``, made current; sys.path restored after."""
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    monkeypatch.chdir(here)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delenv("AGENT_RUNS_DB", raising=False)
    monkeypatch.delenv("AGENT_RUNS_DSN", raising=False)
    return here


def test_agent_view_of_a_run_id_that_climbs_writes_here(
    deep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent view ../../x`` writes a safely named page in the current directory, and prints it."""
    db = str(tmp_path / "runs.db")
    flow_chart("Seed", _seed, "seed").build().run(store=SqliteStore(db), run_id="../../x")
    code = agent_main(["view", "../../x", "--db", db])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    written = Path(out.strip())
    assert written.parent.resolve() == deep.resolve()
    assert written.name == file_name("../../x", ".html") and written.name.startswith("x-")
    assert not any(p.suffix == ".html" for p in tmp_path.rglob("*") if p.parent != deep)


def test_file_names_are_plain_and_distinct() -> None:
    """A plain id is its own name; anything else keeps its plain characters and adds a hash."""
    assert file_name("run-42_a.b", ".html") == "run-42_a.b.html"
    odd = [file_name(rid, ".html") for rid in ("../../x", "..", "/etc/passwd", ".hidden", "a/b", "a_b", "é")]
    assert all("/" not in name and not name.startswith((".", "-")) for name in odd)
    assert len(set(odd)) == len(odd) and odd[-2] == "a_b.html"


MODULE = """
from flowchart import flow_chart
chart = flow_chart("Seed", lambda scope: None, "seed").build()
"""


def test_flowchart_show_searches_the_current_directory_only_when_asked(
    deep: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A module in the working directory is not imported by ``show`` unless ``--app-dir .`` is given;
    the refusal says so."""
    name = f"_cwd_probe_{next(_names)}"
    (deep / f"{name}.py").write_text(MODULE)
    assert flowchart_main(["show", f"{name}:chart"]) == 2
    hint = "(the current directory is not searched: pass --app-dir . to import from it)"
    assert capsys.readouterr().err == f"flowchart: error: cannot import '{name}': no module named '{name}' {hint}\n"
    assert flowchart_main(["show", f"{name}:chart", "--app-dir", "."]) == 0
    assert capsys.readouterr().out.startswith("FlowChart: Seed")


def test_agent_option_searches_the_current_directory_only_when_asked(
    deep: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``agent runs trace RUN --agent MODULE:ATTR`` imports from the working directory only with ``--app-dir .``."""
    name = f"_cwd_agent_{next(_names)}"
    (deep / f"{name}.py").write_text(
        "from agent import Agent\nfrom agent.providers import mock\n"
        "agent = Agent.create(provider=mock('hi'), model='m').build()\n"
    )
    db = str(tmp_path / "runs.db")
    flow_chart("Seed", _seed, "seed").build().run(store=SqliteStore(db), run_id="r1")
    assert agent_main(["runs", "trace", "r1", "--db", db, "--agent", f"{name}:agent"]) == 2
    assert "pass --app-dir . to import from it" in capsys.readouterr().err
    assert agent_main(["runs", "trace", "r1", "--db", db, "--agent", f"{name}:agent", "--app-dir", "."]) == 0
