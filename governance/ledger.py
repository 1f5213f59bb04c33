"""Ledger rows: one JSON-safe dict per middleware decision.

Laws this file enforces:

- **A row has exactly the contract's keys, in one order**: ``middleware``, ``moment``
  (``input | before-tool | after-tool | output``), ``at`` (``tool | message``), ``phase``
  (message rows only), ``tool_name`` and ``tool_call_id`` (tool rows only), ``iteration``
  (0 at input), ``outcome`` (``allow | deny | ask``), ``changed``, then ``why``, ``before``,
  ``after`` only when present. An absent field is omitted, never ``None``.
- **``before``/``after`` exist only when ``changed``**, and then both do; they are JSON-safe
  copies of the value before and after the decision.
- **An event never carries values**: ``event_payload(row)`` is the row without
  ``before``/``after`` (values stay in the commit log, where redaction applies).

Rows are committed by the caller under ``LEDGER_KEY`` in the run's shared state, appended in
order; with no middleware configured the key is never written.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from governance._json import json_safe

LEDGER_KEY: Final = "middleware_decisions"
"""The shared-state key the rows are appended under."""

Moment = Literal["input", "before-tool", "after-tool", "output"]
"""Where in the loop a decision was taken."""

Verdict = Literal["allow", "deny", "ask"]
"""A decision's outcome as written in a row."""


class _Absent:
    """The type of ``ABSENT``: "this field is not there" (``None`` is a real value)."""

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT: Final = _Absent()
"""Marks ``before``/``after`` as not given (``None`` can be a real tool result)."""

_TOOL_MOMENTS = ("before-tool", "after-tool")
_OUTCOMES = ("allow", "deny", "ask")


def tool_row(
    *,
    middleware: str,
    moment: Literal["before-tool", "after-tool"],
    tool_name: str,
    tool_call_id: str,
    iteration: int,
    outcome: Verdict,
    changed: bool = False,
    why: str | None = None,
    before: Any = ABSENT,
    after: Any = ABSENT,
) -> dict[str, Any]:
    """A row for a tool-moment decision (``at: "tool"``)."""
    if moment not in _TOOL_MOMENTS:
        raise ValueError(f"tool_row: moment must be one of {_TOOL_MOMENTS}, got {moment!r}")
    head: dict[str, Any] = {
        "middleware": middleware,
        "moment": moment,
        "at": "tool",
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
    }
    return _finish(head, iteration, outcome, changed, why, before, after)


def message_row(
    *,
    middleware: str,
    phase: Literal["input", "output"],
    iteration: int,
    outcome: Verdict,
    changed: bool = False,
    why: str | None = None,
    before: Any = ABSENT,
    after: Any = ABSENT,
) -> dict[str, Any]:
    """A row for a message-boundary decision (``at: "message"``; ``moment`` equals ``phase``)."""
    if phase not in ("input", "output"):
        raise ValueError(f"message_row: phase must be 'input' or 'output', got {phase!r}")
    head: dict[str, Any] = {
        "middleware": middleware,
        "moment": phase,
        "at": "message",
        "phase": phase,
    }
    return _finish(head, iteration, outcome, changed, why, before, after)


def _finish(
    row: dict[str, Any],
    iteration: int,
    outcome: str,
    changed: bool,
    why: str | None,
    before: Any,
    after: Any,
) -> dict[str, Any]:
    if outcome not in _OUTCOMES:
        raise ValueError(f"ledger row: outcome must be one of {_OUTCOMES}, got {outcome!r}")
    has_values = (before is not ABSENT, after is not ABSENT)
    # before/after travel together and only with a change: a row that shows a value
    # nobody changed would invent a transform.
    if has_values != (changed, changed):
        raise ValueError("ledger row: before and after are given together, and only when changed")
    row["iteration"] = iteration
    row["outcome"] = outcome
    row["changed"] = changed
    if why:
        row["why"] = why
    if changed:
        row["before"] = json_safe(before)
        row["after"] = json_safe(after)
    return row


def event_payload(row: dict[str, Any]) -> dict[str, Any]:
    """The payload of the event emitted for ``row``: the row without ``before``/``after``."""
    return {k: v for k, v in row.items() if k not in ("before", "after")}


def answer_why(approved: bool, by: str, note: str | None = None) -> str:
    """``approved by <by>[: <note>]`` or ``declined by <by>[: <note>]``."""
    verb = "approved" if approved else "declined"
    return f"{verb} by {by}: {note}" if note else f"{verb} by {by}"


def ask_answer_row(
    *,
    approved: bool,
    by: str,
    note: str | None,
    middleware: str,
    tool_name: str,
    tool_call_id: str,
    iteration: int,
) -> dict[str, Any]:
    """The row a person's answer to a middleware ``ask`` files, under the asking middleware:
    ``outcome`` allow (approved) or deny (declined), ``why`` from ``answer_why``."""
    return tool_row(
        middleware=middleware,
        moment="before-tool",
        tool_name=tool_name,
        tool_call_id=tool_call_id,
        iteration=iteration,
        outcome="allow" if approved else "deny",
        why=answer_why(approved, by, note),
    )


def ask_resumed_second_ask_reason(middleware: str, question: str) -> str:
    """The denial for a link that asks while an approved ask resumes (there is no second pause)."""
    return (
        f"middleware '{middleware}' asked a person to decide, and there is no pause here to carry that ask: {question}"
    )
