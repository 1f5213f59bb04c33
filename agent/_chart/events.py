"""Agent events: typed names emitted through ``ctx.emit`` and delivered to ``agent.on``.

Every agent event is an ordinary flowchart emit, so it reaches any emit recorder too
(and the narrative shows it as ``[emit] <name>: ...``). Names:

    turn.start · turn.end · iteration.start · iteration.end · llm.start · llm.token
    llm.end · route.decided · tool.start · tool.end · tool.error · middleware.decision
    checkin.request · checkin.decision · pause.request · pause.resume

A listener that raises never breaks a run (the flowchart recorder law).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowchart.events import EmitEvent

TURN_START = "turn.start"
TURN_END = "turn.end"
ITERATION_START = "iteration.start"
ITERATION_END = "iteration.end"
LLM_START = "llm.start"
LLM_TOKEN = "llm.token"
LLM_END = "llm.end"
ROUTE_DECIDED = "route.decided"
TOOL_START = "tool.start"
TOOL_END = "tool.end"
TOOL_ERROR = "tool.error"
MIDDLEWARE_DECISION = "middleware.decision"
CHECKIN_REQUEST = "checkin.request"
CHECKIN_DECISION = "checkin.decision"
PAUSE_REQUEST = "pause.request"
PAUSE_RESUME = "pause.resume"

EVENT_NAMES = (
    TURN_START,
    TURN_END,
    ITERATION_START,
    ITERATION_END,
    LLM_START,
    LLM_TOKEN,
    LLM_END,
    ROUTE_DECIDED,
    TOOL_START,
    TOOL_END,
    TOOL_ERROR,
    MIDDLEWARE_DECISION,
    CHECKIN_REQUEST,
    CHECKIN_DECISION,
    PAUSE_REQUEST,
    PAUSE_RESUME,
)

Listener = Callable[[str, Any], Any]


class EventBus:
    """A flowchart emit recorder that fans agent events out to ``agent.on`` listeners."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {}

    def on(self, name: str, listener: Listener) -> None:
        """Call ``listener(name, payload)`` for every event ``name`` (``"*"`` for all)."""
        if name != "*" and name not in EVENT_NAMES:
            raise ValueError(f"unknown agent event {name!r}; known: {', '.join(EVENT_NAMES)} (or '*')")
        if not callable(listener):
            raise TypeError("agent.on(name, listener): listener must be callable as listener(name, payload)")
        self._listeners.setdefault(name, []).append(listener)

    @property
    def active(self) -> bool:
        """True when anybody listens."""
        return bool(self._listeners)

    def on_emit(self, event: EmitEvent) -> None:
        """The flowchart hook: deliver one emitted event to its listeners."""
        self.deliver(event.name, event.payload)

    def deliver(self, name: str, payload: Any) -> None:
        """Call every listener of ``name`` (and of ``"*"``); a raising listener is skipped."""
        for listener in (*self._listeners.get(name, ()), *self._listeners.get("*", ())):
            try:
                listener(name, payload)
            except Exception:
                continue
