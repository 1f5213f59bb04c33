"""A person's answer to a consent pause, and the checks a resume makes on it.

Laws this file enforces:

- **A decision names its request.** ``check_in_approved``/``check_in_declined`` take the
  paused request (a ``CheckInRequest``, a ``MiddlewareAsk``, or anything with an ``id``,
  dict or object) and record its id as ``request_id``. ``by`` is recorded as given: a claim,
  not proof — authenticate the person before building the decision.
- **A consent pause takes a decision and nothing else**: ``require_decision`` raises
  ``DecisionRequiredError`` for any other answer, describing its shape, never its value —
  before anything runs, so the same checkpoint can be answered again.
- **A decision answers its request, that call, once**: ``verify_decision`` raises
  ``ResumeDecisionError`` for a decision naming another request, for a call that changed
  since the ask, or for a request already answered.
- **An approval may edit the call, never carry a meaningless value**: ``args={...}``
  replaces the arguments the tool runs with (they must still pass the tool's schema,
  checked at resume); a ``value=`` on a tool check-in's decision is refused
  (``DecisionInputError``) — there it would mean nothing, and silence would hide that.
- **Decisions are data**: JSON round-trip through ``to_dict``/``from_dict`` (they travel in
  checkpoints); ``at`` is an ISO-8601 UTC timestamp unless given (pass one for
  deterministic snapshots).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from flowchart._core.values import NotJsonSafe, copy_json
from governance import _codec
from governance._json import describe_shape
from governance.checkin import CheckInRequest
from governance.errors import DecisionInputError, DecisionRequiredError, Gate, ResumeDecisionError


@attrs.frozen(kw_only=True)
class CheckInDecision:
    """A person's answer: ``request_id`` (the request it answers), ``approved``, ``by`` (who),
    ``note`` (optional; on decline the model reads it), ``at`` (ISO-8601 UTC), ``value``
    (optional JSON-safe choice, for a middleware ask that wanted more than a yes; recorded),
    ``args`` (an approval's edited arguments, or ``None`` to run the call as asked) and
    ``store_head`` (set by a run store when it records the decision: the head of the stored
    run the person decided on, ``RunStore.verify``)."""

    request_id: str
    approved: bool
    by: str
    note: str | None = None
    at: str
    value: Any = None
    args: dict[str, Any] | None = None
    store_head: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``note``/``value`` omitted when absent)."""
        out: dict[str, Any] = {
            "request_id": self.request_id,
            "approved": self.approved,
            "by": self.by,
        }
        if self.note is not None:
            out["note"] = self.note
        out["at"] = self.at
        if self.value is not None:
            out["value"] = self.value
        if self.args is not None:
            out["args"] = self.args
        if self.store_head is not None:
            out["store_head"] = self.store_head
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> CheckInDecision:
        """Read a decision back (strict; ``WireFormatError`` names the bad field)."""
        return _codec.load(cls, data, path)


_codec.register(CheckInDecision, optional=("note", "value", "args", "store_head"))


def now_iso() -> str:
    """The current time as ISO-8601 UTC with milliseconds, e.g. ``2025-01-02T03:04:05.678Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _request_id(request: object, verb: str) -> str:
    if isinstance(request, Mapping) and "id" not in request:  # a stored pause's data: its request inside
        request = request.get("check_in") or request.get("ask") or request
    rid = request.get("id") if isinstance(request, Mapping) else getattr(request, "id", None)
    if not isinstance(rid, str) or not rid:
        raise DecisionInputError(
            f"{verb}(request=...): expected the paused request (paused.check_in or paused.ask), "
            f"which has an 'id'; got {describe_shape(request)}"
        )
    return rid


def _decide(
    verb: str,
    approved: bool,
    request: object,
    by: str,
    note: str | None,
    value: Any,
    at: str | None,
    args: Any = None,
) -> CheckInDecision:
    rid = _request_id(request, verb)
    if not isinstance(by, str) or not by.strip():
        raise DecisionInputError(f"{verb}(by=...): say who decided, as a non-empty string; got {describe_shape(by)}")
    if note is not None and not isinstance(note, str):
        raise DecisionInputError(f"{verb}(note=...): a note is a string; got {describe_shape(note)}")
    try:
        value = copy_json(value)  # what the run will store: a plain copy, tuples as lists
    except NotJsonSafe:
        raise DecisionInputError(
            f"{verb}(value=...): a decision's value must be JSON-safe (it travels in the "
            f"checkpoint); got {describe_shape(value)}"
        ) from None
    if value is not None and _is_check_in(request):
        raise DecisionInputError(
            f"{verb}(value=...): a tool check-in's decision takes no value — the tool runs with its "
            f"arguments, or is declined. To change what runs, approve with args={{...}}; to explain, "
            f"pass note=...; got value={describe_shape(value)}"
        )
    if args is not None:
        bad_args = DecisionInputError(
            f"{verb}(args=...): edited arguments are a JSON-safe dict of the tool's arguments; "
            f"got {describe_shape(args)}"
        )
        if not isinstance(args, Mapping):
            raise bad_args
        try:
            args = copy_json(args)  # a plain, deep copy: the caller's dict can change no decision
        except NotJsonSafe:
            raise bad_args from None
    if at is not None and not isinstance(at, str):
        raise DecisionInputError(f"{verb}(at=...): a timestamp is an ISO-8601 string; got {describe_shape(at)}")
    return CheckInDecision(
        request_id=rid,
        approved=approved,
        by=by,
        note=note or None,
        at=at if at is not None else now_iso(),
        value=value,
        args=args,
    )


def _is_check_in(request: object) -> bool:
    """Is ``request`` a tool's check-in (typed, or its dict form with an evidence pack)?"""
    if isinstance(request, Mapping):
        return "evidence" in request or "check_in" in request
    return isinstance(request, CheckInRequest)


def check_in_approved(
    *,
    request: object,
    by: str,
    note: str | None = None,
    value: Any = None,
    at: str | None = None,
    args: dict[str, Any] | None = None,
) -> CheckInDecision:
    """Approve the paused request: the call runs on resume — with ``args`` instead of the
    asked arguments when given (they must pass the tool's schema; the record keeps both).
    Raises ``DecisionInputError`` (a ``TypeError``) for a request without an id, an empty
    ``by``, a non-string note, a value that is not JSON-safe, a ``value`` on a tool
    check-in, or ``args`` that are not a JSON-safe dict. An empty note counts as none."""
    return _decide("check_in_approved", True, request, by, note, value, at, args)


def check_in_declined(
    *, request: object, by: str, note: str | None = None, value: Any = None, at: str | None = None
) -> CheckInDecision:
    """Decline the paused request: the call never runs and the model reads
    ``declined by human[: <note>]``. A decline answers its request too (it cannot be
    approved afterwards). Same refusals as ``check_in_approved``."""
    return _decide("check_in_declined", False, request, by, note, value, at)


def is_check_in_decision(answer: object) -> bool:
    """True when ``answer`` is a ``CheckInDecision``."""
    return isinstance(answer, CheckInDecision)


def declined_result(note: str | None = None) -> str:
    """What the model reads for a call a person declined: ``declined by human[: <note>]``."""
    return f"declined by human: {note}" if note else "declined by human"


def require_decision(
    answer: object, *, gate: Gate, tool_name: str | None = None, middleware: str | None = None
) -> CheckInDecision:
    """Return ``answer`` if it is a ``CheckInDecision``; otherwise raise
    ``DecisionRequiredError`` naming the gate (``"check_in"`` | ``"ask"``), the tool, the
    asking middleware and the SHAPE of what was received."""
    if isinstance(answer, CheckInDecision):
        return answer
    received = describe_shape(answer)
    what = "a tool's check-in" if gate == "check_in" else f"a tool middleware's ask (asked by '{middleware}')"
    on_tool = f" on tool '{tool_name}'" if tool_name else ""
    attr = "check_in" if gate == "check_in" else "ask"
    raise DecisionRequiredError(
        f"[resume] this run paused on a consent gate — {what}{on_tool} — and a consent gate is "
        f"answered with a DECISION, not a value. Got {received}. Resume with "
        f"check_in_approved(request=paused.{attr}, by=...) or "
        f"check_in_declined(request=paused.{attr}, by=..., note=...).",
        gate=gate,
        tool_name=tool_name,
        middleware=middleware,
        received=received,
    )


def verify_decision(
    decision: CheckInDecision,
    *,
    pending_request_id: str,
    current_request_id: str | None = None,
    answered_ids: Collection[str] = (),
) -> None:
    """Check that ``decision`` may answer the pause the run is on; raise
    ``ResumeDecisionError`` otherwise.

    ``pending_request_id`` is the id minted when the run paused (from the checkpoint);
    ``current_request_id`` is the id recomputed, at resume, from the call that would run
    now (``check_in_request_id``/``ask_request_id``; omit to skip that check);
    ``answered_ids`` are the request ids already answered in this run's lineage.
    Checked in this order: already used, another request, changed call.
    """
    rid = decision.request_id
    if rid in answered_ids:
        raise ResumeDecisionError(
            f"this decision answers request '{rid}', which has already been answered: a "
            f"decision answers its request once. Ask again and decide on the pending request "
            f"'{pending_request_id}'.",
            problem="already-used",
            request_id=rid,
            pending_request_id=pending_request_id,
        )
    if rid != pending_request_id:
        raise ResumeDecisionError(
            f"this decision answers request '{rid}', but the run is paused on request "
            f"'{pending_request_id}'. Build the decision from the pending request: "
            f"check_in_approved(request=paused.check_in or paused.ask, by=...).",
            problem="another-request",
            request_id=rid,
            pending_request_id=pending_request_id,
        )
    if current_request_id is not None and current_request_id != pending_request_id:
        raise ResumeDecisionError(
            f"this decision answers request '{rid}', but the call it was asked about has "
            f"changed since the ask (its run, pause position, tool, arguments, call id or identity differ), "
            f"so it cannot approve what would run now.",
            problem="changed-call",
            request_id=rid,
            pending_request_id=pending_request_id,
        )
