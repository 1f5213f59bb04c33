"""OpenTelemetry spans for runs: ``otel_recorder(tracer_provider=None)`` (extra ``[otel]``).

The public face of ``flowchart._otel``, where the recorder and its laws live: a span per run,
per executed stage, per model call and tool call (GenAI conventions), the run's redaction
applied, pauses and human decisions as span events.
"""

from flowchart._otel import OtelRecorder, otel_recorder

__all__ = ["OtelRecorder", "otel_recorder"]
