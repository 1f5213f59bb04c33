"""W6 with OpenTelemetry on: the agent's spans exported over OTLP/HTTP to a receiver on 127.0.0.1.

The receiver is a minimal ``http.server`` that reads and acknowledges each export (it
counts requests and bytes, it does not decode): the cost measured is the recorder, the
SDK's span processing and the exporter's encoding and HTTP posts — what a service pays
with a collector next to it. ``BatchSpanProcessor`` exports from its own thread, as in
production; ``SimpleSpanProcessor`` (in memory) isolates the recorder + SDK cost.
"""

from __future__ import annotations

import http.server
import threading
from typing import Any


class _Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        size = int(self.headers.get("Content-Length", 0))
        self.rfile.read(size)
        self.server.requests += 1  # type: ignore[attr-defined]
        self.server.bytes += size  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        return


def start_receiver() -> Any:
    """An OTLP/HTTP receiver on 127.0.0.1 (``server.requests``, ``server.bytes``); call ``shutdown()``."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    server.requests = 0  # type: ignore[attr-defined]
    server.bytes = 0  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def otlp_provider(server: Any) -> Any:
    """A tracer provider batching spans to ``server`` over OTLP/HTTP (protobuf)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def memory_provider() -> Any:
    """A tracer provider keeping spans in memory (cleared by the caller)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter
