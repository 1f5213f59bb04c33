"""What the inbox shows of a run, as JSON: a list row and a run's page.

Law: every value comes from the run's shown record — the input through the run's stored rule
(``shown_input``), the commit log as recorded (redacted), the answer through the stored rule
(``shown_output``) — the same content ``agent runs show``, ``agent why`` and the viewer show.
Nothing here writes.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from agent._edge.cli_common import shown_input
from flowchart import Redaction
from flowchart.store import RunRecord, RunSummary
from governance.human import call_text

from .decide import Inbox, evidence_of, expired, pause_kind, pending_id, tool_and_args
from .policies import starter_of


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def _rule(record: RunRecord | RunSummary) -> Redaction:
    return record.rule if isinstance(record, RunSummary) else record.record.rule


def _message(record: RunRecord | RunSummary) -> str | None:
    # the input as its reader may see it: the summary's, or the stored run's shown record's
    shown = record.shown_input if isinstance(record, RunSummary) else shown_input(record)
    message = shown.get("input_message") if isinstance(shown, Mapping) else None
    return message if isinstance(message, str) else None


def wants(record: RunRecord | RunSummary) -> str:
    """What the run wants, in one line: ``issue_refund(order_id=A-1001, amount=129.0)``."""
    kind = pause_kind(record)
    tool, args = tool_and_args(record)
    if kind is None:
        return record.status
    if kind == "ask_human":
        question = args.get("question") if isinstance(args, Mapping) else None
        return f"asks: {question}" if isinstance(question, str) else f"asks via {tool}"
    return call_text(tool, args)


_ROWS_KEPT = 5000


def row(inbox: Inbox, record: RunRecord | RunSummary) -> dict[str, Any]:
    """A run as a row of the list (kept per run version: a run's row changes only when it is
    updated). A summary (``store.summaries``) is enough for every row but an ``ask_human`` pause,
    whose request id lives in the checkpoint: that run is read whole, once per version."""
    key = (record.run_id, record.updated_at, record.status)
    rows = inbox.rows
    kept = rows.get(key)
    if kept is None:
        if len(rows) >= _ROWS_KEPT:
            rows.clear()
        if isinstance(record, RunSummary) and pause_kind(record) == "ask_human":
            record = inbox.store.get(record.run_id)
        kept = rows[key] = _row(record)
    return {**kept, "expired": expired(inbox, record)}


def _row(record: RunRecord | RunSummary) -> dict[str, Any]:
    tool, _ = tool_and_args(record)
    identity = record.input.get("input_identity") if isinstance(record.input, Mapping) else None
    out: dict[str, Any] = {
        "run_id": record.run_id,
        "status": record.status,
        "kind": pause_kind(record),
        "request_id": pending_id(record) if isinstance(record, RunRecord) else getattr(record.question, "id", None),
        "tool": tool,
        "wants": wants(record),
        "for": starter_of(identity),
        "message": _message(record),
        # the message the run's rule hides: the page says so in words, not with the log's placeholder
        "message_hidden": _rule(record).hides("input_message"),
        "since": _iso(record.updated_at),
        "updated_at": record.updated_at,
    }
    if record.conversation_id is not None:
        out.update(conversation=record.conversation_id, turn=record.turn)
    return out


def _ledger(record: RunRecord) -> list[Any]:
    from flowchart import replay

    if not any("middleware_decisions" in c.written_keys for c in record.commit_log):
        return []
    rows = replay(list(record.commit_log)).get("middleware_decisions")
    return list(rows) if isinstance(rows, list) else []


def _story(record: RunRecord) -> list[str]:
    """``agent why``'s lines for a finished agent run, else the narrative so far."""
    if record.status == "done" and any(c.stage_id == "call-llm" for c in record.commit_log):
        from agent._edge.explain import explain_answer
        from flowchart.store.export import record_trace

        try:
            return explain_answer(record_trace(record)).format().splitlines()
        except Exception:  # an explanation that cannot be built never hides the narrative
            pass
    return [line for line in record.narrative if not line.startswith("Step")]


def _earlier_turns(inbox: Inbox, record: RunRecord, limit: int = 20) -> list[dict[str, Any]]:
    from agent.cli import shown_output

    if record.conversation_id is None or record.turn is None:
        return []
    listed = inbox.store.list(conversation=record.conversation_id, limit=limit + 1)
    turns = [r for r in listed if (r.turn or 0) < record.turn]
    return [
        {"run_id": r.run_id, "turn": r.turn, "status": r.status, "message": _message(r), "answer": shown_output(r)}
        for r in sorted(turns, key=lambda r: r.turn or 0)[-limit:]
    ]


def detail(inbox: Inbox, record: RunRecord) -> dict[str, Any]:
    """A run's page as JSON: the request and its evidence, the story, the ledger, the decisions,
    the receipts, the audit rows, the earlier turns of its conversation."""
    from agent.cli import decisions_of, shown_output
    from governance.human import decision_sentence

    out = row(inbox, record)
    decisions = decisions_of(record)
    out.update(
        evidence=evidence_of(record) if record.status == "paused" else None,
        question=_question(record),
        story=_story(record),
        narrative=list(record.narrative),
        ledger=_ledger(record),
        human_decisions=decisions,
        decided=[decision_sentence(r) for r in decisions if decision_sentence(r)],
        output=shown_output(record) if record.status == "done" else None,
        error=record.error,
        answered=sorted(record.answered),
        pending_approvals=inbox.ledger.first_approvals(record.run_id, out["request_id"]) if out["request_id"] else [],
        receipts=inbox.ledger.receipts_of(record.run_id),
        audit=inbox.ledger.audit_rows(record.run_id),
        earlier_turns=_earlier_turns(inbox, record),
        created=_iso(record.created_at),
        viewer=f"/runs/{record.run_id}/view",
    )
    return out


def _question(record: RunRecord) -> Any:
    from agent.cli import question_json

    return question_json(record.question) if record.status == "paused" else None
