"""A tool that raises is the developer's to debug: its exception is recorded, not lost.

Laws:
- The model reads the tool's error message (agentfootprint's law: the loop goes on).
  The developer gets more, in the record and NOT in the history sent to the model: one
  row per raise in the state key ``tool_errors`` (absent until a tool raises, so runs
  without errors stay byte-identical) and a ``tool.error`` event carrying the same row.
- A row holds ``tool_name``, ``tool_call_id``, ``iteration``, ``error_type`` (the
  exception's class), ``message`` (what the model read) and ``traceback``: the innermost
  frames as ``module:line in function`` — code locations only, never source text, local
  variables or arguments, so it shows nothing the message does not, and it reads the
  same on every machine. It lands in the commit log, where the run's redaction applies.
"""

from __future__ import annotations

import traceback
from typing import Any

from agent._chart import events
from agent._chart.config import TOOL_ERRORS
from agent._chart.event_views import shown_entry
from flowchart import Scope, StageContext

MAX_FRAMES = 8
MAX_MESSAGE = 500
# the dispatcher's own frames say nothing about the tool: skipped wherever they are
_DISPATCHERS = frozenset(("agent._chart.dispatch", "agent._chart.tool_run"))
# nor does awaiting a synchronous tool's awaitable in place: skipped before the tool's first frame
_IN_PLACE = frozenset(("agent._chart.stages", "flowchart._core.coroutines"))


def _frames(exc: BaseException) -> list[str]:
    out: list[str] = []
    for frame, line in traceback.walk_tb(exc.__traceback__):
        module = frame.f_globals.get("__name__", "?")
        if module in _DISPATCHERS or (not out and module in _IN_PLACE):
            continue
        out.append(f"{module}:{line} in {frame.f_code.co_name}")
    return out[-MAX_FRAMES:]


def error_row(exc: BaseException, tool_name: str, tool_call_id: str, iteration: int) -> dict[str, Any]:
    """The ``tool_errors`` row of ``exc``, raised by tool ``tool_name`` for call ``tool_call_id``."""
    message = str(exc) or type(exc).__name__
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "…"
    return {
        "tool_name": tool_name,
        "tool_call_id": tool_call_id,
        "iteration": iteration,
        "error_type": type(exc).__name__,
        "message": message,
        "traceback": _frames(exc),
    }


def record_tool_error(scope: Scope, ctx: StageContext, row: dict[str, Any]) -> None:
    """Append ``row`` to ``tool_errors`` (creating the key) and emit ``tool.error``."""
    if TOOL_ERRORS in scope:
        scope[TOOL_ERRORS].append(row)
    else:
        scope[TOOL_ERRORS] = [row]
    ctx.emit(events.TOOL_ERROR, shown_entry(ctx, TOOL_ERRORS, row))
