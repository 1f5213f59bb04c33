"""Who decided is part of the record: the ``human_decisions`` rows and their one sentence.

Laws this file enforces:

- **Every human answer is a row**: a check-in's approval or decline, a middleware ask's
  answer, an ``ask_human`` reply. A row names the request it answered (``request_id``),
  the ``gate`` (``check_in | ask | ask_human``), the call (``tool``, ``tool_call_id``,
  ``args`` as asked) and the answer: ``approved``, ``by``, ``note`` (when given) and ``at``
  for a decision; ``before``/``after`` when an approval edited the arguments; ``value``
  when an ask's decision carried one; ``middleware`` for an ask; ``answer`` for an
  ``ask_human`` reply (which names nobody: it is a value, not a decision). Absent fields
  are omitted, never ``None``. A check-in files no ledger row (as agentfootprint): this
  row is its record.
- **One sentence says it**: ``alice approved issue_refund(order_id=A-1001, amount=129.0)``
  — built from the row as recorded, so a redacted value reads as redacted.
- **A stored question is the typed request**: ``pending_request(pause_data)`` reads a
  consent pause's data back as its ``CheckInRequest`` or ``MiddlewareAsk`` (strictly;
  ``WireFormatError`` names the bad field); any other pause data is returned unchanged.
  (The agent registers it as its runs' question reader with ``flowchart.store``.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from governance._json import json_safe
from governance.checkin import CheckInRequest, MiddlewareAsk
from governance.decisions import CheckInDecision

HUMAN_DECISIONS = "human_decisions"
"""The state key the rows are committed under (absent when nobody answered)."""

_MAX_ARG = 40


def human_decision_row(
    decision: CheckInDecision,
    *,
    gate: str,
    tool: str,
    tool_call_id: str,
    args: Mapping[str, Any],
    middleware: str | None = None,
) -> dict[str, Any]:
    """The row for ``decision`` answering the ``gate`` pause over ``tool(args)``."""
    row: dict[str, Any] = {
        "request_id": decision.request_id,
        "gate": gate,
        "approved": decision.approved,
        "by": decision.by,
    }
    if decision.note is not None:
        row["note"] = decision.note
    row["at"] = decision.at
    if middleware is not None:
        row["middleware"] = middleware
    row.update(tool=tool, tool_call_id=tool_call_id, args=json_safe(dict(args)))
    if decision.args is not None and decision.approved:
        row["before"] = json_safe(dict(args))
        row["after"] = json_safe(decision.args)
    if decision.value is not None:
        row["value"] = json_safe(decision.value)
    if decision.store_head is not None:
        row["store_head"] = decision.store_head
    return row


def human_reply_row(
    reply: Any, *, request_id: str, tool: str, tool_call_id: str, args: Mapping[str, Any]
) -> dict[str, Any]:
    """The row for an ``ask_human`` reply (a value: it names no person and no time)."""
    return {
        "request_id": request_id,
        "gate": "ask_human",
        "tool": tool,
        "tool_call_id": tool_call_id,
        "args": json_safe(dict(args)),
        "answer": json_safe(reply),
    }


def _value_text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= _MAX_ARG else text[: _MAX_ARG - 1] + "…"


def call_text(tool: Any, args: Any) -> str:
    """``tool(k=v, ...)``: a call as one short, readable expression."""
    if not isinstance(args, Mapping):
        return f"{tool}({_value_text(args)})"
    return f"{tool}({', '.join(f'{k}={_value_text(v)}' for k, v in args.items())})"


def decision_sentence(row: Any) -> str | None:
    """The sentence that tells ``row`` (``None`` for something that is not a row)."""
    if not isinstance(row, Mapping) or "tool" not in row:
        return None
    call = call_text(row.get("tool"), row.get("args", {}))
    if row.get("gate") == "ask_human":
        return f"A person answered {call}: {_value_text(row.get('answer'))}"
    verb = "approved" if row.get("approved") is True else "declined"
    text = f"{row.get('by', 'someone')} {verb} {call}"
    if "after" in row:
        text += f", edited to {call_text(row.get('tool'), row['after'])}"
    if row.get("middleware"):
        text += f" (asked by {row['middleware']})"
    if row.get("note"):
        text += f": {row['note']}"
    return text


def tell_latest(rows: Any) -> str | None:
    """The sentence of the newest row of a ``human_decisions`` list (a narrative note)."""
    if not isinstance(rows, list) or not rows:
        return None
    return decision_sentence(rows[-1])


def pending_request(pause_data: Any) -> Any:
    """A consent pause's typed request (``CheckInRequest`` / ``MiddlewareAsk``), else the data."""
    if isinstance(pause_data, Mapping):
        if "check_in" in pause_data:
            return CheckInRequest.from_dict(pause_data["check_in"], "$.question.check_in")
        if "ask" in pause_data:
            return MiddlewareAsk.from_dict(pause_data["ask"], "$.question.ask")
    return pause_data
