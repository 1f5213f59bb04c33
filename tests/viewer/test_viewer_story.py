"""The demo's page tells the run's story: a title that names the run, timeline text not cut,
every model call counted, tool output shown as the text it is."""

from __future__ import annotations

from collections.abc import Callable

from viewer_harness import View

from flowchart import Trace

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
