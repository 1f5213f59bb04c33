"""A page stays small whatever a run holds: big values are embedded cut, with their size and the
command that prints them whole.

A tool's multi-megabyte result used to be embedded once per place it shows (the history
op and the agent panel's tool result: a 5 MB result made a 10 MB page). Now every string
over ``CUT_AT`` characters is its head and a note naming ``flowchart replay TRACE --at N``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

from agent import Agent, define_tool
from agent._edge.viewer_panel import PANEL
from agent.providers import scripted
from flowchart import flow_chart, narrative
from flowchart.cli import main as flowchart_main
from flowchart.viewer import build_payload, write_page
from flowchart.viewer.payload import CUT_AT, cut_long

BIG = 5_000_000
NOTE = re.compile(
    r"… \[cut by the viewer: 5,000,000 characters in all; the whole value: flowchart replay TRACE(?: --at (\d+))?\]"
)


def _big_tool_trace() -> Any:
    fetch = define_tool(
        name="fetch",
        description="Fetch a document.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: "r" * BIG,
    )
    replies = [{"content": "", "tool_calls": [{"id": "c1", "name": "fetch", "args": {}}]}, "It is long."]
    agent = Agent.create(provider=scripted(replies), model="m").tool(fetch).build()
    assert agent.run("fetch it") == "It is long."
    return agent.last_snapshot().result.trace()


def test_a_multi_megabyte_tool_result_makes_a_small_page(tmp_path: Path) -> None:
    """A 5 MB tool result: the page is under 100 kB (it was 10 MB: the result twice), and every place
    the result shows says its size and how to print it whole (the commit's op: at which commit)."""
    trace = _big_tool_trace()
    page = write_page(trace, tmp_path / "run.html", [PANEL])
    text = page.read_text(encoding="utf-8")
    assert len(text) < 100_000
    notes = NOTE.findall(text)
    ats = {int(at) for at in notes if at}
    assert len(notes) >= 2 and len(ats) == 1
    trace.save(tmp_path / "run.trace.json")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert flowchart_main(["replay", str(tmp_path / "run.trace.json"), "--at", str(ats.pop())]) == 0
    history = json.loads(out.getvalue())["history"]
    assert any(m.get("content") == "r" * BIG for m in history)


def _write(scope: Any) -> None:
    scope.doc = "d" * 3_000_000
    scope.small = "s" * CUT_AT


def test_a_big_state_value_is_cut_and_small_ones_are_kept_whole(tmp_path: Path) -> None:
    """A stage's 3 MB value is embedded as its head and the note; a value of exactly ``CUT_AT``
    characters is embedded whole; the page is a small fraction of the value."""
    trace = flow_chart("Write", _write, "write").build().run(recorders=[narrative()]).trace()
    payload = build_payload(trace)
    (op_doc, op_small) = payload["commits"][0][3]
    assert op_doc[2].startswith("d" * 2000 + "… [cut by the viewer: 3,000,000 characters in all")
    assert op_doc[2].endswith("the whole value: flowchart replay TRACE --at 0]")
    assert op_small[2] == "s" * CUT_AT
    assert (write_page(trace, tmp_path / "p.html").stat().st_size) < 100_000


def test_cut_long_shares_what_it_does_not_cut() -> None:
    """Nothing long: the very same object comes back (no copy); something long: only its path is new."""
    value = {"a": [1, {"b": "x"}], "c": "y"}
    assert cut_long(value) is value
    big = {"keep": value, "long": ["z" * (CUT_AT + 1)]}
    cut = cut_long(big, 7)
    assert cut["keep"] is value and cut["long"][0].endswith("--at 7]") and big["long"][0] == "z" * (CUT_AT + 1)
