"""The demo's page tells the run's story: a title that names the run, timeline text not cut,
every model call counted, tool output shown as the text it is."""

from __future__ import annotations

import re
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
    from agent._edge.viewer_panel import model_calls, with_unlisted_replies
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


STORY_ORDER = ["The question", "The answer", "Why this answer", "Model calls", "Tools", "Human decisions", "Ledger"]


def test_the_first_screen_tells_the_story_in_order(viewer: Open, stored_support: Trace) -> None:
    """The demo's page opens on the story — the question, the answer, why, the model calls,
    the tools, the human decisions, the ledger, in that order — and the chart and timeline follow below it."""
    view = viewer(stored_support, "story-order")
    headings = view.page.eval_on_selector_all("#story h3", "hs => hs.map(h => h.textContent)")
    firsts = [next((h for h in headings if h.startswith(name)), None) for name in STORY_ORDER]
    assert None not in firsts, headings
    assert [headings.index(h) for h in firsts] == sorted(headings.index(h) for h in firsts)
    question = view.page.locator("#story p.question").text_content()
    assert question == stored_support.final_state["history"][0]["content"]
    assert view.page.locator("#story p.answer q").text_content() == stored_support.final_state["final_content"]
    story = view.page.locator("#story").bounding_box()
    chart = view.page.locator("#chart-pane").bounding_box()
    timeline = view.page.locator("#timeline-pane").bounding_box()
    assert story is not None and chart is not None and timeline is not None
    assert story["y"] < 80 and story["y"] + story["height"] <= chart["y"] and chart["y"] < timeline["y"]
    calls = view.page.eval_on_selector_all("#story details.call > summary", "ss => ss.map(s => s.textContent)")
    assert [c.split(" · ")[0] for c in calls] == ["call 1", "call 2", "call 3"]
    view.check_clean()


def test_the_approver_is_visible_on_the_first_screen(viewer: Open, stored_support: Trace) -> None:
    """ "approved by alice at …" is on the story's first screen, with what she approved."""
    view = viewer(stored_support, "story-approver")
    decision = view.page.locator("#story .human-decisions p.human-decision.approved").first
    text = decision.text_content() or ""
    assert text.startswith(
        'issue_refund({"order_id":"A-1001","amount":129.0})'
    )  # as the record spells it (test_viewer_numbers.py)
    assert "approved by alice at 2026-12-01T00:00:00Z" in text
    box = decision.bounding_box()
    assert box is not None and box["y"] + box["height"] <= 950  # inside the first screen (the viewport is 950 high)
    view.check_clean()


def test_the_story_explains_the_answer_as_agent_why_does(viewer: Open, stored_support: Trace) -> None:
    """The "Why this answer" panel lists what the answering call was sent, origin by origin,
    exactly as ``explain_answer`` (``agent why``) reads it from the trace."""
    from agent import explain_answer

    explained = explain_answer(stored_support)
    view = viewer(stored_support, "story-why")
    rows = view.page.eval_on_selector_all(
        "#story ol.explanation > li",
        "ls => ls.map(l => [l.querySelector('b').textContent, l.querySelector('.snippet').textContent])",
    )
    assert rows == [[m.origin, m.snippet] for m in explained.sent]
    why = view.page.locator("#story ol.explanation").text_content() or ""
    assert "the user's message" in why and "approved by alice at 2026-12-01T00:00:00Z" in why
    assert "total_input_tokens" not in (view.page.locator("#story").text_content() or "")
    view.check_clean()


def test_a_stored_run_marks_the_stages_inside_its_subflows_as_ran(viewer: Open, stored_support: Trace) -> None:
    """The stored demo's trace carries the Final subflow's log, so PrepareFinal and BreakFinal are marked as ran."""
    assert [c.stage_id for sub in stored_support.subflows.values() for c in sub.commit_log] == [
        "final/prepare-final",
        "final/break-final",
    ]
    view = viewer(stored_support, "story-subflow")
    for stage in ("final/prepare-final", "final/break-final", "final"):
        classes = view.page.locator(f'#chart-pane g.node[data-stage-id="{stage}"]').get_attribute("class") or ""
        assert "ran" in classes.split(), stage
    view.check_clean()


def test_a_chart_run_has_no_story(viewer: Open, loan: Trace) -> None:
    """The agent's panel builds nothing for a run that is not an agent's: the page opens on the chart."""
    view = viewer(loan, "story-none")
    assert view.page.locator("#story").is_hidden()
    assert view.page.evaluate("document.body.classList.contains('has-story')") is False
    view.check_clean()


def test_the_resumed_half_goes_on_numbering_in_the_timeline(viewer: Open, stored_support: Trace) -> None:
    """The stored demo (paused, approved, resumed in another agent): the timeline's top-level
    "Stage N" lines keep counting across the pause — the resumed half does not restart at 1."""
    view = viewer(stored_support, "story-numbering")
    cells = view.page.eval_on_selector_all("#timeline .row .narr", "cs => cs.map(c => c.textContent)")
    numbers = [int(text.split(":")[0].split()[1]) for text in cells if re.match(r"^Stage \d+: ", text)]
    # a decider's row shows its [Condition] line instead: the numbers shown only ever go up
    assert numbers == sorted(set(numbers)) and numbers[0] == 1 and numbers[-1] >= 8, numbers
    view.check_clean()


def test_the_cost_section_says_what_agent_why_cost_says(viewer: Open, stored_support: Trace) -> None:
    """Every agent run records its calls' cost (issue 33): the story's Cost section lists the
    lines ``agent why --cost`` prints for the same trace (the demo's model is unpriced: cost
    unknown, the tokens as reported), and links each call to the commit that recorded it."""
    from agent._edge.cost_report import cost_lines

    expected = cost_lines(stored_support.commit_log, stored_support.initial_state)
    assert expected[0].startswith("cost: unknown over 3 model call(s)")
    view = viewer(stored_support, "story-cost")
    lines = view.page.eval_on_selector_all("#story ul.cost-lines > li", "ls => ls.map(l => l.textContent)")
    assert lines == expected
    links = view.page.eval_on_selector_all(
        "#story ul.cost-lines + p button.link", "bs => bs.map(b => b.textContent.trim())"
    )
    assert links == [f"#{c.idx}" for c in stored_support.commit_log if c.stage_id == "call-llm"]
    view.check_clean()
