"""``flowchart.testing``'s replay pieces in this process: ``ReplayRun`` against a chart or an agent,
its refusals, and today's replayed run accepted into a trace snapshot."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import world
from syrupy.assertion import SnapshotAssertion

from agent import Agent
from agent.providers import scripted
from agent.replaying import ReplayInputError, replayer
from flowchart import DiffError, Redaction, Trace, flow_chart
from flowchart.testing import ReplayRun, replay_fixtures


def _fixture(tmp_path: Path, result: Any, name: str = "run") -> ReplayRun:
    path = tmp_path / f"{name}.trace.json"
    Trace.of(result.record.shown()).save(path)
    return ReplayRun(path, Trace.load(path).record.shown())


def test_a_chart_fixture_replays_and_a_changed_chart_fails_with_the_diff(tmp_path: Path) -> None:
    """``check`` passes on the chart that recorded the run and fails, with the decision diff,
    on the chart with its decider rule off by one."""
    run = _fixture(tmp_path, world.build_chart().run(world.CHART_INPUTS[1]))
    assert run.check(world.build_chart()).same
    with pytest.raises(
        pytest.fail.Exception, match=r"(?s)the replayed run moved\n.*first divergent commit: #2 check#2"
    ):
        run.check(world.build_chart("decider rule off by one"))


def test_a_fixture_from_another_chart_and_a_missing_target_are_refused(tmp_path: Path) -> None:
    """Another chart: both fingerprints named. No target: how to give one."""
    run = _fixture(tmp_path, world.build_chart().run(world.CHART_INPUTS[0]))
    other = flow_chart("Only", lambda scope: None, "only").build()
    with pytest.raises(DiffError, match=r"run.trace.json is a run of chart \w+…, not of the target chart \w+…"):
        run.check(other)
    with pytest.raises(pytest.UsageError, match="replay_run needs a target: pass --replay-target MODULE:ATTR"):
        run.check()
    with pytest.raises(pytest.UsageError, match=r"--replay .*: no such directory"):
        replay_fixtures(tmp_path / "absent")
    assert replay_fixtures(tmp_path) == [tmp_path / "run.trace.json"]


def test_an_agent_run_whose_input_is_hidden_cannot_be_replayed(tmp_path: Path) -> None:
    """A record hiding ``input_message``: the replayer says what to export instead."""
    question, replies = world.SCRIPTS["hello"]
    rule = Redaction(keys={"input_message"})
    hidden = Agent.create(provider=scripted(replies), model="shop-model", redaction=rule).system(world.PROMPT).build()
    hidden.run(question)
    with pytest.raises(ReplayInputError, match="hides its input \\(input_message is redacted\\)"):
        replayer(hidden)(hidden.last_snapshot().record)


def test_todays_replayed_run_is_accepted_into_a_trace_snapshot(
    tmp_path: Path, trace_snapshot: SnapshotAssertion
) -> None:
    """``replay_run.rerun()`` is a run like any other: ``--snapshot-update`` accepts it."""
    question, replies = world.SCRIPTS["status"]
    agent = world.build_agent(scripted(replies))
    agent.run(question)
    run = _fixture(tmp_path, agent.last_snapshot())
    today = run.rerun(world.target())
    assert today.record.run_id != run.fixture.run_id
    assert today == trace_snapshot


def test_the_plugin_runs_from_its_entry_point_and_once_when_also_named(tmp_path: Path) -> None:
    """``pytest --replay DIR`` works as installed; naming ``-p flowchart.testing`` as well registers
    nothing twice; without ``--replay`` a replay test is skipped, saying why."""
    import os
    import subprocess
    import sys
    import textwrap

    runs = tmp_path / "runs"
    runs.mkdir()
    for args in world.CHART_INPUTS:
        Trace.of(world.build_chart().run(args).record.shown()).save(runs / f"{len(args['items'])}.trace.json")
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "test_suite.py").write_text(
        textwrap.dedent(
            """
            import world

            def test_replay(replay_run):
                replay_run.check(world.build_chart())
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}

    def pytest_run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", "-rs", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.stdout

    assert "2 passed" in pytest_run("--replay", str(runs), "test_suite.py")
    assert "2 passed" in pytest_run("-p", "flowchart.testing", "--replay", str(runs), "test_suite.py")
    assert "SKIPPED [1] test_suite.py: no --replay DIR given" in pytest_run("test_suite.py")
