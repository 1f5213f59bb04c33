"""OpenTelemetry spans for runs: ``otel_recorder(tracer_provider=None)`` (extra ``[otel]``).

The recorder turns the events a run already gives its recorders into spans:

    run (flowchart.run, or invoke_agent for an agent) ── parent: the caller's current span
    ├── one span per executed stage (runtime id, commit idx, reads/writes keys)
    │   ├── chat <model>          (agent ``llm.start``/``llm.end`` emits, GenAI conventions)
    │   └── execute_tool <name>   (agent ``tool.start``/``tool.end`` emits)
    ├── fork <parent>             (a fork's or a selector's children run under it)
    └── <subflow mount>           (the subflow's stages nest under their mount)

Laws:
- The record is the evidence, with the run's redaction applied: span attributes carry
  keys, ids and counts; values only with ``values=True``, and then only as the (already
  redacted) commit log has them. Agent event payloads contribute metadata only (model,
  token counts, tool name, call id, decision verdicts), never message or argument text.
- Pauses and human decisions are span events; a stage or a tool that fails sets the
  span's status to ERROR (a pause is not an error); a failed run's span is ERROR too.
- A resumed run's span links to the span of the run it resumed (when this recorder saw
  it) and always names it in ``flowchart.resumed_from``.
- One recorder serves many runs at once (an agent reuses it): its state is per run id.
- ``flowchart`` does not import ``agent``: the GenAI spans come from the documented agent
  event names, which are plain strings on the emit channel.
"""

from __future__ import annotations

import json
from typing import Any

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode
except ImportError as exc:  # without the extra: say which one to install
    raise ImportError(
        "flowchart.otel needs OpenTelemetry: pip install opentelemetry-api opentelemetry-sdk "
        "(in a pyfootprint checkout: pip install -e '.[otel]')"
    ) from exc

from flowchart.events import (
    CommitEvent,
    EmitEvent,
    ErrorEvent,
    ForkEvent,
    NextEvent,
    PauseEvent,
    ResumeEvent,
    RunEvent,
    StageEvent,
    StageExecutedEvent,
    SubflowEvent,
)

__all__ = ["OtelRecorder", "otel_recorder"]

TRACER_NAME = "pyfootprint"
#: the agent's event names (agent/events.py) this recorder turns into GenAI spans and span events
_LLM_START, _LLM_END = "llm.start", "llm.end"
_TOOL_START, _TOOL_END = "tool.start", "tool.end"
_TURN_START = "turn.start"
_CHECKIN_REQUEST, _CHECKIN_DECISION = "checkin.request", "checkin.decision"
_MIDDLEWARE_DECISION = "middleware.decision"
_PAUSE_RESUME = "pause.resume"
_MIDDLEWARE_FIELDS = ("middleware", "moment", "outcome", "tool_name", "tool_call_id")
_MAX_VALUE = 4096
_MAX_PAUSED = 10_000


class _Run:
    """What one run's spans are: the run span, open stage spans, mounts, forks, GenAI spans."""

    __slots__ = ("forks", "genai", "mounts", "span", "stages")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.stages: dict[str, Span] = {}  # runtime id → open stage span
        self.mounts: dict[tuple[str, ...], tuple[str, Span]] = {}  # subflow path → (mount runtime id, span)
        self.forks: dict[tuple[str, ...], tuple[str, Span]] = {}  # subflow path → (fork parent id, span)
        self.genai: dict[str, Span] = {}  # "llm:<runtime id>" / "tool:<call id>" → open span


class OtelRecorder:
    """A flowchart recorder that exports spans (make one with ``otel_recorder``)."""

    def __init__(self, tracer_provider: Any = None, *, values: bool = False) -> None:
        provider = tracer_provider if tracer_provider is not None else trace.get_tracer_provider()
        self._tracer = provider.get_tracer(TRACER_NAME)
        self._values = values
        self._runs: dict[str, _Run] = {}
        #: span context of each run this recorder saw pause, so its resume can link to it
        self._paused: dict[str, tuple[SpanContext, str]] = {}

    # -- the run ------------------------------------------------------------------------------
    def on_run_start(self, event: RunEvent) -> None:
        span = self._tracer.start_span("flowchart.run", context=otel_context.get_current())
        span.set_attribute("flowchart.run_id", event.ctx.run_id)
        self._runs[event.ctx.run_id] = _Run(span)

    def on_resume(self, event: ResumeEvent) -> None:
        """A resumed run has no run-start event: its span starts here, linked to the paused run's."""
        paused, name = self._paused.pop(event.paused_run_id, (None, "flowchart.run"))
        links = [Link(paused, {"flowchart.link": "resumes"})] if paused is not None else None
        span = self._tracer.start_span(name, context=otel_context.get_current(), links=links)
        span.set_attribute("flowchart.run_id", event.ctx.run_id)
        span.set_attribute("flowchart.resumed_from", event.paused_run_id)
        span.add_event("flowchart.resume", {"flowchart.stage.id": event.stage_id})
        self._runs[event.ctx.run_id] = _Run(span)

    def on_run_end(self, event: RunEvent) -> None:
        self._close_run(event.ctx.run_id, "done")

    def on_run_failed(self, event: RunEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is not None:
            _fail(run.span, event.error, "the run failed")
        self._close_run(event.ctx.run_id, "failed")

    def on_pause(self, event: PauseEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        attributes = {"flowchart.stage.id": event.stage_id, **_pause_attributes(event.pause_data)}
        span = run.stages.get(event.ctx.runtime_stage_id)
        if span is not None:
            span.add_event("flowchart.pause", attributes)
        run.span.add_event("flowchart.pause", attributes)
        self._paused[event.ctx.run_id] = (run.span.get_span_context(), getattr(run.span, "name", "flowchart.run"))
        if len(self._paused) > _MAX_PAUSED:  # runs never resumed here must not grow a long-lived recorder
            del self._paused[next(iter(self._paused))]
        self._close_run(event.ctx.run_id, "paused")

    def _close_run(self, run_id: str, status: str) -> None:
        run = self._runs.pop(run_id, None)
        if run is None:
            return
        for span in (*run.genai.values(), *run.stages.values()):
            span.end()
        for _, span in (*run.forks.values(), *run.mounts.values()):
            span.end()
        run.span.set_attribute("flowchart.run.status", status)
        run.span.end()

    # -- stages ---------------------------------------------------------------------------------
    def _parent(self, run: _Run, path: tuple[str, ...]) -> Span:
        if path in run.forks:
            return run.forks[path][1]
        if path in run.mounts:
            return run.mounts[path][1]
        return run.span

    def _open_stage(self, run: _Run, ctx: Any) -> Span:
        parent = self._parent(run, ctx.subflow_path)
        attributes = {"flowchart.stage.id": ctx.stage_id, "flowchart.stage.runtime_id": ctx.runtime_stage_id}
        return self._tracer.start_span(ctx.stage_name, context=trace.set_span_in_context(parent), attributes=attributes)

    def on_stage_start(self, event: StageEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is not None:
            run.stages[event.ctx.runtime_stage_id] = self._open_stage(run, event.ctx)

    def on_subflow_entry(self, event: SubflowEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        span = self._open_stage(run, event.ctx)
        span.set_attribute("flowchart.subflow.id", event.subflow_id)
        run.mounts[(*event.ctx.subflow_path, event.ctx.stage_id)] = (event.ctx.runtime_stage_id, span)

    def on_commit(self, event: CommitEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        rid = event.ctx.runtime_stage_id
        span = run.stages.get(rid)
        mount_path = (*event.ctx.subflow_path, event.ctx.stage_id)
        mount = run.mounts.get(mount_path)
        if span is None and mount is not None and mount[0] == rid:
            span = mount[1]
        if span is None:
            return
        commit = event.commit
        attributes: dict[str, Any] = {
            "flowchart.commit.idx": commit.idx,
            "flowchart.stage.reads": commit.reads,
            "flowchart.stage.writes": commit.written_keys,
        }
        if commit.redacted_paths:
            attributes["flowchart.stage.redacted"] = commit.redacted_paths
        if self._values:
            for op in commit.trace:
                if op.verb != "delete":
                    attributes[f"flowchart.write.{'.'.join(op.path)}"] = _json(op.value)
        span.set_attributes(attributes)
        if mount is not None and mount[0] == rid:  # the mount's one commit is its output merge: it is done
            del run.mounts[mount_path]
            span.end()

    def on_stage_executed(self, event: StageExecutedEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        span = run.stages.pop(event.ctx.runtime_stage_id, None)
        if span is not None:
            span.set_attribute("flowchart.stage.type", event.stage_type)
            span.end()

    def on_error(self, event: ErrorEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None or event.channel != "flow":
            return
        for key in [k for k in run.genai if k.startswith("llm:") or k.startswith("tool:")]:
            _fail(run.genai.pop(key), event.error, event.message)
        span = run.stages.pop(event.ctx.runtime_stage_id, None)
        if span is not None:
            _fail(span, event.error, event.message)
            span.end()

    # -- forks ------------------------------------------------------------------------------------
    def on_fork(self, event: ForkEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        path = event.ctx.subflow_path
        parent = self._parent(run, path)
        span = self._tracer.start_span(f"fork {event.parent}", context=trace.set_span_in_context(parent))
        span.set_attribute("flowchart.fork.children", list(event.children))
        run.forks[path] = (event.ctx.stage_id, span)

    def on_next(self, event: NextEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        fork = run.forks.get(event.ctx.subflow_path)
        if fork is not None and fork[0] == event.ctx.stage_id:
            del run.forks[event.ctx.subflow_path]
            fork[1].end()

    def on_subflow_exit(self, event: SubflowEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        inner = (*event.ctx.subflow_path, event.ctx.stage_id)
        fork = run.forks.pop(inner, None)  # a fork that ended the subflow ends with it
        if fork is not None:
            fork[1].end()

    # -- agent events (GenAI semantic conventions) ------------------------------------------------
    def on_emit(self, event: EmitEvent) -> None:
        run = self._runs.get(event.ctx.run_id)
        if run is None:
            return
        name, payload = event.name, event.payload if isinstance(event.payload, dict) else {}
        stage = run.stages.get(event.ctx.runtime_stage_id) or run.span
        if name == _LLM_START:
            model = str(payload.get("model", ""))
            attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": model}
            span = self._tracer.start_span(
                f"chat {model}", context=trace.set_span_in_context(stage), kind=SpanKind.CLIENT, attributes=attributes
            )
            run.genai[f"llm:{event.ctx.runtime_stage_id}"] = span
        elif name == _LLM_END:
            span = run.genai.pop(f"llm:{event.ctx.runtime_stage_id}", None)
            if span is not None:
                usage = payload.get("usage") or {}
                for key in ("input_tokens", "output_tokens"):
                    if isinstance(usage.get(key), int):
                        span.set_attribute(f"gen_ai.usage.{key}", usage[key])
                if payload.get("finish_reason"):
                    span.set_attribute("gen_ai.response.finish_reasons", [str(payload["finish_reason"])])
                span.end()
        elif name in (_TOOL_START, _PAUSE_RESUME):
            # a resumed run goes on with the paused call: its span starts with the answer
            self._tool_span(run, stage, payload)
            if name == _PAUSE_RESUME:
                self._span_event(run, stage, name, payload)
        elif name == _TOOL_END:
            span = run.genai.pop(f"tool:{payload.get('tool_call_id', '')}", None)
            if span is not None:
                if payload.get("error"):
                    span.set_attribute("error.type", "tool_error")
                    span.set_status(Status(StatusCode.ERROR, "the tool failed or did not run"))
                span.end()
        elif name == _TURN_START:
            run.span.update_name("invoke_agent")
            run.span.set_attribute("gen_ai.operation.name", "invoke_agent")
        else:
            self._span_event(run, stage, name, payload)

    def _tool_span(self, run: _Run, stage: Span, payload: dict[str, Any]) -> None:
        tool = str(payload.get("tool_name", ""))
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": str(payload.get("tool_call_id", "")),
        }
        span = self._tracer.start_span(
            f"execute_tool {tool}", context=trace.set_span_in_context(stage), attributes=attributes
        )
        run.genai[f"tool:{payload.get('tool_call_id', '')}"] = span

    def _span_event(self, run: _Run, stage: Span, name: str, payload: dict[str, Any]) -> None:
        """Check-ins, human decisions and middleware verdicts: events on the tool's (or stage's) span."""
        target = run.genai.get(f"tool:{payload.get('tool_call_id', '')}", stage)
        if name == _CHECKIN_REQUEST:
            target.add_event("checkin.request", _fields(payload, ("tool_name", "tool_call_id")))
        elif name == _CHECKIN_DECISION:
            target.add_event("human.decision", _fields(payload, ("tool_name", "tool_call_id", "approved", "by")))
        elif name == _MIDDLEWARE_DECISION:
            target.add_event("middleware.decision", _fields(payload, _MIDDLEWARE_FIELDS))
        elif name == _PAUSE_RESUME:  # a person's answer is being applied (its verdict follows)
            target.add_event("human.answer", _fields(payload, ("kind", "tool_call_id")))


def otel_recorder(tracer_provider: Any = None, *, values: bool = False) -> OtelRecorder:
    """A recorder that exports a run's spans through ``tracer_provider`` (the global one by default).

    Pass it as ``chart.run(recorders=[...])`` or ``Agent.create(..., recorders=[...])``. The
    run span's parent is the caller's current span. ``values=True`` adds each written value
    as the redacted commit log has it (``flowchart.write.<path>``, JSON, cut at 4 KiB).
    """
    if tracer_provider is not None and not callable(getattr(tracer_provider, "get_tracer", None)):
        raise TypeError(
            f"otel_recorder(tracer_provider=...): expected an OpenTelemetry TracerProvider, "
            f"got {type(tracer_provider).__name__}"
        )
    return OtelRecorder(tracer_provider, values=values)


def _fail(span: Span, error: BaseException | None, message: str) -> None:
    if error is not None:
        span.record_exception(error)
        span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, message))


def _pause_attributes(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        return {}
    return {f"flowchart.pause.{k}": str(data[k]) for k in ("kind", "tool_name", "tool_call_id") if k in data}


def _fields(payload: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        value = payload.get(name)
        if isinstance(value, str | bool | int | float):
            out[name] = value
    return out


def _json(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= _MAX_VALUE else text[: _MAX_VALUE - 1] + "…"
