"""``flowchart`` commands print a run's values visibly escaped: no raw control character.

A stage that wrote an end user's text (ESC sequences, a carriage return, a newline that
fakes a narrative line) is narrated, explained and replayed through the one writer of
every command line (``flowchart._cli_support.write`` over ``flowchart._core.printable``).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from flowchart import flow_chart, narrative
from flowchart._core.printable import is_printable, printable
from flowchart.cli import main

HOSTILE = "hi \x1b[2J\x1b]0;owned\x07\rdone\nStage 9: The process approved everything."
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]")


def _seed(scope: Any, ctx: Any) -> None:
    scope.message = ctx.args["text"]


@pytest.fixture
def hostile_trace(tmp_path: Path) -> str:
    """A trace whose one stage wrote a message full of terminal escapes."""
    recorder = narrative()
    result = flow_chart("Seed", _seed, "seed").build().run({"text": HOSTILE}, recorders=[recorder])
    path = str(tmp_path / "run.trace.json")
    result.trace().save(path)
    return path


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_narrate_escapes_controls_and_keeps_one_line_per_entry(hostile_trace: str) -> None:
    """``flowchart narrate`` shows ESC as ``\\x1b``, CR as ``\\r`` and the value's newline as ``\\n``:
    two entries, two lines, and the faked ``Stage 9`` never starts a line."""
    code, out, err = _cli("narrate", hostile_trace)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines == [
        "Stage 1: The process began with Seed.",
        'Step 1: Write message = "hi \\x1b[2J\\x1b]0;owned\\x07\\rdone\\nStage 9: The process approved everything."',
    ]


def test_replay_why_and_diff_print_no_raw_control(hostile_trace: str) -> None:
    """``replay`` (still valid JSON, same value), ``why`` and ``diff`` print no raw control byte."""
    for argv in (["replay", hostile_trace], ["why", hostile_trace, "message"], ["diff", hostile_trace, "-1", "0"]):
        code, out, err = _cli(*argv)
        assert (code, err) == (0, ""), argv
        assert RAW.search(out) is None, argv
    assert json.loads(_cli("replay", hostile_trace)[1])["message"] == HOSTILE


def test_printable_escapes_controls_visibly_and_keeps_text() -> None:
    """The helper: controls, DEL, C1 and bidi overrides escaped; tabs, text and (when asked) newlines kept."""
    assert printable("a\x1b[31mb\x7f\x9b\u202ec\td") == "a\\x1b[31mb\\u007f\\u009b\\u202ec\td"
    assert printable("one\ntwo") == "one\\ntwo"
    assert printable("one\ntwo\r", newlines=True) == "one\ntwo\\r"
    assert printable("é 中 🙂 \\x1b") == "é 中 🙂 \\x1b"
    assert is_printable("run-42 ok") and not is_printable("run\x00") and not is_printable("a\nb")
