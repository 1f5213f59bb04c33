"""``agent.stream()`` / ``agent.astream()``: an agent run's events as they happen.

Laws:
- An agent stream is a chart stream (``flowchart.stream``) of the agent's chart: the
  same recorder-made events in the same order, plus the agent's own events typed — a
  model token (``token``), a model call done with its usage (``model_call``), a tool
  call (``tool_call``) and its result (``tool_result``), each built from the agent
  event (``agent._chart.events``) that the stage emitted at that moment. Other agent events
  stream as ``emit``.
- Narrative lines are the agent's own narrative (the one ``last_snapshot()`` shows),
  passed through the stream as it is written, never a second narrative.
- The ``final`` event's ``result`` is what ``agent.run`` returns: the answer string or
  ``Paused``. A refusal (``MessageDeniedError``, ``PolicyHaltError``) is raised by the
  iteration after the events, as ``run`` raises it.
- Leaving the loop early cancels the run (see ``flowchart.stream``); with a store the
  stored run is marked failed with ``RunCancelledError: ...``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar

import attrs

from agent._chart import events
from agent._chart.paused import Paused
from agent._chart.structured import answer_json
from flowchart._stream.stream_tap import StreamTap
from flowchart.events import TraversalContext
from flowchart.store.runs import new_run_id
from flowchart.stream import Cancelled, StreamPlan, final_event, mark_cancelled
from flowchart.stream_events import (
    CHART_KINDS,
    CHART_MODES,
    Final,
    StreamEvent,
    json_view,
    resolve_modes,
)

if TYPE_CHECKING:
    from agent._run.agent import Agent


@attrs.define
class Token(StreamEvent):
    """One piece of the model's reply as the provider streamed it (``Agent.create(stream=True)``)."""

    kind: ClassVar[str] = "token"

    iteration: int = 0
    index: int = 0
    text: str = ""


@attrs.define
class ModelCallDone(StreamEvent):
    """A model call returned: its ``content``, how many ``tool_calls``, ``usage`` (``None`` when
    the provider did not report it: unknown, not zero) and finish reason."""

    kind: ClassVar[str] = "model_call"

    iteration: int = 0
    content: str = ""
    tool_calls: int = 0
    usage: dict[str, int] | None = None
    finish_reason: str | None = None


@attrs.define
class ToolCall(StreamEvent):
    """The model called ``tool_name`` with ``args`` (before any gate decided)."""

    kind: ClassVar[str] = "tool_call"

    tool_name: str = ""
    tool_call_id: str = ""
    args: Any = None
    iteration: int = 0


@attrs.define
class ToolResult(StreamEvent):
    """What came of a tool call: the tool's result, or why it did not run (``error``)."""

    kind: ClassVar[str] = "tool_result"

    tool_name: str = ""
    tool_call_id: str = ""
    result: str = ""
    error: bool = False


AGENT_MODES = {
    **CHART_MODES,
    "messages": ("token", "model_call"),
    "tools": ("tool_call", "tool_result"),
}
AGENT_KINDS = (*CHART_KINDS, "token", "model_call", "tool_call", "tool_result")

#: the agent events that stream as typed events, and the kind each becomes
EMIT_KINDS = {
    events.LLM_TOKEN: "token",
    events.LLM_END: "model_call",
    events.TOOL_START: "tool_call",
    events.TOOL_END: "tool_result",
}


def translate(ctx: TraversalContext, name: str, payload: Any) -> StreamEvent | None:
    """The typed stream event for agent event ``name`` (see ``EMIT_KINDS``)."""
    if name == events.LLM_TOKEN:
        return Token(ctx, payload["iteration"], payload["index"], payload["text"])
    if name == events.LLM_END:
        return ModelCallDone(
            ctx,
            payload["iteration"],
            payload["content"],
            payload["tool_calls"],
            payload.get("usage"),
            payload.get("finish_reason"),
        )
    if name == events.TOOL_START:
        return ToolCall(ctx, payload["tool_name"], payload["tool_call_id"], payload["args"], payload["iteration"])
    if name == events.TOOL_END:
        return ToolResult(
            ctx, payload["tool_name"], payload["tool_call_id"], str(payload["result"]), bool(payload["error"])
        )
    return None


def answer_view(result: Any, run_id: str | None = None) -> dict[str, Any]:
    """The agent's result as JSON: ``paused``, ``output`` (the answer), ``question``, ``run_id``
    (the stored run's id, an answer's too: ``run_id`` is the id the stream's run was stored under)."""
    if isinstance(result, Paused):
        return {"paused": True, "output": None, "question": json_view(result.pause_data), "run_id": result.run_id}
    return {"paused": False, "output": answer_json(result), "question": None, "run_id": run_id}


def agent_plan(
    agent: Agent, message: str, identity: Any, modes: Iterable[str] | str | None, turn: Any = None
) -> StreamPlan:
    """The plan of ``agent.stream(message, ...)``: the agent's own run with a tap in it
    (``turn``: the ``(conversation id, policy)`` of a conversation turn)."""
    from agent._run import conversations, durable

    run_input = durable.make_input(message, identity)  # a blank message is refused here, not mid-stream
    kinds = resolve_modes(modes, AGENT_MODES, AGENT_KINDS)
    run_id = new_run_id() if agent.store is not None else None
    tap_box: list[StreamTap] = []

    def make_tap(sink: Callable[[StreamEvent], None]) -> StreamTap:
        tap = StreamTap(sink, kinds, translate=translate, emit_kinds=EMIT_KINDS, will_wrap=agent.narrative)
        tap_box.append(tap)
        return tap

    def attach(recorders: list[Any]) -> list[Any]:
        tap = tap_box[0]
        if agent.narrative:  # the tap stands in for the agent's narrative, which it passes everything on to
            tap.wrap(recorders[0])
            return [tap, *recorders[1:]]
        return [*recorders, tap]

    async def arun(_tap: StreamTap) -> Any:
        if turn is not None:
            conversation, policy = turn
            return await conversations.arun(agent, run_input, conversation, policy, attach=attach, run_id=run_id)
        return await agent.segments.arun_turn(run_input, attach, run_id)

    def run(_tap: StreamTap) -> Any:
        from flowchart.lowlevel import drive

        return drive(arun(_tap))

    def final(result: Any, tap: StreamTap) -> Final:
        event = final_event(result, tap)
        return attrs.evolve(event, view=functools.partial(answer_view, run_id=run_id))

    def on_cancel(record: Cancelled) -> None:
        if agent.store is not None and run_id is not None:
            mark_cancelled(agent.store, run_id, record)

    return StreamPlan(make_tap, arun, run, agent.needs_event_loop, final, on_cancel)
