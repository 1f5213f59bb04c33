"""The demo's page tells the run's story: a title that names the run, timeline text not cut,
every model call counted, tool output shown as the text it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from viewer_harness import View, off_loop
from viewer_traces import HOSTILE

from flowchart import Commit, Trace, flow_chart

Open = Callable[[Trace, str], View]


def test_an_agent_run_is_titled_by_the_users_message(viewer: Open, stored_support: Trace, loan: Trace) -> None:
    """The stored demo's page and heading read "Agent run: Hi, I was charged twice…"; a chart keeps its name."""
    view = viewer(stored_support, "story-title")
    heading = view.page.locator("#title").text_content() or ""
    assert heading.startswith("Agent run: Hi, I was charged twice for order A-1001")
    assert view.page.title().startswith(heading + " · ")
    assert "Seed" not in view.page.title()
    chart = viewer(loan, "story-title-loan")
    assert chart.page.locator("#title").text_content() == loan.chart_spec["name"]
    assert chart.page.title().startswith(f"{loan.chart_spec['name']} · ")
    view.check_clean()
    chart.check_clean()


def ops_text(commit: Commit) -> str:
    """The timeline's ops cell for ``commit``: ``verb path`` per op, joined by `` · ``."""
    return " · ".join(("del" if op.verb == "delete" else op.verb) + " " + "/".join(op.path) for op in commit.trace)


def test_timeline_cells_show_their_whole_text(viewer: Open, stored_support: Trace) -> None:
    """Every timeline row of the demo shows its full ops and narrative text, none clipped at a column width."""
    view = viewer(stored_support, "story-columns")
    cells = view.page.eval_on_selector_all(
        "#timeline .row",
        """rs => rs.map(r => [Number(r.dataset.idx), ...['.ops', '.narr', '.stage', '.rid'].map(c => {
             const s = r.querySelector(c); return [s.textContent, s.scrollWidth, s.getBoundingClientRect().width];
           })])""",
    )
    assert len(cells) == len(stored_support.commit_log)
    for idx, ops, narr, stage, rid in sorted(cells):
        assert ops[0] == (ops_text(stored_support.commit_log[idx]) or "—")
        assert narr[0] in (stored_support.narrative_lines or [])  # a whole narrative line
        for text, needed, shown in (ops, narr, stage, rid):
            assert needed <= shown + 1, f"#{idx} cuts {text!r}: needs {needed}px, shows {shown:.0f}px"
    view.check_clean()


def test_the_model_calls_panel_counts_every_call_the_chart_counts(viewer: Open, stored_support: Trace) -> None:
    """The demo: "Model calls (3)" as CallLLM's ×3 badge says; the last call shows the final answer."""
    view = viewer(stored_support, "story-calls")
    ran = sum(c.stage_id == "call-llm" for c in stored_support.commit_log)
    badge = view.page.locator('#chart-pane g.node[data-stage-id="call-llm"] .visits').text_content()
    assert badge == f"×{ran}"
    heading = view.page.locator("#story h3", has_text="Model calls").text_content()
    assert heading == f"Model calls ({ran})"
    assert view.page.locator("#story details.call").count() == ran
    last = view.page.locator("#story details.call").last
    answer = last.locator(".msg.answer").text_content() or ""
    assert answer.startswith("answer #9 ")
    assert last.locator(".msg.answer q.answer-text").text_content() == stored_support.final_state["final_content"]
    assert (last.locator("summary").first.text_content() or "").endswith("written at #9")
    view.check_clean()


def hostile_history_trace() -> Trace:
    """A run whose history's user message and tool output are script and HTML text."""

    def write(scope: Any) -> None:
        scope.history = [
            {"role": "user", "content": HOSTILE},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "t", "args": {}}]},
            {"role": "tool", "content": HOSTILE, "tool_call_id": "c1", "tool_name": "t"},
        ]

    return flow_chart("Write", write, "write").build().run({}).trace()


def test_tool_output_shows_its_characters_once_escaped_never_as_markup(viewer: Open, stored_support: Trace) -> None:
    """The order lookup's JSON reads {"order_id":"A-1001",…} (no \\" escapes); markup in a tool result stays text."""
    view = viewer(stored_support, "story-tool-text")
    history = stored_support.final_state["history"]
    looked_up = next(m["content"] for m in history if m.get("tool_name") == "lookup_order")
    assert looked_up.startswith('{"order_id":"A-1001"')
    shown = view.page.locator("#story .msg.role-tool", has_text="lookup_order").first.locator(".text")
    assert shown.text_content() == looked_up
    texts = view.page.eval_on_selector_all("#story .msgs", "ms => ms.map(m => m.innerText)")
    assert texts and not any('\\"' in t for t in texts)
    hostile = viewer(off_loop(hostile_history_trace), "story-tool-hostile")
    page = hostile.page
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0 and page.locator("b:text('bold')").count() == 0
    cells = page.eval_on_selector_all(
        "#story .msg.role-user .text, #story .msg.role-tool .text", "ts => ts.map(t => t.textContent)"
    )
    assert cells == [HOSTILE, HOSTILE]
    view.check_clean()
    hostile.check_clean()


def test_a_model_reply_of_any_shape_is_listed_once_as_committed() -> None:
    """A reply already in history is not listed twice; an odd-shaped or hidden reply is listed as committed."""
    from agent.viewer_panel import model_calls, with_unlisted_replies
    from flowchart import Op

    asked = [{"id": "c1", "name": "t", "args": {}}]
    history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "", "tool_calls": asked}]
    log = [
        Commit(0, "CallLLM", "call-llm", "call-llm#0", (Op(("llm_latest_tool_calls",), "set", asked),)),
        Commit(1, "ToolCalls", "tool-calls", "tool-calls#1", (Op(("history",), "append", history[1:]),)),
        Commit(2, "CallLLM", "call-llm", "call-llm#2", (Op(("llm_latest_content",), "set", "REDACTED"),)),
        Commit(3, "CallLLM", "call-llm", "call-llm#3", (Op(("llm_latest_tool_calls",), "set", [{"id": {"x": 1}}, 7]),)),
    ]
    calls = with_unlisted_replies(model_calls(history, [None, 1]), history, log)
    assert [(c["message"], c["commit"], c.get("answer")) for c in calls] == [
        (1, 1, None),
        (None, 2, "REDACTED"),
        (None, 3, None),
    ]
    assert calls[2]["tool_calls"] == [{"id": {"x": 1}}, 7]
