"""The story shows what the answering call was told (injections, recalled memory) and the
handoffs — collapsed by default, each linked to its commit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent import Agent
from agent.memory import InMemoryMemory
from agent.providers import scripted
from flowchart import Trace

Open = Callable[..., Any]


def test_injections_recalls_and_handoffs_are_in_the_story_collapsed(viewer: Open) -> None:
    """A triage run told a fact and a recalled memory item hands off to billing: the story has a
    collapsed "Told in the system slot" list (with the item's origin) and a "Handoffs" list."""
    memory = InMemoryMemory()
    memory.put(("default",), "The customer pays by invoice", origin={"run_id": "r-0", "conversation": "c", "turn": 1})
    billing = Agent.create(provider=scripted(["Invoice #7: 40 EUR."]), model="m").build()
    transfer = {"id": "h1", "name": "transfer_to_billing", "args": {"reason": "invoice"}}
    triage = (
        Agent.create(provider=scripted([{"content": "", "tool_calls": [transfer]}]), model="m", memory=memory)
        .fact("Acme sells paper.")
        .handoff(billing, name="billing")
        .build()
    )
    triage.run("How do I pay my invoice?")
    trace: Trace = triage.last_snapshot().result.trace()
    view = viewer(trace, "story-context")
    page = view.page
    context = page.locator("#story details.context")
    assert context.get_attribute("open") is None  # collapsed by default
    summary = context.locator("summary").text_content() or ""
    assert summary.startswith("Told in the system slot (2)")
    items = page.eval_on_selector_all("#story li.context-item", "ls => ls.map(l => l.textContent)")
    assert "fact (always)" in items[0] and "Acme sells paper." in items[0]
    assert "memory item m-" in items[1] and "conversation 'c' turn 1" in items[1]
    handoffs = page.locator("#story details.handoffs")
    assert handoffs.get_attribute("open") is None
    text = handoffs.text_content() or ""
    assert "to billing" in text and "reason: invoice" in text and "Invoice #7: 40 EUR." in text
    assert handoffs.locator("button.link").count() == 1  # linked to the handoff's commit
    view.check_clean()


def test_a_chart_that_mounted_an_agent_opens_on_the_agents_story(viewer: Open) -> None:
    """``add_agent``: the chart run's page tells the mounted agent's story (question, answer,
    why, what it was told), its links opening the mount's commit."""
    from flowchart import flow_chart

    planner = Agent.create(provider=scripted(["1. book the venue"]), model="m").fact("Budget: 500 EUR.").build()
    chart = (
        flow_chart("Goal", lambda s, c: None, "goal")
        .add_agent("Planner", planner, "planner", message=lambda s: "Plan the offsite", into="plan")
        .build()
    )
    trace = chart.run().trace()
    view = viewer(trace, "story-mounted")
    page = view.page
    assert "The agent mounted at planner#1" in (page.locator("#story p.mounted").text_content() or "")
    assert page.locator("#story p.question").text_content() == "Plan the offsite"
    assert "1. book the venue" in (page.locator("#story p.answer").text_content() or "")
    told = page.eval_on_selector_all("#story li.context-item", "ls => ls.map(l => l.textContent)")
    assert len(told) == 1 and "Budget: 500 EUR." in told[0]
    view.check_clean()
