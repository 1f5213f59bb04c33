"""``Paused``: what ``agent.run`` returns when a person must answer, and answer checking.

Laws: a consent pause (a tool's check-in or a middleware ask) is answered ONLY with a
``CheckInDecision`` for that very request — anything else raises
``DecisionRequiredError`` before anything runs (the checkpoint stays usable); a decision
for another request, for a call that changed since the ask, or one already used raises
``ResumeDecisionError``. An ``ask_human`` pause takes any JSON-safe value.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from flowchart import Checkpoint
from governance import (
    CheckInRequest,
    MiddlewareAsk,
    ask_request_id,
    check_in_request_id,
    require_decision,
    verify_decision,
)

from .dispatch import PAUSED_KEY


@attrs.frozen
class Paused:
    """A run waiting for a person. Resume with ``agent.resume(paused.checkpoint, answer)``.

    ``check_in`` is the pending ``CheckInRequest`` (a tool's check-in tripped), ``ask`` the
    pending middleware ask (``id``, ``question``, ``detail``, ``middleware``, ``tool``,
    ``args``); both ``None`` for an ``ask_human`` pause, whose data is ``pause_data["data"]``.
    ``run_id`` is set when the agent has a run store.
    """

    checkpoint: Checkpoint
    pause_data: Any
    check_in: CheckInRequest | None = None
    ask: MiddlewareAsk | None = None
    run_id: str | None = None

    @property
    def kind(self) -> str:
        """``"check_in"``, ``"ask"`` or ``"ask_human"``."""
        return str(self.pause_data.get("kind", "ask_human"))


def paused_from(checkpoint: Checkpoint, run_id: str | None = None) -> Paused:
    """Read a checkpoint's pause data back into a ``Paused``."""
    data = checkpoint.pause_data
    check_in = CheckInRequest.from_dict(data["check_in"], "$.pause_data.check_in") if "check_in" in data else None
    ask = MiddlewareAsk.from_dict(data["ask"], "$.pause_data.ask") if "ask" in data else None
    return Paused(checkpoint=checkpoint, pause_data=data, check_in=check_in, ask=ask, run_id=run_id)


def current_request_id(checkpoint: Checkpoint) -> str | None:
    """Recompute the pending request's id from the call the checkpoint would run now."""
    state = checkpoint.shared_state
    paused = state.get(PAUSED_KEY) or {}
    identity = state.get("identity")
    if paused.get("kind") == "check_in":
        return check_in_request_id(
            tool=paused["tool_name"], args=paused["args"], tool_call_id=paused["tool_call_id"], identity=identity
        )
    if paused.get("kind") == "ask":
        return ask_request_id(
            middleware=paused["middleware"], tool=paused["tool_name"], args=paused["args"],
            tool_call_id=paused["tool_call_id"], identity=identity,
        )  # fmt: skip
    return None


def check_answer(checkpoint: Checkpoint, answer: Any, answered: set[str]) -> tuple[Any, str | None]:
    """Validate ``answer`` for ``checkpoint``'s pause; return (resume input, request id answered)."""
    if not isinstance(checkpoint, Checkpoint):
        raise TypeError(f"agent.resume(checkpoint, answer): expected a Checkpoint, got {type(checkpoint).__name__}")
    data = checkpoint.pause_data if isinstance(checkpoint.pause_data, dict) else {}
    kind = data.get("kind")
    if kind not in ("check_in", "ask"):
        return answer, None
    gate: Literal["check_in", "ask"] = "check_in" if kind == "check_in" else "ask"
    middleware = data.get("ask", {}).get("middleware") if kind == "ask" else None
    decision = require_decision(answer, gate=gate, tool_name=data.get("tool_name"), middleware=middleware)
    pending = (data.get("check_in") or data.get("ask") or {}).get("id", "")
    verify_decision(
        decision, pending_request_id=pending, current_request_id=current_request_id(checkpoint), answered_ids=answered
    )
    return decision.to_dict(), decision.request_id
