"""Handoffs: the model calls ``transfer_to_<name>`` and another agent takes the conversation over.

Laws:
- A handoff is its own stage (``handoff``, a branch of ``route``, present only when the agent
  has handoffs): route takes it as soon as the model's reply asks for a transfer (any other
  calls of that reply are not run, and the record says so). Its commit writes ``handoffs``
  (appended: ``to``, ``reason`` — what the model gave —, ``tool_call_id``, the messages sent and
  left out by the ``input_filter``, the receiving run's id) and the receiving agent's answer as
  this run's answer; the run then ends through ``final`` as any other.
- The receiving agent is sent the conversation: this run's history (the user's message last,
  as its own input), after ``input_filter(messages) -> messages`` when one is given; the
  injected context of this agent is never part of it (it is not in history).
- Handoffs nest (the receiver may hand off again): past ``max_handoffs`` in one chain the stage
  raises ``CompositionError`` naming the chain — a ping-pong never runs forever.
- A receiver that pauses (a check-in, an ask, ``ask_human``) pauses this run: the stage is
  pausable; it pauses with the receiver's pause data (plus ``handoff``: the name) and keeps
  ``handoff_paused`` (who, the chain, the row so far, the receiver's checkpoint as plain data —
  or its run id when the receiver has a store). ``agent.resume(checkpoint, answer)`` has the
  receiver check the answer before anything runs (``held_pause``), and the resume half resumes
  the receiver with it — pausing again when the receiver does — so a check-in inside a handoff
  is answered through the run that handed off, in this process or a fresh one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from agent._chart.config import STATE_INPUT_IDENTITY, STATE_INPUT_MESSAGE, AgentConfig
from agent._chart.conversation_turns import check_message
from agent._chart.paused import Paused
from agent._chart.state import (
    CONVERSATION_INPUT,
    HANDOFF_PAUSED,
    HANDOFFS,
    HISTORY,
    IDENTITY,
    LLM_LATEST_TOOL_CALLS,
    USER_MESSAGE,
)
from agent._tools.tools import Tool, make_tool
from agent.errors import CompositionError
from flowchart import Checkpoint, Pausable, Scope, StageContext, pause_again
from flowchart.lowlevel import peek, thaw
from governance import CheckInDecision

__all__ = ["HANDOFFS", "Handoff", "handoff_tool", "held_pause", "make_handoff", "wants_handoff"]

PREFIX = "transfer_to_"
#: the agents a handoff chain has passed through so far (outermost first), per task
_CHAIN: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("pyfootprint_handoff_chain", default=())


@attrs.frozen
class Handoff:
    """One declared handoff: the receiving agent (or a function returning it, for a cycle
    declared before both agents exist), its name, what the model is told, the filter."""

    name: str
    agent: Any
    description: str
    input_filter: Callable[[list[dict[str, Any]]], Any] | None = None

    @property
    def tool_name(self) -> str:
        """``transfer_to_<name>``."""
        return PREFIX + self.name

    def receiver(self) -> Any:
        """The receiving agent (called when given as a function)."""
        found = self.agent if hasattr(self.agent, "segments") else self.agent()
        if not hasattr(found, "segments"):
            raise CompositionError(f"handoff '{self.name}': agent= must be an Agent (or return one), got {found!r}")
        return found


def handoff_tool(spec: Handoff) -> Tool:
    """The tool the model is offered for ``spec``: ``transfer_to_<name>(reason)``."""

    def never(_args: Any, _ctx: Any) -> str:  # route takes the handoff branch before tool-calls
        raise CompositionError(f"{spec.tool_name} is carried out by the handoff stage, not as a tool")

    return make_tool(
        name=spec.tool_name,
        description=spec.description,
        input_schema={
            "type": "object",
            "properties": {"reason": {"type": "string", "description": "why this agent should take over"}},
            "required": ["reason"],
        },
        execute=never,
    )


def wants_handoff(cfg: AgentConfig) -> Callable[[Any], bool]:
    """Route's rule: the latest reply asks for a transfer this agent offers."""
    names = frozenset(h.tool_name for h in cfg.handoffs)
    return lambda s: any(call.get("name") in names for call in s[LLM_LATEST_TOOL_CALLS])


def _sent(history: Sequence[dict[str, Any]], user_message: str) -> list[dict[str, Any]]:
    """The messages before the user's current one (that one is the receiver's own input)."""
    messages = list(history)
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user" and messages[index].get("content") == user_message:
            del messages[index]
            break
    return messages


def held_pause(cfg: AgentConfig, state: Any) -> tuple[Any, Checkpoint | str] | None:
    """When a run of ``cfg`` paused inside a handoff (``state`` is its checkpoint's): the receiving
    agent and what resumes it — its checkpoint, or its stored run's id. ``None`` otherwise."""
    held = state.get(HANDOFF_PAUSED) if isinstance(state, dict) else None
    if held is None:
        return None
    if not isinstance(held, dict) or not isinstance(held.get("to"), str):
        raise CompositionError(
            f"the checkpoint's {HANDOFF_PAUSED} is not a handoff pause: expected {{'to': name, ...}}"
        )
    spec = next((h for h in cfg.handoffs if h.name == held["to"]), None)
    if spec is None:
        raise CompositionError(
            f"the checkpoint paused inside a handoff to '{held['to']}', which this agent does not declare: "
            "resume it with the agent that handed off"
        )
    receiver = spec.receiver()
    if isinstance(held.get("stored_run"), str):
        return receiver, held["stored_run"]
    return receiver, Checkpoint.from_dict(held.get("checkpoint"))


def _hold(scope: Scope, spec: Handoff, chain: tuple[str, ...], row: dict[str, Any], paused: Paused) -> Any:
    """The receiver paused: keep what resumes it; the stage pauses with its pause data."""
    data = paused.pause_data
    kind = data.get("kind", "ask_human") if isinstance(data, dict) else "ask_human"
    held: dict[str, Any] = {"to": spec.name, "kind": kind, "chain": list(chain), "row": row}
    if paused.run_id is not None:  # a receiver with a store keeps its own checkpoint
        held["stored_run"] = paused.run_id
    else:
        held["checkpoint"] = paused.checkpoint.to_dict()
    scope[HANDOFF_PAUSED] = held
    return {**data, "handoff": spec.name} if isinstance(data, dict) else {"kind": "ask_human", "data": data}


def _answered(scope: Scope, row: dict[str, Any], answer: Any) -> None:
    """The receiver answered: the row is complete and its answer is this run's."""
    row["answer"] = answer
    if HANDOFFS in scope:
        scope[HANDOFFS].append(row)
    else:
        scope[HANDOFFS] = [row]
    scope.llm_latest_content = answer
    scope.llm_latest_tool_calls = []


def make_handoff(cfg: AgentConfig) -> Pausable:
    """The pausable ``handoff`` stage (async: the receiving agent may await)."""
    by_tool = {h.tool_name: h for h in cfg.handoffs}
    by_name = {h.name: h for h in cfg.handoffs}

    async def handoff(scope: Scope, ctx: StageContext) -> Any:
        calls = thaw(peek(scope, LLM_LATEST_TOOL_CALLS))
        chosen = next(c for c in calls if c.get("name") in by_tool)
        spec = by_tool[chosen["name"]]
        chain = _CHAIN.get()
        if len(chain) >= cfg.max_handoffs:
            path = " → ".join([*chain, spec.name])
            raise CompositionError(
                f"handoff to '{spec.name}' refused: the chain {path} would exceed max_handoffs={cfg.max_handoffs} "
                "(agents handing a conversation back and forth); raise Agent.create(max_handoffs=...) or let one "
                "agent answer"
            )
        user_message = peek(scope, USER_MESSAGE)
        messages = _sent(thaw(peek(scope, HISTORY)), user_message)
        kept = messages
        if spec.input_filter is not None:
            filtered = spec.input_filter([dict(m) for m in messages])
            if not isinstance(filtered, list):
                raise CompositionError(
                    f"handoff '{spec.name}': input_filter must return a list of messages, got {type(filtered).__name__}"
                )
            where = f"handoff '{spec.name}' input_filter message"
            kept = [check_message(m, f"{where} {i + 1}") for i, m in enumerate(filtered)]
        reason = chosen.get("args", {}).get("reason") if isinstance(chosen.get("args"), dict) else None
        row: dict[str, Any] = {
            "to": spec.name,
            "tool_call_id": chosen["id"],
            "reason": reason if isinstance(reason, str) else None,
            "messages_sent": len(kept) + 1,
            "messages_left_out": len(messages) - len(kept) if spec.input_filter is not None else 0,
        }
        ignored = [c["name"] for c in calls if c is not chosen]
        if ignored:
            row["calls_not_run"] = ignored
        run_input: dict[str, Any] = {STATE_INPUT_MESSAGE: user_message}
        identity = peek(scope, IDENTITY, None)
        if identity is not None:
            run_input[STATE_INPUT_IDENTITY] = thaw(identity)
        run_input[CONVERSATION_INPUT] = {
            "history": kept,
            "id": f"handoff:{spec.name}",
            "turn": len(chain) + 1,
            "messages": len(kept),
            "loaded_turns": [],
        }
        receiver = spec.receiver()
        token = _CHAIN.set((*chain, spec.name))
        try:
            answer = await receiver.segments.arun_turn(run_input)
        finally:
            _CHAIN.reset(token)
        _note_run(receiver, row)
        if isinstance(answer, Paused):
            return _hold(scope, spec, (*chain, spec.name), row, answer)
        _answered(scope, row, answer)
        return None

    async def resume(scope: Scope, answer: Any, ctx: StageContext) -> Any:
        held = thaw(peek(scope, HANDOFF_PAUSED))
        found = held_pause(cfg, {HANDOFF_PAUSED: held})
        assert found is not None
        del scope[HANDOFF_PAUSED]
        receiver, where = found
        spec = by_name[held["to"]]
        row = dict(held["row"])
        token = _CHAIN.set(tuple(held.get("chain") or ()))
        try:
            if isinstance(where, str):  # a stored receiver: its own store checks and records the answer
                decision = CheckInDecision.from_dict(answer) if _consent(held) else answer
                reply = await receiver.aresume_run(where, decision)
            else:  # checked by the receiver already (Agent.checked_resume_input)
                reply = await receiver.segments.aresume_turn(where, answer)
        finally:
            _CHAIN.reset(token)
        _note_run(receiver, row)
        if isinstance(reply, Paused):
            return pause_again(_hold(scope, spec, tuple(held.get("chain") or ()), row, reply))
        _answered(scope, row, reply)
        return None

    return Pausable(execute=handoff, resume=resume)


def _consent(held: dict[str, Any]) -> bool:
    """The held pause is a consent gate (a check-in or an ask): it is answered with a decision."""
    return held.get("kind") in ("check_in", "ask")


def _note_run(receiver: Any, row: dict[str, Any]) -> None:
    """The row names the receiver's (latest) run."""
    last = getattr(receiver.segments, "last", None)
    run_id = getattr(getattr(last, "result", None), "run_id", None)
    if run_id is not None:
        row["run_id"] = run_id
