"""The page as text, without a browser: escaping, the CSP, the layout, the narrative map, the CLI."""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from viewer_harness import off_loop
from viewer_traces import HOSTILE, hostile_trace, loan_trace, support_traces

from agent._edge.viewer_panel import PANEL, model_calls, written_at
from flowchart.cli import main
from flowchart.viewer import build_payload, embed_json, layout_spec, render_page
from flowchart.viewer.payload import stage_kinds


@given(
    st.recursive(
        st.text() | st.integers() | st.none(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner)
    )
)
def test_embedded_json_round_trips_and_cannot_close_a_script(value: object) -> None:
    """Any JSON value: the embedded text parses back to it and holds no < > & U+2028 U+2029."""
    text = embed_json(value)
    assert json.loads(text) == value
    assert not set(text) & {"<", ">", "&", "\u2028", "\u2029"}


def test_a_hostile_trace_leaves_only_our_two_script_elements() -> None:
    """``</script>`` in names and values never reaches the markup: exactly our two script elements."""
    page = render_page(hostile_trace())
    assert page.lower().count("</script>") == 2 and page.lower().count("<script") == 2
    assert "<!--" not in page and "<img" not in page.lower()
    payload = re.search(r'<script type="application/json" id="payload">(.*?)</script>', page, re.S)
    assert payload is not None
    assert json.loads(payload.group(1))["commits"][0][3][0] == [["note"], "set", HOSTILE]
    assert "hunter2" not in page  # the redacted value never entered the trace


def test_the_csp_allows_exactly_the_inline_script_and_no_network() -> None:
    """The CSP names our script's SHA-256 and forbids fetching anything (``default-src 'none'``)."""
    page = render_page(loan_trace())
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp is not None and "default-src 'none'" in csp.group(1)
    script = re.findall(r"<script>(.*?)</script>", page, re.S)
    assert len(script) == 1
    digest = base64.b64encode(hashlib.sha256(script[0].encode()).digest()).decode()
    assert f"'sha256-{digest}'" in csp.group(1)
    assert not re.search(r'\s(src|href)="(?!#)', page)  # nothing to load: no src/href but fragment links
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_layers_go_down_and_nodes_in_a_layer_do_not_overlap() -> None:
    """Every non-loop edge points down; nodes sharing a row are apart."""
    spec = loan_trace().chart_spec
    layout = layout_spec(spec)
    nodes = {n.id: (n, ox, oy) for n, ox, oy in layout.walk()}
    assert set(nodes) == set(stage_kinds(spec))
    for edge in layout.edges:
        if edge.kind != "loop":
            assert nodes[edge.target][0].y > nodes[edge.source][0].y
    placed = sorted((n.y, n.x, n.w) for n, _, _ in nodes.values())
    for (y1, x1, w1), (y2, x2, _) in itertools.pairwise(placed):
        assert y1 != y2 or x1 + w1 <= x2


def test_a_subflow_is_laid_out_inside_its_mount() -> None:
    """The support agent's Final box contains PrepareFinal and BreakFinal."""
    _, trace = off_loop(support_traces)
    boxes = {n.id: (ox + n.x, oy + n.y, n.w, n.h) for n, ox, oy in layout_spec(trace.chart_spec).walk()}
    fx, fy, fw, fh = boxes["final"]
    for inner in ("final/prepare-final", "final/break-final"):
        x, y, w, h = boxes[inner]
        assert fx <= x and x + w <= fx + fw and fy <= y and y + h <= fy + fh


def test_agent_rows_link_to_the_commit_that_added_them() -> None:
    """``append`` and ``set`` ops both give each list item the commit that added it."""
    from flowchart import Commit, Op

    log = [
        Commit(0, "A", "a", "a#0", (Op(("history",), "set", [1, 2]),)),
        Commit(1, "B", "b", "b#1", (Op(("history",), "append", [3]),)),
    ]
    assert written_at(log, "history", None) == [0, 0, 1]
    assert written_at(log, "history", [1]) == [None, 0, 1]
    history = [
        {"role": "user"},
        {"role": "assistant", "tool_calls": [{"id": "c"}]},
        {"role": "tool", "tool_call_id": "c"},
    ]
    assert model_calls(history, [None, 0, 1]) == [{"message": 1, "inputs": [0], "seen": 1, "results": [2], "commit": 0}]


def test_flowchart_view_writes_the_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``flowchart view TRACE -o PAGE`` prints the page path; a missing trace is one error line, exit 2."""
    trace_file = loan_trace().save(tmp_path / "loan.trace.json")
    assert main(["view", str(trace_file), "-o", str(tmp_path / "page.html")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "page.html")
    assert (tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert main(["view", str(trace_file)]) == 0
    assert (tmp_path / "loan.trace.html").exists()
    assert main(["view", str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.startswith("flowchart: error: no such trace file")


def test_decision_evidence_comes_from_the_commit_even_without_a_narrative() -> None:
    """A run recorded without a narrative still carries each decider's evidence to the page."""
    from examples import loan
    from flowchart.viewer.payload import build_payload

    trace = loan.chart.run({"applicant": loan.APPLICANT}).trace()
    payload = build_payload(trace)
    route = next(c.idx for c in trace.commit_log if c.stage_id == "route")
    choice = payload["choices"][route]
    assert trace.narrative is None
    assert choice["chosen"] == "approve"
    assert [r["matched"] for r in choice["evidence"]["rules"]] == [True]
    others = [c for c, commit in zip(payload["choices"], trace.commit_log, strict=True) if commit.stage_id != "route"]
    assert others == [None] * (len(trace.commit_log) - 1)


def test_the_resumed_demo_shows_who_approved_on_the_commit_that_recorded_it() -> None:
    """The agent panel's resumed section carries alice's decision row and the commit that wrote it."""
    _paused, resumed = off_loop(support_traces)
    agent = build_payload(resumed, [PANEL])["panels"]["agent"]
    decision, at = agent["resumed"]["decision"], agent["resumed"]["decision_at"]
    assert (decision["by"], decision["approved"], decision["tool"]) == ("alice", True, "issue_refund")
    assert resumed.commit_log[at].written_keys == ("human_decisions",)
    assert agent["decisions"] == [decision] and agent["decisions_at"] == [at]
