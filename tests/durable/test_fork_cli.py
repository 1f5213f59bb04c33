"""``flowchart fork TRACE --chart MODULE:ATTR --at K --set KEY=JSON [--out FILE]``."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from fork_charts import big_chart
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import Trace
from flowchart.cli import CliError, main, parse_set


def flowchart(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(args))
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return big_chart().run().trace().save(tmp_path_factory.mktemp("traces") / "run.json")


def test_fork_prints_the_forked_state_and_saves_its_trace(trace_file: Path, tmp_path: Path) -> None:
    """--set values are JSON; the final state prints as JSON; --out saves the fork's trace."""
    out = tmp_path / "fork.json"
    status, stdout, stderr = flowchart(
        "fork",
        str(trace_file),
        "--chart",
        "fork_charts:big_chart",
        "--at",
        "8",
        "--set",
        "total=1",
        "--set",
        'note="hi"',
        "--out",
        str(out),
    )
    assert (status, stderr) == (0, "")
    state = json.loads(stdout)
    assert (state["doubled"], state["note"]) == (3, "hi")
    saved = Trace.load(out)
    assert saved.commit_log[0].decision == {"forked_from": Trace.load(trace_file).run_id, "at": 8}
    assert saved.final_state == state


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--at", "11"],
            "commit 11 is not a fork point (the children of one parallel batch commit together); "
            "the nearest valid commits are 10 or 12",
        ),
        (["--at", "2", "--set", "limit"], "--set 'limit': expected KEY=JSON"),
        (["--at", "2", "--set", "limit={"], "--set limit: the value is not JSON"),
        (["--at", "9,x"], "--at 9,x: expected a commit index K or a path M,J (ints)"),
        (["--at", "8,0"], "commit (8) ('check') is not a subflow mount that ran on its own"),
    ],
)
def test_fork_errors_are_one_line(trace_file: Path, args: list[str], message: str) -> None:
    """A bad fork point or a bad --set is one error line and exit 2, no traceback."""
    status, stdout, stderr = flowchart("fork", str(trace_file), "--chart", "fork_charts:big_chart", *args)
    assert (status, stdout) == (2, "")
    assert stderr.startswith(f"flowchart: error: {message}") and stderr.count("\n") == 1


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_parse_set_either_parses_or_says_why(text: str) -> None:
    """Fuzz: any text is a (key, JSON value) pair or a CliError — never another exception."""
    try:
        key, value = parse_set(text)
    except CliError as exc:
        assert str(exc).startswith("--set ")
    else:
        assert text.startswith(key + "=") and key.strip()
        assert json.loads(text[len(key) + 1 :]) == value


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(
        st.text(min_size=1, max_size=5).filter(lambda k: "=" not in k and k.strip()), st.integers() | st.text()
    )
)
def test_parse_set_round_trips_json(values: dict[str, object]) -> None:
    """What json.dumps writes, --set reads back."""
    for key, value in values.items():
        assert parse_set(f"{key}={json.dumps(value)}") == (key, value)


def test_fork_at_a_commit_inside_a_subflow(trace_file: Path) -> None:
    """``--at M,J`` forks at commit J of the subflow mounted at commit M: the patch lands in
    the subflow's state (Sub doubled t=6 to 12; the fork sets t=100, Inc makes it 101)."""
    status, stdout, stderr = flowchart(
        "fork", str(trace_file), "--chart", "fork_charts:big_chart", "--at", "9,0", "--set", "t=100"
    )
    assert (status, stderr) == (0, "")
    assert json.loads(stdout)["doubled"] == 101
