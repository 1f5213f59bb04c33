"""otel_recorder over the wire: spans exported with OTLP/HTTP to a receiver on 127.0.0.1.

The receiver is a plain ``http.server`` that decodes each request body with
``opentelemetry-proto``'s ``ExportTraceServiceRequest``: what arrives is what a collector sees.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="opentelemetry-exporter-otlp-proto-http missing")

from agent_helpers import build, call, calls, refund_tool
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from otel_helpers import tree

from agent import Paused
from flowchart import flow_chart
from flowchart.otel import otel_recorder


class Receiver(http.server.ThreadingHTTPServer):
    """Collects every decoded span of every POST to /v1/traces."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.spans: list[Any] = []
        self.paths: list[str] = []
        self.content_types: list[str] = []


class _Handler(http.server.BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.paths.append(self.path)
        self.server.content_types.append(self.headers["Content-Type"])
        for resource_spans in request.resource_spans:
            for scope_spans in resource_spans.scope_spans:
                self.server.spans.extend(scope_spans.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def otlp_provider(receiver: Receiver) -> TracerProvider:
    port = receiver.server_address[1]
    provider = TracerProvider(resource=Resource.create({"service.name": "pyfootprint-test"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://127.0.0.1:{port}/v1/traces")))
    return provider


def wire_tree(spans: list[Any]) -> list[Any]:
    """The span tree of decoded protobuf spans (ids are bytes on the wire)."""
    rows = [
        (
            s.name,
            int.from_bytes(s.span_id, "big"),
            int.from_bytes(s.parent_span_id, "big") or None,
            s.start_time_unix_nano,
        )
        for s in spans
    ]
    return tree(rows)


def attributes(span: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in span.attributes:
        kind = kv.value.WhichOneof("value")
        value = getattr(kv.value, kind)
        out[kv.key] = [getattr(v, v.WhichOneof("value")) for v in value.values] if kind == "array_value" else value
    return out


def test_a_fork_and_subflow_chart_arrives_over_otlp_http_with_the_same_tree(receiver: Receiver) -> None:
    """The protobuf a collector receives holds the run's exact span tree and stage attributes."""
    sub = flow_chart("SubSeed", lambda s: s.__setitem__("x", 1), "s1").build()
    chart = (
        flow_chart("Seed", lambda s: s.__setitem__("x", 1), "seed")
        .add_list_of_function([("f1", "Left", lambda s: None), ("f2", "Right", lambda s: None)])
        .add_subflow_chart_next("m", sub, mount_name="Mount")
        .build()
    )
    provider = otlp_provider(receiver)
    chart.run(recorders=[otel_recorder(provider)])
    provider.shutdown()  # flushes the batch over HTTP
    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    assert set(receiver.content_types) == {"application/x-protobuf"}
    assert wire_tree(receiver.spans) == [
        ["flowchart.run", ["Seed", ["fork Seed", ["Left", "Right"]], ["Mount", ["SubSeed"]]]]
    ]
    [seed] = [s for s in receiver.spans if s.name == "Seed"]
    assert attributes(seed) == {
        "flowchart.stage.id": "seed",
        "flowchart.stage.runtime_id": "seed#0",
        "flowchart.commit.idx": 0,
        "flowchart.stage.reads": [],
        "flowchart.stage.writes": ["x"],
        "flowchart.stage.type": "linear",
    }


def test_an_agents_paused_check_in_arrives_over_otlp_http(receiver: Receiver) -> None:
    """The agent's GenAI spans and the pause event reach the receiver as the in-memory test sees them."""
    provider = otlp_provider(receiver)
    refund = calls(call("c1", "refund", order_id="A1", amount=250), content="Refunding now.")
    agent, _ = build([refund, "Done."], refund_tool(check_in="always"), recorders=[otel_recorder(provider)])
    assert isinstance(agent.run("refund A1"), Paused)
    provider.shutdown()
    assert wire_tree(receiver.spans) == [
        ["invoke_agent", ["Seed", ["CallLLM", ["chat mock"]], "Route", ["ToolCalls", ["execute_tool refund"]]]]
    ]
    [tool] = [s for s in receiver.spans if s.name == "execute_tool refund"]
    assert attributes(tool) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "refund",
        "gen_ai.tool.call.id": "c1",
    }
    assert [e.name for e in tool.events] == ["checkin.request"]
    [run] = [s for s in receiver.spans if s.name == "invoke_agent"]
    assert [e.name for e in run.events] == ["flowchart.pause"]
