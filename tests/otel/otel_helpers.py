"""Span trees for the OpenTelemetry tests: a real SDK tracer provider with the in-memory exporter."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the [otel] extra is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


def memory_provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    """A tracer provider exporting every ended span to memory at once."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


def tree(spans: Iterable[Any], *, parent: int | None = None, attribute: str | None = None) -> list[Any]:
    """Nested ``[name, [children...]]`` lists by parent span id, children in start order.

    ``spans`` are (name, span_id, parent_id, start) tuples or SDK spans; with ``attribute``
    each name reads ``name [value]`` when the span has it.
    """
    rows = [_row(s, attribute) for s in spans]
    return _nest(rows, parent)


def _row(span: Any, attribute: str | None) -> tuple[str, int, int | None, int]:
    if isinstance(span, tuple):
        return span
    name = span.name
    if attribute and attribute in span.attributes:
        name = f"{name} [{span.attributes[attribute]}]"
    parent = span.parent.span_id if span.parent is not None else None
    return name, span.context.span_id, parent, span.start_time


def _nest(rows: list[tuple[str, int, int | None, int]], parent: int | None) -> list[Any]:
    ids = {r[1] for r in rows}
    level = [r for r in rows if (r[2] == parent) or (parent is None and r[2] not in ids)]
    level.sort(key=lambda r: (r[3], r[1]))
    out: list[Any] = []
    for name, span_id, _, _ in level:
        children = _nest([r for r in rows if r[1] != span_id], span_id) if any(r[2] == span_id for r in rows) else []
        out.append([name, children] if children else name)
    return out
