"""OpenTelemetry spans of a redacted run hide what the run hides, even with ``values=True``.

The spans of the probe chart (paused, then resumed) and of the probe agent (a tool error, a
check-in answered, two turns) are exported to memory and read as JSON: every attribute, span
event and status. A stage's error message is recorded as raised (docs/durable.md, "Error
messages are recorded as raised"), so the probe's tool error stays in the ``tool_errors``
row, whose message the rule hides.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from record_probe import CHART_RULE, SECRET, leaking, probe_agent, probe_chart

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from flowchart.otel import otel_recorder
from flowchart.store import MemoryStore
from governance import check_in_approved


def _exporter() -> tuple[InMemorySpanExporter, TracerProvider]:
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return exporter, provider


def _spans(exporter: InMemorySpanExporter) -> list[tuple[str, Any]]:
    return [(f"span {s.name}", json.loads(s.to_json())) for s in exporter.get_finished_spans()]


def test_no_span_of_a_redacted_chart_run_shows_a_hidden_value() -> None:
    """A chart run that pauses and resumes, with every written value on its spans."""
    exporter, provider = _exporter()
    store, chart = MemoryStore(), probe_chart()
    chart.run(recorders=[otel_recorder(provider, values=True)], redaction=CHART_RULE, store=store, run_id="r")
    chart.resume_run("r", {"ok": True}, recorders=[otel_recorder(provider, values=True)], store=store)
    spans = _spans(exporter)
    assert len(spans) > 8 and leaking(spans) == []
    written = {k: v for _n, s in spans for k, v in s["attributes"].items() if k.startswith("flowchart.write.")}
    assert written["flowchart.write.ssn"] == '"REDACTED"'


def test_no_span_of_a_redacted_agent_run_shows_a_hidden_value() -> None:
    """An agent turn with a tool error and a check-in answered from the store, and a second turn."""
    exporter, provider = _exporter()
    store = MemoryStore()
    agent = probe_agent(store, recorders=[otel_recorder(provider, values=True)])
    paused = agent.run(f"pay with {SECRET}", conversation="c-1")
    agent.resume_run(paused.run_id, check_in_approved(request=paused.check_in, by="alice"))
    agent.follow_up(f"again {SECRET}")
    spans = _spans(exporter)
    assert {"invoke_agent", "execute_tool pay", "chat m"} <= {s["name"] for _n, s in spans}
    assert leaking(spans) == []
