"""``Paused``: what ``agent.run`` returns when a person must answer, and answer checking.

Laws: a consent pause (a tool's check-in or a middleware ask) is answered ONLY with a
``CheckInDecision`` for that very request — anything else raises
``DecisionRequiredError`` before anything runs (the checkpoint stays usable); a decision
for another request, for a call that changed since the ask, or one already used raises
``ResumeDecisionError``; a ``value=`` on a check-in's decision, or edited ``args`` the tool's
schema refuses, raise ``DecisionInputError`` — all before anything runs. An ``ask_human``
pause takes any JSON-safe value, once. The pending request's id is recomputed from the
paused call, its position and the run (``run_id``: the stored run's id, else the pausing
segment's ``checkpoint.run_id``), so a decision for another run never matches.

Answer-once: with a store, the database records each answer once, across processes
(``agent._run.durable``). Without one, ``AnswerBook`` remembers, in this process, every request
an agent answered — marked before the tool runs — so a retry of the same checkpoint with
the same decision is refused even when the first resume failed later on.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Literal

import attrs

from agent._chart.budget import check_budget_answer
from agent._chart.state import IDENTITY, PAUSED_TOOL_CALL
from agent._tools.tools import Tool, validate_args
from flowchart import Checkpoint
from governance import CheckInRequest, DecisionInputError, MiddlewareAsk, ResumeDecisionError
from governance.checkin import ask_request_id, check_in_request_id
from governance.decisions import require_decision, verify_decision

PAUSED_KEY = PAUSED_TOOL_CALL


class AnswerBook:
    """The request ids answered in this process (answer-once without a store)."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._lock = threading.Lock()

    def __contains__(self, request_id: object) -> bool:
        return request_id in self._ids

    def ids(self) -> frozenset[str]:
        """Every request id answered so far."""
        with self._lock:
            return frozenset(self._ids)

    def spend(self, request_id: str) -> None:
        """Mark ``request_id`` answered; ``ResumeDecisionError`` when it already was."""
        with self._lock:
            if request_id in self._ids:
                raise _already_answered(request_id)
            self._ids.add(request_id)


def _already_answered(request_id: str) -> ResumeDecisionError:
    return ResumeDecisionError(
        f"request '{request_id}' has already been answered in this process: a decision answers its "
        f"request once, and a retry of the same checkpoint does not run the call again",
        problem="already-used",
        request_id=request_id,
        pending_request_id=request_id,
    )


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


def current_request_id(checkpoint: Checkpoint, run_id: str | None = None) -> str | None:
    """Recompute the pending request's id from the call the checkpoint would run now, its
    position and the run (``run_id``, default ``checkpoint.run_id``)."""
    state = checkpoint.shared_state
    paused = state.get(PAUSED_KEY) or {}
    identity = state.get(IDENTITY)
    run = checkpoint.run_id if run_id is None else run_id
    position = paused.get("position")
    if paused.get("kind") == "check_in":
        return check_in_request_id(
            tool=paused["tool_name"],
            args=paused["args"],
            tool_call_id=paused["tool_call_id"],
            identity=identity,
            run_id=run,
            position=position,
        )
    if paused.get("kind") == "ask":
        return ask_request_id(
            middleware=paused["middleware"],
            tool=paused["tool_name"],
            args=paused["args"],
            tool_call_id=paused["tool_call_id"],
            identity=identity,
            run_id=run,
            position=position,
        )
    return None


def check_answer(
    checkpoint: Checkpoint,
    answer: Any,
    answered: frozenset[str] | set[str],
    *,
    run_id: str | None = None,
    tools: Mapping[str, Tool] | None = None,
) -> tuple[Any, str | None]:
    """Validate ``answer`` for ``checkpoint``'s pause (of run ``run_id``, default the
    checkpoint's); return (resume input, request id answered). ``tools`` (the agent's)
    let edited ``args`` be checked against the tool's schema here, before anything runs."""
    if not isinstance(checkpoint, Checkpoint):
        raise TypeError(f"agent.resume(checkpoint, answer): expected a Checkpoint, got {type(checkpoint).__name__}")
    data = checkpoint.pause_data if isinstance(checkpoint.pause_data, dict) else {}
    kind = data.get("kind")
    if kind == "budget":  # a budget pause: the answer raises it or not (agent._chart.budget)
        return check_budget_answer(answer), None
    if kind not in ("check_in", "ask"):
        paused = checkpoint.shared_state.get(PAUSED_KEY)
        rid = paused.get("request_id") if isinstance(paused, dict) else None
        if isinstance(rid, str) and rid in answered:
            raise _already_answered(rid)
        return answer, rid if isinstance(rid, str) else None
    gate: Literal["check_in", "ask"] = "check_in" if kind == "check_in" else "ask"
    middleware = data.get("ask", {}).get("middleware") if kind == "ask" else None
    tool_name = data.get("tool_name")
    decision = require_decision(answer, gate=gate, tool_name=tool_name, middleware=middleware)
    pending = (data.get("check_in") or data.get("ask") or {}).get("id", "")
    verify_decision(
        decision,
        pending_request_id=pending,
        current_request_id=current_request_id(checkpoint, run_id),
        answered_ids=answered,
    )
    if gate == "check_in" and decision.value is not None:
        raise DecisionInputError(
            f"[resume] the decision for the check-in on tool '{tool_name}' carries a value, which a "
            f"check-in has no use for: approve with args={{...}} to change the call, or drop the value"
        )
    tool = (tools or {}).get(str(tool_name))
    if decision.args is not None and decision.approved and tool is not None:
        issues = validate_args(decision.args, tool.input_schema)
        if issues:
            raise DecisionInputError(
                f"[resume] the edited args do not fit tool '{tool.name}': {'; '.join(issues)}. "
                f"Approve again with args the tool's input schema accepts (the run is still paused)"
            )
    return decision.to_dict(), decision.request_id
