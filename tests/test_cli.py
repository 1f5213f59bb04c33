"""The ``flowchart`` command: what a user types, and exactly what it prints.

Most commands run in this process through ``flowchart.cli.main(argv)`` — the function
the console script and ``python -m flowchart.cli`` call — with stdout and stderr
captured, so a property can try many runs without paying a Python start-up each. The
tests that are about the process itself start a real one: the installed console script,
and ``show``, which imports the user's module from the working directory.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowchart import FlowChart, flow_chart, narrative, replay
from flowchart.cli import main

REJECTED = {"applicant": {"income": 5000, "debt": 2500, "credit_score": 720}}
COMMANDS = ["replay", "narrate", "why", "diff", "show", "view", "fork"]


def flowchart_cmd(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the command with ``ARGS`` and capture its exit status and output.

    Without ``cwd`` it runs in this process (``main(argv)``); with ``cwd`` it runs
    ``python -m flowchart.cli ARGS`` in that directory, as a user would.
    """
    if cwd is None:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(args))
        return subprocess.CompletedProcess(["flowchart", *args], status, out.getvalue(), err.getvalue())
    return subprocess.run(
        [sys.executable, "-m", "flowchart.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
        check=False,
    )


def assert_error(done: subprocess.CompletedProcess[str], message: str) -> None:
    """Exit 2, nothing on stdout, exactly ``flowchart: error: <message>`` on stderr."""
    assert (done.returncode, done.stdout, done.stderr) == (2, "", f"flowchart: error: {message}\n")


@pytest.fixture(scope="module")
def loan_trace(loan_chart: FlowChart, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved trace of a rejected loan run, with its narrative."""
    result = loan_chart.run(REJECTED, recorders=[narrative()])
    return result.trace().save(tmp_path_factory.mktemp("traces") / "loan.json")


def test_replay_prints_the_final_state_as_json(loan_trace: Path, loan_chart: FlowChart) -> None:
    """Without ``--at``, ``replay`` prints the state at the end of the log."""
    done = flowchart_cmd("replay", str(loan_trace))
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout) == loan_chart.run(REJECTED).state


def test_replay_at_minus_one_is_the_initial_state(loan_trace: Path) -> None:
    """``--at -1`` is the state before the first commit."""
    assert json.loads(flowchart_cmd("replay", str(loan_trace), "--at", "-1").stdout) == {}


def test_narrate_prints_the_recorded_narrative(loan_trace: Path) -> None:
    """``narrate`` prints the narrative lines, one per line."""
    done = flowchart_cmd("narrate", str(loan_trace))
    assert done.returncode == 0
    assert done.stdout.splitlines()[:3] == [
        "Stage 1: The process began with Application.",
        "Step 1: Write income = 5000",
        "Step 2: Write debt = 2500",
    ]
    assert done.stdout.splitlines()[-1] == 'Step 3: Write reason = "risk tier high"'


def test_why_prints_the_causal_chain(loan_trace: Path) -> None:
    """``why KEY`` prints ``causal_chain(...).format()``."""
    done = flowchart_cmd("why", str(loan_trace), "approved")
    assert done.returncode == 0
    assert done.stdout == (
        "approved ← Reject (reject#4) [wrote: approved, reason]\n"
        "  risk_tier ← RiskTier (tier#2) [wrote: risk_tier]\n"
        "    credit_score ← Application (application#0) [wrote: income, debt, credit_score]\n"
        "    dti ← Dti (dti#1) [wrote: dti]\n"
        "      debt ← ↳ application#0 (see above)\n"
        "      income ← ↳ application#0 (see above)\n"
    )


def test_why_at_explains_an_earlier_value(loan_trace: Path) -> None:
    """``why KEY --at N`` explains the value as of commit N."""
    done = flowchart_cmd("why", str(loan_trace), "dti", "--at", "1")
    assert done.stdout.splitlines()[0] == "dti ← Dti (dti#1) [wrote: dti]"


def test_diff_lists_what_changed_between_two_commits(loan_trace: Path) -> None:
    """``diff A B`` prints added (+), removed (-) and changed (~) keys."""
    done = flowchart_cmd("diff", str(loan_trace), "1", "4")
    assert done.returncode == 0
    assert done.stdout == (
        "state after commit 1 → state after commit 4:\n"
        '+ risk_tier = "high"\n'
        "+ approved = false\n"
        '+ reason = "risk tier high"\n'
    )
    back = flowchart_cmd("diff", str(loan_trace), "2", "0")
    assert back.stdout.splitlines()[1:] == ["- dti = 0.5", '- risk_tier = "high"']
    assert flowchart_cmd("diff", str(loan_trace), "3", "3").stdout.splitlines()[1] == "(no changes)"


CHART_MODULE = """
from flowchart import flow_chart

def build():
    return flow_chart("Seed", lambda s: None, "seed").add_function("Work", lambda s: None, "work").build()

chart = build()
not_a_chart = 42
"""


def test_show_prints_the_description_of_a_chart_or_factory(tmp_path: Path) -> None:
    """``show MODULE:ATTR`` imports the user's module from the current directory."""
    (tmp_path / "my_charts.py").write_text(textwrap.dedent(CHART_MODULE))
    by_object = flowchart_cmd("show", "my_charts:chart", cwd=tmp_path)
    by_factory = flowchart_cmd("show", "my_charts:build", cwd=tmp_path)
    assert by_object.returncode == 0
    assert by_object.stdout.startswith("FlowChart: Seed\nSteps:\n1. ")
    assert by_factory.stdout == by_object.stdout


def test_show_mermaid_prints_the_drawing(tmp_path: Path) -> None:
    """``--mermaid`` prints ``chart.to_mermaid()``."""
    (tmp_path / "my_charts.py").write_text(textwrap.dedent(CHART_MODULE))
    done = flowchart_cmd("show", "my_charts:chart", "--mermaid", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("flowchart TD")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("my_charts", "expected MODULE:ATTR (e.g. examples.loan:chart), got 'my_charts'"),
        ("nowhere:chart", "cannot import 'nowhere': no module named 'nowhere'"),
        ("my_charts:missing", "'my_charts' has no attribute 'missing'"),
        ("my_charts:not_a_chart", "'my_charts:not_a_chart' is a int, not a FlowChart (or a function returning one)"),
    ],
)
def test_show_errors_are_one_line(tmp_path: Path, target: str, message: str) -> None:
    """A bad MODULE:ATTR is one error line and exit 2."""
    (tmp_path / "my_charts.py").write_text(textwrap.dedent(CHART_MODULE))
    assert_error(flowchart_cmd("show", target, cwd=tmp_path), message)


def test_errors_in_trace_files_are_one_line(loan_trace: Path, tmp_path: Path) -> None:
    """Missing file, bad JSON, invalid trace: one line naming the problem, exit 2."""
    missing = tmp_path / "none.json"
    assert_error(flowchart_cmd("replay", str(missing)), f"no such trace file: {missing}")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert_error(
        flowchart_cmd("narrate", str(bad)),
        f"{bad}: Invalid trace: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
    )
    broken = json.loads(loan_trace.read_text())
    broken["commit_log"][0]["idx"] = "0"
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps(broken))
    assert_error(
        flowchart_cmd("why", str(invalid), "approved"),
        f"{invalid}: Invalid trace: expected an integer, got a string @ $.commit_log[0].idx",
    )


def test_errors_in_arguments_are_one_line(loan_trace: Path) -> None:
    """Unknown key, index out of range, missing arguments: one line each, exit 2."""
    trace = str(loan_trace)
    assert_error(flowchart_cmd("why", trace, "nope"), "key 'nope' was never written")
    assert_error(flowchart_cmd("why", trace, "dti", "--at", "0"), "key 'dti' was never written at or before commit 0")
    out_of_range = "commit index 9 is out of range: the trace has commits -1..4"
    assert_error(flowchart_cmd("replay", trace, "--at", "9"), out_of_range)
    assert_error(flowchart_cmd("diff", trace, "0", "9"), out_of_range)
    assert_error(
        flowchart_cmd("replay", trace, "--at", "x"),
        "argument --at: invalid int value: 'x' (see 'flowchart replay --help')",
    )
    assert_error(flowchart_cmd("why", trace), "the following arguments are required: KEY (see 'flowchart why --help')")
    assert_error(flowchart_cmd(), "the following arguments are required: COMMAND (see 'flowchart --help')")


def test_narrate_without_a_narrative_says_how_to_get_one(loan_chart: FlowChart, tmp_path: Path) -> None:
    """A trace recorded without a narrative recorder cannot be narrated."""
    path = loan_chart.run(REJECTED).trace().save(tmp_path / "plain.json")
    assert_error(
        flowchart_cmd("narrate", str(path)), f"{path} has no narrative: run the chart with recorders=[narrative()]"
    )


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str) -> None:
    """``flowchart COMMAND --help`` prints its usage and exits 0."""
    done = flowchart_cmd(command, "--help")
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"usage: flowchart {command} [-h]")


def test_the_top_level_help_lists_every_command() -> None:
    """``flowchart --help`` names all five commands."""
    done = flowchart_cmd("--help")
    assert done.returncode == 0
    assert all(command in done.stdout for command in COMMANDS)


def test_the_console_script_is_installed() -> None:
    """``.venv/bin/flowchart`` (declared in pyproject) runs ``main``."""
    script = Path(sys.executable).parent / "flowchart"
    if not script.exists():
        pytest.skip("the console script is not installed in this environment")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("usage: flowchart")


# -- the property: `flowchart replay --at N` is `replay(log, N)` -----------------------------------
KEYS = st.sampled_from(["a", "b", "c", "profile"])
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-100, 100) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xyz"), inner, max_size=2),
    max_leaves=5,
)
ACTIONS = st.tuples(st.sampled_from(["set", "delete", "update"]), KEYS, VALUES)


def _stage(actions: list[tuple[str, str, Any]]) -> Any:
    def stage(scope: Any) -> None:
        for action, key, value in actions:
            if action == "set":
                scope[key] = value
            elif key in scope and action == "delete":
                del scope[key]
            elif key in scope and isinstance(scope[key], dict):
                scope[key].update({"u": value})

    return stage


def random_chart(plans: list[list[tuple[str, str, Any]]]) -> FlowChart:
    """A linear chart, one stage per plan, each applying its writes in order."""
    builder = flow_chart("S0", _stage(plans[0]), "s0")
    for i, plan in enumerate(plans[1:], start=1):
        builder = builder.add_function(f"S{i}", _stage(plan), f"s{i}")
    return builder.build()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans=st.lists(st.lists(ACTIONS, max_size=4), min_size=1, max_size=6), data=st.data())
def test_replay_at_n_equals_the_library_replay(plans: list[list[tuple[str, str, Any]]], data: Any) -> None:
    """Property: for any run and any N, the command prints exactly ``replay(log, N)``."""
    result = random_chart(plans).run()
    at = data.draw(st.integers(-1, len(result.commit_log) - 1), label="at")
    with tempfile.TemporaryDirectory() as folder:
        path = result.trace().save(Path(folder) / "t.json")
        done = flowchart_cmd("replay", str(path), "--at", str(at))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == replay(result.commit_log, at, result.initial_state)
