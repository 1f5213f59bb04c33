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
    HANDOFFS,
    HISTORY,
    IDENTITY,
    LLM_LATEST_TOOL_CALLS,
    USER_MESSAGE,
)
from agent._tools.tools import Tool, make_tool
from agent.errors import CompositionError
from flowchart import Scope, StageContext
from flowchart.lowlevel import peek, thaw

__all__ = ["HANDOFFS", "Handoff", "handoff_tool", "make_handoff", "wants_handoff"]

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


def make_handoff(cfg: AgentConfig) -> Any:
    """The ``handoff`` stage (async: the receiving agent may await)."""
    by_tool = {h.tool_name: h for h in cfg.handoffs}

    async def handoff(scope: Scope, ctx: StageContext) -> None:
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
        last = getattr(receiver.segments, "last", None)
        run_id = getattr(getattr(last, "result", None), "run_id", None)
        if run_id is not None:
            row["run_id"] = run_id
        if isinstance(answer, Paused):
            raise CompositionError(
                f"handoff '{spec.name}': the receiving agent paused (a person must answer it); a handoff cannot "
                "wait yet — give the receiving agent no check-in or ask_human tools, or mount it with add_agent"
            )
        row["answer"] = answer
        if HANDOFFS in scope:
            scope[HANDOFFS].append(row)
        else:
            scope[HANDOFFS] = [row]
        scope.llm_latest_content = answer
        scope.llm_latest_tool_calls = []

    return handoff
