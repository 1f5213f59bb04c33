"""Deciding a paused run from the inbox: checks, policies, the answer, the receipt, the resume.

Laws:
- The approver is the authenticated :class:`~agent.serve.auth.Approver`; the body never names
  one (a ``by`` key is refused as unknown).
- Nothing is recorded in the run store until every check passed: the body's shape, the run and
  its pause, the request id, the policies, the tool, the edited arguments (against the tool's
  schema, through the same ``answer_in`` the CLI and ``resume_run`` use). A refusal records only
  an audit row; it raises :class:`InboxRefusal` with the HTTP status and a message naming the
  problem (400 bad input, 403 not allowed, 404 no run, 409 conflict, 410 expired).
- The run store's answer-once decides between racing decisions; the loser is told who decided
  and when ("already decided by bob at …").
- A decision resumes the run in this process when the inbox has the agent, else hands it to
  the ``queue`` (a Celery app: ``enqueue``), else leaves it answered for a worker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agent.errors import AgentError
from flowchart.lowlevel import copy_json, is_json_safe
from flowchart.store import RunNotFoundError, RunRecord, RunStore, RunSummary
from governance import CheckInRequest, MiddlewareAsk, ResumeDecisionError, check_in_approved, check_in_declined
from governance.errors import DecisionInputError

from .auth import Approver
from .ledger import InboxLedger
from .policies import Policies, starter_of
from .receipts import make_receipt

MAX_BODY = 1024 * 1024
_FIELDS = ("request_id", "approved", "note", "args", "response")


class InboxRefusal(AgentError):
    """A decision the inbox refused: ``status`` (HTTP) and the message (JSON ``{"error": ...}``)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@attrs.define
class Inbox:
    """What the inbox decides with: the run store, the agent (to resume and to know its tools),
    the policies, its ledger (audit, receipts, keys) and an optional Celery ``queue``."""

    store: RunStore
    agent: Any
    policies: Policies
    ledger: InboxLedger
    queue: Any = None
    clock: Callable[[], float] = time.time
    on_change: Callable[[str], None] | None = None
    #: the list's rows, kept per run version ``(run_id, updated_at, status)`` (``views.row``)
    rows: dict[tuple[str, float, str], dict[str, Any]] = attrs.field(factory=dict)

    @property
    def receipt_key(self) -> bytes:
        """The key receipts are signed with."""
        return self.ledger.key("receipts")


def pause_kind(record: RunRecord | RunSummary) -> str | None:
    """``check_in``, ``ask`` or ``ask_human`` for a paused run, else ``None``."""
    if record.status != "paused":
        return None
    question = record.question
    if isinstance(question, CheckInRequest):
        return "check_in"
    if isinstance(question, MiddlewareAsk):
        return "ask"
    return "ask_human"


def pending_id(record: RunRecord) -> str | None:
    """The id of the request the paused run waits on (``None`` when it waits for nothing)."""
    if record.status != "paused":
        return None
    question = record.question
    if isinstance(question, CheckInRequest | MiddlewareAsk):
        return question.id
    paused = record.checkpoint.shared_state.get("paused_tool_call") if record.checkpoint is not None else None
    rid = paused.get("request_id") if isinstance(paused, Mapping) else None
    return rid if isinstance(rid, str) and rid else record.pause_answer_id()


def tool_and_args(record: RunRecord | RunSummary) -> tuple[str | None, Any]:
    """The tool and arguments the paused run asks about."""
    question = record.question
    if isinstance(question, CheckInRequest):
        return question.tool, dict(question.args)
    if isinstance(question, MiddlewareAsk):
        return question.tool, copy_json(dict(question.args))
    if isinstance(question, Mapping):
        return question.get("tool_name"), question.get("data")
    return None, None


def evidence_of(record: RunRecord) -> Any:
    """The evidence a person is shown for the pause (JSON): a check-in's evidence pack, an ask's
    request, an ``ask_human``'s pause data."""
    question = record.question
    if isinstance(question, CheckInRequest):
        return question.to_dict()["evidence"]
    if isinstance(question, MiddlewareAsk):
        return question.to_dict()
    return copy_json(question) if is_json_safe(question) else None


def expired(inbox: Inbox, record: RunRecord | RunSummary) -> bool:
    """True when the paused run is older than the expiry policy allows."""
    limit = inbox.policies.expire_after
    return record.status == "paused" and limit is not None and inbox.clock() - record.updated_at > limit


def _iso(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def decided_by(inbox: Inbox, record: RunRecord, request_id: str) -> str:
    """``"already decided by bob at …"`` for an answered request (what the store and ledger say)."""
    from agent.cli import decisions_of

    answer = record.answer if record.has_answer else None
    if isinstance(answer, Mapping) and answer.get("request_id") == request_id and "by" in answer:
        return f"already decided by {answer['by']} at {answer.get('at', '?')}"
    for row in decisions_of(record):
        if isinstance(row, Mapping) and row.get("request_id") == request_id:
            if "by" in row:
                return f"already decided by {row['by']} at {row.get('at', '?')}"
            break
    kept = inbox.ledger.receipt(record.run_id, request_id)
    if kept is not None:
        body = kept["receipt"]
        return f"already decided by {body['approver']} at {body['at']}"
    return "already decided (by another process)"


def parse_body(body: Any) -> dict[str, Any]:
    """The decision body's fields, checked (``InboxRefusal`` 400 naming the field)."""
    if not isinstance(body, dict):
        raise InboxRefusal(400, "the body must be a JSON object {request_id, approved, note?, args?, response?}")
    unknown = sorted(k for k in body if k not in _FIELDS)
    if unknown:
        extra = " (the approver is who you authenticated as, never a field)" if "by" in unknown else ""
        raise InboxRefusal(400, f"unknown field {unknown[0]!r}{extra}; allowed: {', '.join(_FIELDS)}")
    rid = body.get("request_id")
    if not isinstance(rid, str) or not rid:
        raise InboxRefusal(400, "field 'request_id': the id of the request you decide on (a non-empty string)")
    if "approved" in body and not isinstance(body["approved"], bool):
        raise InboxRefusal(400, "field 'approved': true or false")
    note = body.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > 4000):
        raise InboxRefusal(400, "field 'note': a string of at most 4000 characters")
    args = body.get("args")
    if args is not None and (not isinstance(args, dict) or not is_json_safe(args)):
        raise InboxRefusal(400, "field 'args': the edited arguments, a JSON object")
    response = body.get("response")
    if response is not None and (not isinstance(response, str) or not response.strip() or len(response) > 20000):
        raise InboxRefusal(400, "field 'response': the answer to an ask_human pause, non-empty text")
    return {
        "request_id": rid,
        "approved": body.get("approved"),
        "note": note or None,
        "args": args,
        "response": response,
    }


def decide(inbox: Inbox, approver: Approver, run_id: str, body: Any) -> dict[str, Any]:
    """Check, record and apply ``approver``'s decision on ``run_id`` (see the module's laws)."""
    rid = body.get("request_id") if isinstance(body, dict) else None
    action = _action(body)

    def refuse(status: int, message: str) -> InboxRefusal:
        inbox.ledger.audit(approver.name, run_id, rid if isinstance(rid, str) else None, action, str(status), message)
        return InboxRefusal(status, message)

    if not approver.may_decide:
        raise refuse(403, f"{approver.name} has the {approver.role} role: only an approver may decide")
    try:
        fields = parse_body(body)
    except InboxRefusal as refusal:
        raise refuse(refusal.status, refusal.message) from None
    try:
        record = inbox.store.get(run_id)
    except RunNotFoundError:
        raise refuse(404, f"no run '{run_id}' in this store") from None
    request_id = fields["request_id"]
    if request_id in record.answered:
        raise refuse(409, f"request '{request_id}' of run '{run_id}' was {decided_by(inbox, record, request_id)}")
    if record.status != "paused":
        raise refuse(409, f"run '{run_id}' is {record.status}: it is not waiting for a decision")
    waiting = pending_id(record)
    if request_id != waiting:
        raise refuse(
            409,
            f"request '{request_id}' is not the pause run '{run_id}' waits on (it waits on '{waiting}'): "
            "reload the run and decide on its current request",
        )
    if expired(inbox, record):
        raise refuse(
            410,
            f"the pause of run '{run_id}' expired: paused since {_iso(record.updated_at)}, longer than the "
            f"policy's {inbox.policies.expire_after:g}s; it can no longer be decided here",
        )
    starter = starter_of(record.input.get("input_identity")) if isinstance(record.input, Mapping) else None
    if inbox.policies.no_self_approval and starter is not None and starter == approver.name:
        raise refuse(403, f"{approver.name} started run '{run_id}': the policy forbids deciding your own run")
    kind = pause_kind(record)
    tool, asked = tool_and_args(record)
    if kind == "ask_human":
        if fields["response"] is None:
            raise refuse(400, "field 'response': this run waits on an ask_human question; answer it with text")
        if fields["args"] is not None or fields["approved"] is not None:
            raise refuse(400, "field 'approved'/'args': an ask_human pause takes a 'response', not a decision")
    else:
        if fields["response"] is not None:
            raise refuse(400, f"field 'response': run '{run_id}' waits on a {kind} decision; send 'approved'")
        if fields["approved"] is None:
            raise refuse(400, "field 'approved': true to approve, false to decline")
        if fields["args"] is not None and not fields["approved"]:
            raise refuse(400, "field 'args': only an approval edits the arguments (a decline runs nothing)")
        if inbox.agent is not None and tool not in inbox.agent.config.tools:
            raise refuse(400, f"unknown tool '{tool}': the agent this inbox serves has no such tool")
        if fields["args"] is not None and inbox.agent is None:
            raise refuse(400, "field 'args': editing arguments needs the agent (agent serve --agent MODULE:ATTR)")
    by = approver.name
    args = fields["args"]
    if kind != "ask_human" and fields["approved"] and tool in inbox.policies.four_eyes:
        firsts = inbox.ledger.first_approvals(run_id, request_id)
        if any(f["by"] == by for f in firsts):
            raise refuse(409, f"four-eyes: {by} approved this already; a second, different approver must approve")
        if not firsts:
            at = _iso(inbox.clock())
            inbox.ledger.add_first_approval(run_id, request_id, by, at, args, fields["note"])
            inbox.ledger.audit(by, run_id, request_id, action, "pending-second-approver", f"four-eyes on {tool}")
            _changed(inbox, run_id)
            return {
                "run_id": run_id,
                "request_id": request_id,
                "status": "paused",
                "pending": f"four-eyes: approved by {by}, waiting for a second approver",
            }
        first = firsts[0]
        if args is not None and first["args"] is not None and args != first["args"]:
            raise refuse(409, f"four-eyes: {first['by']} approved other arguments; approve the same ones, or decline")
        args = args if args is not None else first["args"]
        by = f"{first['by']} and {by}"
    return _record(inbox, approver, record, kind, tool, asked, fields, by, args, action, refuse)


def _action(body: Any) -> str:
    if not isinstance(body, dict):
        return "decide"
    if "response" in body:
        return "respond"
    if body.get("approved") is True:
        return "edit-approve" if body.get("args") is not None else "approve"
    return "decline" if body.get("approved") is False else "decide"


def _record(
    inbox: Inbox,
    approver: Approver,
    record: RunRecord,
    kind: str | None,
    tool: str | None,
    asked: Any,
    fields: dict[str, Any],
    by: str,
    args: Any,
    action: str,
    refuse: Callable[[int, str], InboxRefusal],
) -> dict[str, Any]:
    from agent._run import durable

    run_id, request_id = record.run_id, fields["request_id"]
    evidence = evidence_of(record)
    head = inbox.store.verify(run_id)
    at = _iso(inbox.clock())
    if kind == "ask_human":
        answer: Any = fields["response"]
        verdict, ran = "answered", fields["response"]
    else:
        make = check_in_approved if fields["approved"] else check_in_declined
        extra = {"args": args} if fields["approved"] and args is not None else {}
        try:
            answer = make(request=record.question, by=by, note=fields["note"], at=at, **extra)
        except DecisionInputError as exc:
            raise refuse(400, str(exc)) from None
        verdict = "approved" if fields["approved"] else "declined"
        ran = args if args is not None else asked
    tools = inbox.agent.config.tools if inbox.agent is not None else None
    try:
        durable.answer_in(inbox.store, run_id, answer, tools=tools, agent=inbox.agent)
    except ResumeDecisionError as exc:
        if exc.problem == "already-used":
            fresh = inbox.store.get(run_id)
            by_whom = decided_by(inbox, fresh, request_id)
            raise refuse(409, f"request '{request_id}' of run '{run_id}' was {by_whom}") from None
        raise refuse(409, str(exc)) from None
    except DecisionInputError as exc:
        raise refuse(400, str(exc).removeprefix("[resume] ")) from None
    receipt = make_receipt(
        inbox.receipt_key,
        run_id=run_id,
        request_id=request_id,
        verdict=verdict,
        approver=by,
        tool=tool,
        args=ran,
        evidence=evidence,
        policy=inbox.policies.describe(tool),
        at=at,
        chain_head=head,
        note=fields["note"],
    )
    inbox.ledger.keep_receipt(run_id, request_id, receipt)
    inbox.ledger.audit(approver.name, run_id, request_id, action, "decided", f"{verdict} as {by}")
    _changed(inbox, run_id)
    outcome = _advance(inbox, run_id)
    _changed(inbox, run_id)
    now = inbox.store.get(run_id)
    out: dict[str, Any] = {
        "run_id": run_id,
        "request_id": request_id,
        "decision": answer.to_dict() if hasattr(answer, "to_dict") else {"response": answer},
        "status": now.status,
        "receipt": receipt,
    }
    if outcome is not None:
        out["resumed"] = outcome
    return out


def _advance(inbox: Inbox, run_id: str) -> str | None:
    """Resume the answered run: in process (the agent), on the queue, or not here."""
    if inbox.queue is not None:
        from agent._run.queueing import enqueue

        enqueue(inbox.queue, run_id)
        return "queued"
    if inbox.agent is None:
        return None
    from agent._run import durable

    try:
        durable.advance_now(inbox.agent, run_id)
    except Exception as exc:  # the run is recorded failed with its error: the caller reads the status
        return f"failed: {type(exc).__name__}: {exc}"
    return "in-process"


def _changed(inbox: Inbox, run_id: str) -> None:
    if inbox.on_change is not None:
        inbox.on_change(run_id)
