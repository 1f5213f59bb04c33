"""What the agent's event payloads carry of its state: what the run's redaction lets events show.

Law: an event payload field that repeats a value of the agent's state — the user's message,
the model's content and tool calls, a tool's result, the final answer and totals, a ledger or
tool-error row — carries it as the run's redaction shows that state key in events
(``StageContext.shown``: ``"[REDACTED]"`` for a hidden key, the hidden fields scrubbed); a
value that is one entry of a list in the state (a tool call, a history message, a row) is
shown as an entry of that list. So a stream, an OpenTelemetry span or any recorder of emits
hides what the commit log hides. Payload fields that are the agent's own (iteration numbers,
ids, names, counts, labels) are shown as they are.
"""

from __future__ import annotations

from typing import Any

from flowchart import StageContext


def shown_entry(ctx: StageContext, key: str, entry: Any) -> Any:
    """``entry``, one entry of the list at state key ``key``, as events may show that list's
    entries (the placeholder itself when the whole key is hidden)."""
    shown = ctx.shown(key, [entry])
    return shown[0] if type(shown) is list else shown


def shown_field(ctx: StageContext, key: str, entry: dict[str, Any], field: str) -> Any:
    """``entry[field]`` as events may show it, ``entry`` being one entry of the list at ``key``."""
    shown = shown_entry(ctx, key, entry)
    return shown[field] if type(shown) is dict else shown
