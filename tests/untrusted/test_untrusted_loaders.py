"""Untrusted JSON fails closed: every loader refuses with ONE ``CheckpointError`` naming the path.

Each limit (nesting, integer size, NaN/Infinity, duplicate keys) is shown on the text
loaders (``Checkpoint.from_json``, ``Trace.from_json``) and on the dict loaders, and a
hypothesis fuzz test per loader feeds mutated real documents (``mutations.py``) and
allows only two outcomes: accepted (and then usable), or a ``CheckpointError``.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path
from typing import Any

import pause_charts
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutate

from flowchart import Checkpoint, CheckpointError, Trace, narrative
from flowchart._core.untrusted import MAX_DEPTH, MAX_INT_DIGITS
from flowchart._record.trace import spec_fingerprint
from flowchart.cli import main as flowchart_main
from flowchart.viewer import render_page


def checkpoint_text() -> str:
    """A real checkpoint (two subflows deep) as JSON text."""
    cp = pause_charts.CHARTS["nested"]([]).run({"who": "ada"}).checkpoint
    assert cp is not None
    return cp.to_json()


def trace_dict() -> dict[str, Any]:
    """A real trace of a paused run, with its narrative, as a dict."""
    return pause_charts.CHARTS["nested"]([]).run({"who": "ada"}, recorders=[narrative()]).trace().to_dict()


def nest(depth: int) -> Any:
    """A value of ``depth`` nested lists."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def with_state(key: str, raw: str) -> str:
    """The checkpoint text with ``shared_state[key]`` replaced by the raw JSON ``raw``."""
    data = json.loads(checkpoint_text())
    data["shared_state"][key] = "__HOLE__"
    return json.dumps(data).replace('"__HOLE__"', raw)


def test_nesting_deeper_than_the_limit_is_refused_naming_the_path() -> None:
    """A value nested past ``MAX_DEPTH`` is refused at load, where it starts to be too deep."""
    with pytest.raises(
        CheckpointError, match=rf"^Invalid checkpoint: nested deeper than {MAX_DEPTH} levels @ "
    ) as caught:
        Checkpoint.from_json(with_state("deep", json.dumps(nest(MAX_DEPTH + 5))))
    assert caught.value.path == "$.shared_state.deep" + "[0]" * (MAX_DEPTH - 2)


def test_nesting_past_the_interpreter_limit_is_refused_not_a_recursion_error() -> None:
    """Text nested 5,000 deep (the parser itself would overflow) is one ``CheckpointError``."""
    with pytest.raises(CheckpointError, match=rf"^Invalid checkpoint: nested deeper than {MAX_DEPTH} levels @ \$$"):
        Checkpoint.from_json("[" * 5000 + "]" * 5000)


def test_a_value_just_inside_the_limit_loads_and_saves_again() -> None:
    """What the limit lets in can be used: it saves, loads again and resumes (no later failure)."""
    text = with_state("deep", json.dumps(nest(MAX_DEPTH - 3)))
    cp = Checkpoint.from_json(text)
    assert Checkpoint.from_json(cp.to_json()) == cp
    assert pause_charts.CHARTS["nested"]([]).resume(cp, "yes").state["deep"] == nest(MAX_DEPTH - 3)


def test_an_integer_of_more_than_4300_digits_is_refused() -> None:
    """A 5,000-digit integer is a ``CheckpointError`` naming the path, not Python's ``ValueError``."""
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid checkpoint: an integer of 5000 digits \(at most {MAX_INT_DIGITS} are allowed\) "
        r"@ \$\.shared_state\.big$",
    ):
        Checkpoint.from_json(with_state("big", "9" * 5000))
    assert Checkpoint.from_json(with_state("big", "9" * MAX_INT_DIGITS)).shared_state["big"] == int("9" * 4300)


@pytest.mark.parametrize(("raw", "shown"), [("NaN", "nan"), ("-Infinity", "-inf"), ("1e999", "inf")])
def test_nan_and_infinity_are_refused_at_load(raw: str, shown: str) -> None:
    """NaN, Infinity and a float that overflows are refused at load, not accepted and failing in ``to_json``."""
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid checkpoint: expected a JSON value: a non-finite float \({shown}\) @ \$\.shared_state\.x$",
    ):
        Checkpoint.from_json(with_state("x", raw))


def test_a_non_finite_float_in_a_typed_field_is_refused() -> None:
    """``paused_at: 1e999`` (a float field, not a JSON value field) is refused too, from text and from a dict."""
    data = json.loads(checkpoint_text())
    data["paused_at"] = "__HOLE__"
    message = r"^Invalid checkpoint: expected a JSON value: a non-finite float \(inf\) @ \$\.paused_at$"
    with pytest.raises(CheckpointError, match=message):
        Checkpoint.from_json(json.dumps(data).replace('"__HOLE__"', "1e999"))
    data["paused_at"] = float("inf")
    with pytest.raises(CheckpointError, match=message):
        Checkpoint.from_dict(data)


def test_a_duplicate_key_is_refused_not_last_wins() -> None:
    """``{"amount": 1, "amount": 9999}`` is refused, naming the key, wherever it is."""
    text = with_state("order", '{"amount": 1, "amount": 9999}')
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid checkpoint: duplicate key 'amount' \(an object names each key once\) "
        r"@ \$\.shared_state\.order\.amount$",
    ):
        Checkpoint.from_json(text)
    top = '{"version": 1,' + checkpoint_text()[1:]
    with pytest.raises(CheckpointError, match=r"^Invalid checkpoint: duplicate key 'version' .* @ \$\.version$"):
        Checkpoint.from_json(top)


def test_hand_built_dicts_are_held_to_the_same_limits() -> None:
    """``from_dict`` (no text) refuses a too-deep value and a too-large integer the same way."""
    data = json.loads(checkpoint_text())
    data["shared_state"]["deep"] = nest(MAX_DEPTH + 1)
    with pytest.raises(CheckpointError, match=rf"^Invalid checkpoint: nested deeper than {MAX_DEPTH} levels @ "):
        Checkpoint.from_dict(data)
    data["shared_state"]["deep"] = 10**5000
    with pytest.raises(
        CheckpointError, match=r"^Invalid checkpoint: an integer of more than 4300 digits @ \$\.shared_state\.deep$"
    ):
        Checkpoint.from_dict(data)


def test_trace_files_are_held_to_the_limits() -> None:
    """``Trace.from_json`` refuses a duplicate key deep in the commit log, naming the path."""
    text = json.dumps(trace_dict()).replace('"stage_id": ', '"stage_id": "x", "stage_id": ', 1)
    with pytest.raises(
        CheckpointError, match=r"^Invalid trace: duplicate key 'stage_id' .* @ \$\.commit_log\[0\]\.stage_id$"
    ):
        Trace.from_json(text)


def test_a_re_fingerprinted_spec_of_the_wrong_shape_is_refused_before_the_viewer() -> None:
    """Editing the spec and fingerprinting it again passes the fingerprint, not the shape check."""
    data = trace_dict()
    data["chart_spec"]["stages"][0]["next"] = ["not", "an", "id"]
    data["chart_fingerprint"] = spec_fingerprint(data["chart_spec"])
    with pytest.raises(
        CheckpointError, match=r"^Invalid trace: expected a string, got a list @ \$\.chart_spec\.stages\[0\]\.next$"
    ):
        Trace.from_dict(data)
    data["chart_spec"]["stages"][0]["next"] = "nowhere"
    data["chart_fingerprint"] = spec_fingerprint(data["chart_spec"])
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid trace: 'nowhere' is not a stage on this level @ \$\.chart_spec\.stages\[0\]\.next$",
    ):
        Trace.from_dict(data)


def test_the_fingerprint_is_checked_before_the_spec_shape() -> None:
    """An edited spec whose fingerprint was NOT redone is named as a foreign spec, first."""
    data = trace_dict()
    data["chart_spec"]["stages"] = "broken"
    with pytest.raises(
        CheckpointError, match=r"^Invalid trace: chart_spec does not match chart_fingerprint @ \$\.chart_fingerprint$"
    ):
        Trace.from_dict(data)


def test_an_op_path_longer_than_the_limit_is_refused() -> None:
    """An op path of 1,000 keys (one JSON level, but a 1,000-deep replay) is refused at load."""
    data = trace_dict()
    data["commit_log"][0]["trace"][0]["path"] = ["k"] * 1000
    with pytest.raises(
        CheckpointError,
        match=rf"^Invalid trace: an op path has at most {MAX_DEPTH} keys @ \$\.commit_log\[0\]\.trace\[0\]\.path$",
    ):
        Trace.from_dict(data)


# -- fuzz: one test per loader ------------------------------------------------------------------------
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_checkpoint_from_json_accepts_or_refuses_with_checkpoint_error(rng: random.Random) -> None:
    """Mutated checkpoints: a ``CheckpointError``, or a checkpoint that saves and loads again."""
    text = mutate(json.loads(checkpoint_text()), rng)
    try:
        cp = Checkpoint.from_json(text)
    except CheckpointError:
        return
    assert Checkpoint.from_json(cp.to_json()) == cp


@FUZZ
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_trace_load_accepts_or_refuses_with_checkpoint_error(rng: random.Random, tmp_path_factory: Any) -> None:
    """Mutated trace files: a ``CheckpointError``, or a trace that replays, explains and renders."""
    path = tmp_path_factory.mktemp("fuzz") / "t.json"
    path.write_text(mutate(trace_dict(), rng), encoding="utf-8")
    try:
        trace = Trace.load(path)
    except CheckpointError:
        return
    for key in trace.final_state:
        trace.why(key).format()
    assert Trace.from_json(trace.to_json()).to_dict() == trace.to_dict()
    assert render_page(trace).startswith("<!doctype html>")


@FUZZ
@given(rng=st.randoms(use_true_random=False), command=st.sampled_from(["replay", "narrate", "why", "view"]))
def test_fuzz_the_flowchart_command_fails_with_one_line_naming_the_trace(
    rng: random.Random, command: str, tmp_path_factory: Any
) -> None:
    """``flowchart replay/narrate/why/view`` on a mutated trace: exit 0, or exit 2 with one line
    that is a loader refusal or a documented CLI message — never an exception's class name."""
    folder: Path = tmp_path_factory.mktemp("cli")
    path = folder / "t.json"
    path.write_text(mutate(trace_dict(), rng), encoding="utf-8")
    args = {"replay": [], "narrate": [], "why": ["seed"], "view": ["-o", str(folder / "p.html")]}[command]
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = flowchart_main([command, str(path), *args])
    if status == 0:
        return
    line = err.getvalue()
    assert status == 2 and line.count("\n") == 1, line
    expected = (f"flowchart: error: {path}: Invalid trace", "has no narrative", "was never written")
    assert line.startswith(expected[0]) or any(e in line for e in expected[1:]), line
