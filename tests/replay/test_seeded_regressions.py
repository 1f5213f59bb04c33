"""Done-when of issue 34: ten seeded regressions over a set of recorded runs — the replay suite
(``pytest --replay DIR`` with ``flowchart.testing``) fails on each, naming the first divergent
commit, and passes on the unchanged code.

The runs are recorded into a real SQLite run store, exported with ``agent runs export``, and the
suite runs in a pytest process of its own, as a user runs it (``pytest --replay DIR``: the plugin
is the installed entry point); its JUnit report is read back.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import world

from agent.cli import main as agent_main
from flowchart.store import SqliteStore

HERE = Path(__file__).parent


def _export(tmp_path: Path) -> Path:
    db = tmp_path / "runs.db"
    ids = world.record_runs(SqliteStore(db))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = agent_main(["runs", "export", *ids, "-o", str(tmp_path / "runs"), "--db", str(db)])
    assert status == 0 and len(out.getvalue().splitlines()) == len(ids)
    return tmp_path / "runs"


SUITE = textwrap.dedent(
    """
    import pytest
    import world

    @pytest.mark.parametrize("regression", ("unchanged",) + world.REGRESSIONS)
    def test_replay(replay_run, regression):
        try:
            replay_run.check(world.target(regression))
        finally:
            assert world.REFUNDS == [], "a replay ran the refund tool"
    """
)


def test_the_replay_suite_fails_on_each_seeded_regression_and_passes_unchanged(tmp_path: Path) -> None:
    """Every recorded run replays unchanged (the refund paused for alice: her answer is replayed);
    each of the eleven regressions fails at least one, and
    every failure names the first divergent commit. The refund (an effect) is never run again:
    the suite's process, which recorded nothing, ends with no refund made."""
    runs = _export(tmp_path)
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    report = tmp_path / "report.xml"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--replay",
            str(runs),
            f"--junitxml={report}",
            "test_suite.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    cases = ET.parse(report).getroot().iter("testcase")
    outcome: dict[str, dict[str, str]] = {}
    for case in cases:
        name = case.get("name", "")  # test_replay[<fixture>-<regression>]
        fixture, _, regression = name[len("test_replay[") : -1].partition("-")
        failure = case.find("failure")
        outcome.setdefault(regression, {})[fixture] = "" if failure is None else failure.get("message", "")
    assert len(outcome) == 1 + len(world.REGRESSIONS) and all(len(per) == 5 for per in outcome.values()), done.stdout[
        -2000:
    ]
    assert all(text == "" for text in outcome["unchanged"].values()), outcome["unchanged"]
    for regression in world.REGRESSIONS:
        failed = [text for text in outcome[regression].values() if text]
        assert failed, f"{regression}: the replay suite did not notice"
        assert all("the replayed run moved" in text and "first divergent commit: #" in text for text in failed), failed
    threshold = [text for text in outcome["check-in threshold raised"].values() if text]
    assert any("check-in issue_refund: approved by alice → not asked" in text for text in threshold), threshold
    assert done.returncode == 1
