"""A big run's page: written in pieces that join to exactly ``render_page``'s text, never whole
in memory, and never half-written."""

from __future__ import annotations

import json
import re
import tracemalloc
from pathlib import Path
from typing import Any

import attrs
import pytest
from viewer_traces import big_trace, hostile_trace

from agent._edge.viewer_panel import PANEL
from agent._edge.viewer_panel import build as agent_build
from flowchart import Trace, flow_chart, narrative
from flowchart.viewer import Panel, build_payload, embed_json, render_page, write_page
from flowchart.viewer import page as page_module

PAYLOAD = re.compile(r'<script type="application/json" id="payload">(.*?)</script>', re.S)


def padded_trace(commits: int, pad: int) -> Trace:
    """W7's shape, smaller: Produce → Work → Check ⟲, a growing list and a ``pad``-character string per commit."""
    passes = commits // 3

    def produce(scope: Any) -> None:
        scope.passes = getattr(scope, "passes", 0) + 1
        scope.items = [*getattr(scope, "items", []), scope.passes][-50:]
        scope.blob = f"{scope.passes:08d}" + "x" * pad

    def work(scope: Any) -> None:
        scope.note = f"{len(scope.items):08d}" + "y" * pad

    def check(scope: Any, ctx: Any) -> None:
        scope.last = f"{scope.passes:08d}" + "z" * pad
        if scope.passes >= passes:
            ctx.stop()

    chart = (
        flow_chart("Produce", produce, "produce")
        .add_function("Work", work, "work")
        .add_function("Check", check, "check")
        .loop_to("produce")
        .build()
    )
    return chart.run(recorders=[narrative()], max_iterations=passes + 1).trace()


@pytest.mark.parametrize("chunk", [1, 7, 256])
def test_a_page_written_in_pieces_is_render_page_and_embeds_the_whole_payload(
    chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever the piece size, the file ``write_page`` writes is ``render_page``'s text byte for
    byte, and its payload element holds ``embed_json(build_payload(trace))``, escapes included."""
    monkeypatch.setattr(page_module, "CHUNK", chunk)
    for trace in (big_trace(60), hostile_trace()):
        path = write_page(trace, tmp_path / "page.html", [PANEL])
        text = path.read_text(encoding="utf-8")
        assert text == render_page(trace, [PANEL])
        found = PAYLOAD.search(text)
        assert found is not None and found.group(1) == embed_json(build_payload(trace, [PANEL]))
        assert json.loads(found.group(1))["commits"][-1][2] == trace.commit_log[-1].stage_id


def test_writing_a_big_page_holds_less_than_the_page(tmp_path: Path) -> None:
    """A 3,000-commit W7-shaped trace read from its file, as ``flowchart view`` does: its page
    (≈ 3.6 MB) is written while Python holds less than the page's size at any moment, most of it
    the per-commit indexes, not text (the whole page used to exist as JSON text, escaped text,
    page text and encoded bytes at once: ≈ 4× its size). The trace's narrative records are read
    before the measure: a loaded trace builds them on first read, and they are the trace's, not the page's."""
    padded_trace(3000, 1000).save(tmp_path / "big.json")
    trace = Trace.load(tmp_path / "big.json")
    assert trace.narrative
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        path = write_page(trace, tmp_path / "big.html")
        held = tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()
    size = path.stat().st_size
    assert size > 3_000_000
    assert held < size, f"held {held:,} bytes for a {size:,}-byte page"


def test_a_page_that_fails_midway_leaves_the_old_file_and_no_temporary_one(tmp_path: Path) -> None:
    """A value that cannot be JSON (a panel's NaN, embedded after the commits) fails the write
    with the encoder's message; the file that was there is untouched and nothing else is left."""
    broken = Panel(name="broken", build=lambda trace: {"ratio": float("nan")}, script="")
    target = tmp_path / "page.html"
    target.write_text("the previous page", encoding="utf-8")
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        write_page(big_trace(3000), target, [broken])
    assert target.read_text(encoding="utf-8") == "the previous page"
    assert [p.name for p in tmp_path.iterdir()] == ["page.html"]


def test_the_agent_panel_tells_an_agent_key_from_its_initial_state_or_any_write() -> None:
    """The agent panel's quick answer for runs that never touch its keys is the replayed one: a run
    that only starts with ``history``, or only writes ``middleware_decisions``, still gets its
    panel; a run that touches neither (the W7 shape) gets none."""
    assert agent_build(padded_trace(30, 10)) is None

    def noop(scope: Any) -> None:
        scope.seen = True

    def ledger(scope: Any) -> None:
        scope.middleware_decisions = [{"middleware": "m", "decision": "allow"}]

    started = attrs.evolve(flow_chart("Noop", noop, "noop").build().run({}).trace(), initial_state={"history": []})
    wrote = flow_chart("Ledger", ledger, "ledger").build().run({}).trace()
    assert agent_build(started) is not None
    assert agent_build(wrote) is not None
