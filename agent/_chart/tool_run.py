"""Running one tool call once its gates have passed (or when it has none): the pieces the
gated ``dispatch_call`` and the gate-free ``dispatch_now`` share.

Laws:
- The tool gets its own copy of its args: the args are the committed record of what the
  model asked, and a tool that mutated them would rewrite it.
- A tool that raises is recorded for the developer (a ``tool_errors`` row and a
  ``tool.error`` event; a retried attempt says so), never for the model, which reads only
  the message; the ``tool.end`` event of a tool that ran carries what the model reads.
- ``dispatch_now`` is ``dispatch_call`` for an agent that needs no event loop (no permission
  checker, no tool middleware, no check-in, synchronous tools and provider): arguments →
  execute, with the same reads, rows, events and pauses, and nothing awaited.
"""

from __future__ import annotations

from typing import Any

import attrs

from agent._chart import events
from agent._chart.config import STORE_RUN_ENV, AgentConfig
from agent._chart.effects_run import guarded
from agent._chart.event_views import shown_field
from agent._chart.stages import NEVER_AWAITABLE, settled
from agent._chart.state import (
    CONVERSATION_INPUT,
    HISTORY,
    IDENTITY,
    LLM_LATEST_TOOL_CALLS,
    SUB_AGENTS,
    PauseData,
    PausedCall,
)
from agent._chart.tool_errors import error_row, record_tool_error
from agent._tools.tools import (
    AgentAnswer,
    AskHumanSignal,
    Tool,
    ToolContext,
    format_arg_issues,
    result_text,
    validate_args,
)
from flowchart import Scope, StageContext
from flowchart.lowlevel import copy_json, drive, emit_owned, peek
from governance.checkin import ask_human_request_id


@attrs.frozen
class CallOutcome:
    """What dispatching one call produced: the model-visible ``text``, or a pause.

    ``executed`` is True when the tool ran (its ``tool.end`` event was already emitted).
    """

    text: str | None = None
    pause: PauseData | None = None
    paused: PausedCall | None = None
    executed: bool = False


def identity_of(scope: Scope) -> Any:
    """The run's ``identity`` (a recorded read; ``None`` when the run has none)."""
    return peek(scope, IDENTITY)


@attrs.frozen
class CallSite:
    """One tool call being dispatched: the agent's config, the stage's scope and context,
    the tool, the model's call and the iteration — what every gate after the lookup needs."""

    cfg: AgentConfig
    scope: Scope
    ctx: StageContext
    tool: Tool
    call: dict[str, Any]
    iteration: int


def run_of(ctx: StageContext) -> str:
    """The run a call belongs to: the stored run's id, else this segment's run id."""
    return str(ctx.env.get(STORE_RUN_ENV) or ctx.run_id)


def position_of(ctx: StageContext, iteration: int) -> dict[str, Any]:
    """Where a pause happens: the iteration and the pausing step's runtime id."""
    return {"iteration": iteration, "step": ctx.runtime_stage_id}


def tool_context(ctx: StageContext, call: dict[str, Any], iteration: int, identity: Any) -> ToolContext:
    """What the tool's ``execute(args, ctx)`` is told about the call."""
    turn = ctx.args.get(CONVERSATION_INPUT)  # a conversation turn's plan: its id and number
    return ToolContext(
        tool_call_id=call["id"],
        iteration=iteration,
        run_id=run_of(ctx),
        identity=identity,
        step=ctx.runtime_stage_id,
        conversation=None if turn is None else turn.get("id"),
        turn=None if turn is None else turn.get("turn"),
    )


def run_tool_now(
    cfg: AgentConfig,
    scope: Scope,
    ctx: StageContext,
    tool: Tool,
    call: dict[str, Any],
    iteration: int,
    args: dict[str, Any],
    identity: Any,
) -> Any:
    """``_execute`` for a synchronous tool on an agent with no tool middleware (nothing to await):
    the tool's result (an error's message when it raised); its ``tool.end`` event emitted. The
    ``CallSite`` the record of a failure needs is made only when the tool raises."""
    tool_ctx = tool_context(ctx, call, iteration, identity)
    execute = tool.execute if tool.effect == "read" else guarded(cfg.effect_ledger, scope, tool, iteration, ctx.run_id)
    attempt = 1
    result: Any = None
    while True:
        try:
            result = execute(copy_json(args), tool_ctx)  # its own copy (see _execute)
            if type(result) not in NEVER_AWAITABLE:  # e.g. an awaitable that never suspends
                result = settled(result)
            error = False
        except AskHumanSignal:
            raise
        except Exception as exc:
            delay = record_failure(CallSite(cfg, scope, ctx, tool, call, iteration), exc, attempt)
            if delay is not None:
                drive(tool.retry.wait(delay))  # outside an event loop: a plain sleep
                attempt += 1
                continue
            result, error = str(exc) or type(exc).__name__, True
        break
    if type(result) is AgentAnswer:
        result = record_sub_agent(scope, call, iteration, result)
    if ctx.listens(events.TOOL_END):
        _ended(ctx, call, tool, result, error)
    return result


def record_sub_agent(scope: Scope, call: dict[str, Any], iteration: int, answer: AgentAnswer) -> str:
    """Record which sub-agent run answered the call (``sub_agents``); the answer's text."""
    row = {
        "tool": call["name"],
        "tool_call_id": call["id"],
        "iteration": iteration,
        "agent": answer.agent,
        "run_id": answer.run_id,
        "model_calls": answer.model_calls,
        "answer": answer.text,
    }
    if SUB_AGENTS in scope:
        scope[SUB_AGENTS].append(row)
    else:
        scope[SUB_AGENTS] = [row]
    return answer.text


def record_failure(site: CallSite, exc: Exception, attempt: int) -> float | None:
    """Record that the tool raised on ``attempt``; the delay before trying again, or ``None``
    when this failure is the call's result."""
    tool = site.tool
    row = error_row(exc, tool.name, site.call["id"], site.iteration)
    policy = tool.retry
    if policy is not None:
        row["attempt"] = attempt
        if attempt < policy.attempts and policy.retries(exc):  # recorded, then tried again
            record_tool_error(site.scope, site.ctx, {**row, "retried": True})
            return float(policy.delay(attempt, tool.name))
    record_tool_error(site.scope, site.ctx, row)
    return None


def tool_ended(site: CallSite, result: Any, error: bool) -> None:
    """The ``tool.end`` event of a tool that ran (its payload built only when somebody listens)."""
    if site.ctx.listens(events.TOOL_END):
        _ended(site.ctx, site.call, site.tool, result, error)


def _ended(ctx: StageContext, call: dict[str, Any], tool: Tool, result: Any, error: bool) -> None:
    emit_owned(ctx, events.TOOL_END, tool_end_payload(ctx, call["id"], tool.name, result_text(result), error))


def tool_end_payload(ctx: StageContext, call_id: str, tool_name: str, text: str, error: bool) -> dict[str, Any]:
    """The ``tool.end`` event's payload: the result as the history's tool message shows it in
    events (the run's redaction of ``history``); a fresh dict of scalars, handed over uncopied."""
    message = {"role": "tool", "content": text, "tool_call_id": call_id, "tool_name": tool_name}
    return {
        "tool_call_id": call_id,
        "tool_name": tool_name,
        "result": shown_field(ctx, HISTORY, message, "content"),
        "error": error,
    }


def look_up(cfg: AgentConfig, ctx: StageContext, call: dict[str, Any], iteration: int) -> Tool | CallOutcome:
    """The call's ``tool.start`` event, then its tool, or what the call comes to when its
    arguments did not parse or no such tool exists."""
    name = call["name"]
    if ctx.listens(events.TOOL_START):
        args = copy_json(call.get("args") or {})  # as the model's call shows them in events (the run's redaction)
        shown = shown_field(ctx, LLM_LATEST_TOOL_CALLS, {"id": call["id"], "name": name, "args": args}, "args")
        payload = {"tool_name": name, "tool_call_id": call["id"], "args": shown, "iteration": iteration}
        emit_owned(ctx, events.TOOL_START, payload)  # the args copied, the rest scalars
    if call.get("args_error"):
        return CallOutcome(text=format_arg_issues(name, [f"the arguments are not valid JSON ({call['args_error']})"]))
    tool = cfg.tools.get(name)
    return CallOutcome(text=f"Unknown tool: {name}") if tool is None else tool


def asked_human(
    ctx: StageContext, call: dict[str, Any], args: Any, iteration: int, signal: AskHumanSignal
) -> CallOutcome:
    """The pause of a tool that called ``ask_human``."""
    name, call_id = call["name"], call["id"]
    position = position_of(ctx, iteration)
    rid = ask_human_request_id(tool=name, tool_call_id=call_id, run_id=run_of(ctx), position=position)
    paused = PausedCall("ask_human", call_id, name, args, rid, position)
    return CallOutcome(pause=PauseData("ask_human", call_id, name, signal.data), paused=paused)


_ABSENT: Any = object()


def dispatch_now(cfg: AgentConfig, scope: Scope, ctx: StageContext, call: dict[str, Any], iteration: int) -> Any:
    """``dispatch_call`` for an agent whose gates have nothing to run or await (no permission
    checker, no tool middleware, no check-in, synchronous tools and provider: the agent needs
    no event loop): arguments → execute. What the model reads when the tool ran (a ``str``:
    the ``CallOutcome(text, executed=True)`` of ``dispatch_call``, not made), else the outcome."""
    found = look_up(cfg, ctx, call, iteration)
    if isinstance(found, CallOutcome):
        return found
    args = call.get("args") or {}
    # the stage's reads, as dispatch_call lists them: the identity here, then again for the
    # tool's context (``_execute``); a key that is not there is no read at all (``peek`` records
    # nothing then), so an absent identity is looked up once
    identity = peek(scope, IDENTITY, _ABSENT)
    stopped = argument_gate(found, args)
    if stopped is not None:
        return stopped
    identity = None if identity is _ABSENT else identity_of(scope)
    try:
        result = run_tool_now(cfg, scope, ctx, found, call, iteration, args, identity)
    except AskHumanSignal as signal:
        return asked_human(ctx, call, args, iteration, signal)
    return result_text(result)


def argument_gate(tool: Tool, args: dict[str, Any]) -> CallOutcome | None:
    """Gate 3 (``agent._chart.dispatch``): the (transformed) arguments against the tool's input schema."""
    issues = validate_args(args, tool.input_schema)
    return CallOutcome(text=format_arg_issues(tool.name, issues)) if issues else None
