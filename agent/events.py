"""The agent's event names, public: what ``agent.on(name, listener)`` and an emit recorder see.

The events themselves are made by the chart's stages (``agent._chart.events``); this module
only names them, so a listener never imports the chart.
"""

from agent._chart.events import (
    CHECKIN_DECISION,
    CHECKIN_REQUEST,
    EVENT_NAMES,
    ITERATION_END,
    ITERATION_START,
    LLM_END,
    LLM_START,
    LLM_TOKEN,
    MIDDLEWARE_DECISION,
    PAUSE_REQUEST,
    PAUSE_RESUME,
    ROUTE_DECIDED,
    TOOL_END,
    TOOL_ERROR,
    TOOL_START,
    TURN_END,
    TURN_START,
)

__all__ = [
    "CHECKIN_DECISION",
    "CHECKIN_REQUEST",
    "EVENT_NAMES",
    "ITERATION_END",
    "ITERATION_START",
    "LLM_END",
    "LLM_START",
    "LLM_TOKEN",
    "MIDDLEWARE_DECISION",
    "PAUSE_REQUEST",
    "PAUSE_RESUME",
    "ROUTE_DECIDED",
    "TOOL_END",
    "TOOL_ERROR",
    "TOOL_START",
    "TURN_END",
    "TURN_START",
]
