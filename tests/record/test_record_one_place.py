"""Where does redaction happen? In ``flowchart/_core/redaction.py`` — one file, checked here.

The rule and every function that applies it live there: the commit log's ``scrub_ops``, the
events' ``shown`` / ``shown_state`` / ``shown_ops``, the record's ``scrub_state`` /
``scrub_checkpoint``. Only that file writes a placeholder. The readers of a run — streams,
OpenTelemetry spans, MCP results — hold no redaction code at all: they carry events the
engine hid as they were emitted, or read a shown record.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ONE_FILE = "flowchart/_core/redaction.py"
#: what applies or asks the rule (a method of ``Redaction``), and what a hidden value becomes
APPLYING = {
    "shown",
    "shown_state",
    "shown_ops",
    "shown_summary",
    "scrub_ops",
    "scrub_state",
    "scrub_fields",
    "scrub_checkpoint",
    "hides",
}
PLACEHOLDERS = {"LOG_PLACEHOLDER", "EVENT_PLACEHOLDER"}
READERS = [
    "flowchart/stream.py",
    "flowchart/stream_events.py",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "flowchart" / "_stream").glob("*.py")),
    "flowchart/otel.py",
    "flowchart/_otel.py",
    "agent/_run/streaming.py",
    "agent/mcp/server.py",
]


def _names(path: str) -> set[str]:
    tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            found.update(alias.name for alias in node.names)
    return found


def test_streams_spans_and_mcp_results_hold_no_redaction_code() -> None:
    """No stream module, no OpenTelemetry module and no MCP server applies or asks the rule, names a
    placeholder or a ``Redaction``: what they carry was hidden before they see it."""
    offenders = {
        path: sorted(hits)
        for path in READERS
        if (hits := _names(path) & (APPLYING | PLACEHOLDERS | {"Redaction", "scrub_state"}))
    }
    assert offenders == {}


def test_only_the_one_file_writes_a_placeholder() -> None:
    """``"REDACTED"`` / ``"[REDACTED]"`` are written by ``flowchart/_core/redaction.py`` alone:
    no other module of flowchart, agent or governance names a placeholder constant."""
    offenders = [
        str(p.relative_to(REPO))
        for package in ("flowchart", "agent", "governance")
        for p in sorted((REPO / package).rglob("*.py"))
        if str(p.relative_to(REPO)) != ONE_FILE and _names(str(p.relative_to(REPO))) & PLACEHOLDERS
    ]
    assert offenders == []
