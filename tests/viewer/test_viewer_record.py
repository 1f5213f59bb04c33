"""The viewer shows what the record says went wrong: a run's failure and the tools that raised."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from viewer_harness import View, off_loop

from agent import Agent, define_tool
from agent._edge.viewer_panel import PANEL
from agent.providers import scripted
from flowchart import Trace, narrative
from flowchart._core.failure import failed_run
from flowchart.viewer import build_payload

Open = Callable[[Trace, str], View]


def _lookup(args: dict[str, Any], ctx: Any) -> Any:
    raise LookupError(f"no order {args['order_id']}")


class _DownAfterOneReply:
    """Calls a tool that raises, then the model server goes down."""

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, req: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            return scripted(
                [{"content": "", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"order_id": "X"}}]}]
            ).complete(req)
        raise ConnectionError("model server unreachable")


def _failed_trace() -> Trace:
    tool = define_tool(
        name="lookup",
        description="Look an order up.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
        execute=_lookup,
    )
    agent = Agent.create(provider=_DownAfterOneReply(), model="m").tool(tool).build()
    with pytest.raises(ConnectionError) as caught:
        agent.run("where is X?")
    found = failed_run(caught.value)
    assert found is not None
    return found[0].trace()


def test_a_failed_runs_payload_has_its_failure_and_tool_errors() -> None:
    """The payload carries the failure (class, message, stage) and the tool_errors rows."""
    trace = _failed_trace()
    payload = build_payload(trace, [PANEL])
    assert payload["meta"]["failed"] is True
    assert payload["failure"] == {
        "error_type": "ConnectionError",
        "message": "model server unreachable",
        "stage_id": "call-llm",
        "runtime_stage_id": "call-llm#4",
    }
    (row,) = payload["panels"]["agent"]["tool_errors"]
    assert (row["tool_name"], row["error_type"], row["message"]) == ("lookup", "LookupError", "no order X")


def test_the_page_shows_the_failure_and_the_tool_errors(viewer: Open) -> None:
    """In the browser: the status badge says failed, a panel names the error and the stage,
    and the agent panel lists the tool error with its traceback."""
    view = viewer(off_loop(_failed_trace), "failed")
    assert view.page.locator("#status").text_content() == "failed"
    panel = view.page.locator("#pause-panel").text_content() or ""
    assert "Failed at call-llm#4" in panel and "ConnectionError: model server unreachable" in panel
    errors = view.page.locator("li.tool-error").all_text_contents()
    assert len(errors) == 1 and "lookup · LookupError" in errors[0] and "no order X" in errors[0]
    assert "in _lookup" in (view.page.locator("li.tool-error pre.traceback").text_content() or "")
    view.check_clean()


def test_a_trace_of_a_failed_chart_run_round_trips_with_its_failure() -> None:
    """``failed_run(error)[0].trace()`` saves and loads with its ``failure`` intact."""
    from flowchart import flow_chart

    def boom(scope: Any) -> None:
        scope.half = 1
        raise RuntimeError("half done")

    with pytest.raises(RuntimeError) as caught:
        flow_chart("Boom", boom, "boom").build().run(recorders=[narrative()])
    found = failed_run(caught.value)
    assert found is not None
    trace = found[0].trace()
    again = Trace.from_json(trace.to_json())
    assert again.failure == trace.failure and again.failure is not None
    assert again.failure.runtime_stage_id == "boom#0"
    assert again.final_state == {"half": 1}
