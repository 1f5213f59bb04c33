"""The ``tool-calls`` stage: dispatch a batch of tool calls through the gates.

Gate order for each call, in the model's order:
    permission → before-tool middleware → argument validation (on the transformed args)
    → check-in → execute → after-tool middleware (reverse order)
Laws:
- Transformed args are what everything downstream sees; the assistant turn in
  ``history`` keeps the model's original args.
- A middleware ``ask``, a tripped check-in or ``ask_human`` pauses the run HERE, before
  the tool runs (ask, check-in) or inside it (ask_human); what happened so far in the
  batch is committed and the paused call is recorded under ``paused_tool_call``.
- On resume the paused call is answered, then the calls AFTER it in the same batch are
  dispatched in order — none dropped, none run twice. If one of them needs a person too,
  the stage pauses again (``pause_again``) without re-running anything.
- A pause's request id binds the run (``agent_run_id`` of a stored run, else the segment's
  run id), the pause's position (``iteration`` and the pausing step's runtime id, kept in
  ``paused_tool_call.position``) and the call. On resume the ``answer`` half commits the
  person's answer to ``human_decisions`` FIRST (its own commit; without a store it also
  marks the request answered in this process, before the tool can run); the ``resume``
  half then acts on the recorded row — so the tool's result traces back to who decided.
- The model reads one ``tool`` message per call: the result (strings as-is, else JSON),
  the error message of a tool that raised, ``Unknown tool: <name>``, the argument
  problems, a denial's reason, or ``declined by human[: <note>]``.
- A tool that raises is recorded for the developer, never for the model: a row in
  ``tool_errors`` (absent until a tool raises; see ``tool_errors.error_row``) and a
  ``tool.error`` event. The history the model reads holds only the message.
"""

from __future__ import annotations

import inspect
from typing import Any

import attrs

from flowchart import Pausable, StageContext
from flowchart.pause import pause_again
from flowchart.scope import Scope, peek
from governance import (
    HUMAN_DECISIONS,
    CheckInPredicateContext,
    PermissionRequest,
    ToolCallInfo,
    ask_answer_row,
    ask_human_request_id,
    ask_resumed_second_ask_reason,
    build_check_in_request,
    build_middleware_ask,
    declined_result,
    history_for_check_in,
    run_after_tool_chain,
    run_tool_chain,
    should_check_in,
)
from governance.permissions import evaluate_permission

from . import events
from .answers import make_record_answer
from .config import STORE_RUN_ENV, AgentConfig
from .paused import PAUSED_KEY, AnswerBook
from .stages import record_rows
from .tool_errors import error_row, record_tool_error
from .tools import AskHumanSignal, Tool, ToolContext, format_arg_issues, result_text, validate_args

TWO_GATES = (
    "tool '{tool}' was not executed and cannot be retried this turn: it declares its own check_in "
    "consent gate, that gate trips for these arguments, and a resumed dispatch has no second checkpoint "
    "to ask on. Answer without it, or finish. (To the agent's author: the middleware '{middleware}' and "
    "the tool's check_in ask different questions — keep one of them for this tool.)"
)


@attrs.frozen
class CallOutcome:
    """What dispatching one call produced: the model-visible ``text``, or a pause.

    ``executed`` is True when the tool ran (its ``tool.end`` event was already emitted).
    """

    text: str | None = None
    pause: dict[str, Any] | None = None
    paused: dict[str, Any] | None = None
    executed: bool = False


def _identity(scope: Scope) -> Any:
    return peek(scope, "identity")


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


def _position(ctx: StageContext, iteration: int) -> dict[str, Any]:
    return {"iteration": iteration, "step": ctx.runtime_stage_id}


def _tool_context(ctx: StageContext, call: dict[str, Any], iteration: int, identity: Any) -> ToolContext:
    return ToolContext(tool_call_id=call["id"], iteration=iteration, run_id=run_of(ctx), identity=identity)


async def _execute(site: CallSite, args: dict[str, Any]) -> tuple[Any, bool]:
    """Run the tool and the after-tool chain; returns (what the model reads, error flag)."""
    cfg, ctx, tool, call = site.cfg, site.ctx, site.tool, site.call
    identity = _identity(site.scope)
    error = False
    attempt = 1
    while True:
        try:
            result = tool.execute(args, _tool_context(ctx, call, site.iteration, identity))
            if inspect.isawaitable(result):
                result = await result
        except AskHumanSignal:
            raise
        except Exception as exc:
            row = error_row(exc, tool.name, call["id"], site.iteration)
            policy = tool.retry
            if policy is not None:
                row["attempt"] = attempt
                if attempt < policy.attempts and policy.retries(exc):  # recorded, then tried again
                    record_tool_error(site.scope, ctx, {**row, "retried": True})
                    await policy.wait(policy.delay(attempt, tool.name))
                    attempt += 1
                    continue
            result, error = str(exc) or type(exc).__name__, True
            record_tool_error(site.scope, ctx, row)
        break
    if ctx.observed:
        ctx.emit(
            events.TOOL_END,
            {"tool_call_id": call["id"], "tool_name": tool.name, "result": result_text(result), "error": error},
        )
    if not cfg.has_after_tool:
        return result, error
    return await _after_tool(site, args, result, error), error


async def _after_tool(site: CallSite, args: dict[str, Any], result: Any, error: bool = False) -> Any:
    """What the model reads for ``result``: the after-tool chain's word (reverse order), rows filed."""
    scope = site.scope
    verdict = await run_after_tool_chain(
        site.cfg.tool_middleware,
        ToolCallInfo(
            tool_name=site.tool.name, tool_call_id=site.call["id"], iteration=site.iteration, args=args,
            history=tuple(peek(scope, "history")), identity=_identity(scope), result=result, error=error,
            source=site.tool.source,
        ),
    )  # fmt: skip
    record_rows(scope, site.ctx, verdict.rows)
    return verdict.value if verdict.verdict == "allow" else (verdict.reason or "denied")


async def dispatch_call(
    cfg: AgentConfig, scope: Scope, ctx: StageContext, call: dict[str, Any], iteration: int
) -> CallOutcome:
    """Take one call through every gate (see the module docstring)."""
    name, call_id = call["name"], call["id"]
    args = call.get("args") or {}
    if ctx.observed:
        ctx.emit(events.TOOL_START, {"tool_name": name, "tool_call_id": call_id, "args": args, "iteration": iteration})
    if call.get("args_error"):
        return CallOutcome(text=format_arg_issues(name, [f"the arguments are not valid JSON ({call['args_error']})"]))
    tool = cfg.tools.get(name)
    if tool is None:
        return CallOutcome(text=f"Unknown tool: {name}")
    identity = _identity(scope)
    gated = cfg.permission_checker is not None or bool(cfg.tool_middleware) or tool.check_in is not None
    # the gates see the history so far (the stage's history view, read without a copy per item)
    history = tuple(list.__iter__(peek(scope, "history"))) if gated else ()
    if cfg.permission_checker is not None:
        verdict = await evaluate_permission(
            cfg.permission_checker,
            PermissionRequest(
                tool_name=name, args=args, tool_call_id=call_id, iteration=iteration, history=history, identity=identity
            ),
        )
        if verdict.result != "allow":
            if verdict.result == "halt":
                reason = verdict.rationale or "policy"
                scope.policy_halt = {
                    "tool_name": name,
                    "tool_call_id": call_id,
                    "reason": reason,
                    "tell_llm": verdict.model_text,
                }
                ctx.stop(f"policy-halt: {reason}")
            return CallOutcome(text=verdict.model_text)
    if cfg.tool_middleware:
        info = ToolCallInfo(
            tool_name=name, tool_call_id=call_id, iteration=iteration, args=args, history=history, identity=identity,
            source=tool.source,
        )  # fmt: skip
        chain = await run_tool_chain(cfg.tool_middleware, info, ask_policy=cfg.ask_policy)
        record_rows(scope, ctx, chain.rows)
        if chain.verdict == "deny":
            return CallOutcome(text=chain.reason)
        if chain.verdict == "ask":
            position = _position(ctx, iteration)
            ask = build_middleware_ask(chain, info, run_id=run_of(ctx), position=position)
            paused = {"kind": "ask", "tool_call_id": call_id, "tool_name": name, "args": ask.args,
                      "ask_index": chain.index, "middleware": ask.middleware, "request_id": ask.id,
                      "position": position}  # fmt: skip
            return CallOutcome(
                pause={"kind": "ask", "tool_call_id": call_id, "tool_name": name, "ask": ask.to_dict()}, paused=paused
            )
        args = chain.value
    issues = validate_args(args, tool.input_schema)
    if issues:
        return CallOutcome(text=format_arg_issues(name, issues))
    if tool.check_in is not None:
        trips = await should_check_in(
            tool.check_in,
            args,
            CheckInPredicateContext(iteration, call_id, history_for_check_in(cfg.system_prompt, history)),
        )
        if trips:
            position = _position(ctx, iteration)
            request = await build_check_in_request(
                tool_name=name, tool_description=tool.description, args=args, tool_call_id=call_id,
                iteration=iteration, identity=identity, intent=peek(scope, "llm_latest_content") or None,
                system_prompt=cfg.system_prompt, history=history, evidence=cfg.check_in_evidence,
                scorer=cfg.check_in_scorer, run_id=run_of(ctx), position=position,
            )  # fmt: skip
            ctx.emit(
                events.CHECKIN_REQUEST,
                {"tool_name": name, "tool_call_id": call_id, "iteration": iteration, "request": request.to_dict()},
            )
            paused = {
                "kind": "check_in",
                "tool_call_id": call_id,
                "tool_name": name,
                "args": request.args,
                "request_id": request.id,
                "position": position,
            }
            return CallOutcome(
                pause={"kind": "check_in", "tool_call_id": call_id, "tool_name": name, "check_in": request.to_dict()},
                paused=paused,
            )
    try:
        result, _error = await _execute(CallSite(cfg, scope, ctx, tool, call, iteration), args)
    except AskHumanSignal as signal:
        position = _position(ctx, iteration)
        rid = ask_human_request_id(tool=name, tool_call_id=call_id, run_id=run_of(ctx), position=position)
        paused = {"kind": "ask_human", "tool_call_id": call_id, "tool_name": name, "args": args,
                  "request_id": rid, "position": position}  # fmt: skip
        return CallOutcome(
            pause={"kind": "ask_human", "tool_call_id": call_id, "tool_name": name, "data": signal.data}, paused=paused
        )
    return CallOutcome(text=result_text(result), executed=True)


async def answer_paused(
    cfg: AgentConfig,
    scope: Scope,
    ctx: StageContext,
    paused: dict[str, Any],
    call: dict[str, Any],
    row: dict[str, Any],
    iteration: int,
) -> tuple[str, bool]:
    """What the model reads for the call the run paused on, given the person's recorded
    answer (``row`` of ``human_decisions``), and whether the tool ran (then its
    ``tool.end`` event was emitted)."""
    tool = cfg.tools[paused["tool_name"]]
    site = CallSite(cfg, scope, ctx, tool, call, iteration)
    args = paused["args"]
    kind = paused["kind"]
    if kind == "ask_human":
        # the tool ran up to ask_human: the answer is its result (the event reports it raw)
        answer = row["answer"]
        ctx.emit(
            events.TOOL_END,
            {"tool_call_id": call["id"], "tool_name": tool.name, "result": result_text(answer), "error": False},
        )
        if not cfg.has_after_tool:
            return result_text(answer), True
        return result_text(await _after_tool(site, args, answer)), True
    approved, by, note = row["approved"] is True, str(row["by"]), row.get("note")
    if approved and "after" in row:  # the person edited the call: it must still be a valid call
        args = row["after"]
        issues = validate_args(args, tool.input_schema)
        if issues:
            return format_arg_issues(tool.name, issues), False
    if kind == "check_in":
        ctx.emit(events.CHECKIN_DECISION, {"tool_name": tool.name, "tool_call_id": call["id"], "iteration": iteration,
                                           "approved": approved, "by": by, "note": note})  # fmt: skip
        if not approved:
            return declined_result(note), False
        return await _run_after_consent(site, args)
    # a middleware ask: the person's answer is filed under the asker
    ledger_row = ask_answer_row(approved=approved, by=by, note=note, middleware=paused["middleware"],
                                tool_name=tool.name, tool_call_id=call["id"], iteration=iteration)  # fmt: skip
    record_rows(scope, ctx, [ledger_row])
    if not approved:
        return declined_result(note), False
    info = ToolCallInfo(tool_name=tool.name, tool_call_id=call["id"], iteration=iteration, args=args,
                        history=tuple(peek(scope, "history")), identity=_identity(scope),
                        source=tool.source)  # fmt: skip
    rest = await run_tool_chain(cfg.tool_middleware, info, start=paused["ask_index"] + 1, ask_policy="refuse")
    record_rows(scope, ctx, rest.rows)
    if rest.verdict != "allow":
        return rest.reason or ask_resumed_second_ask_reason(rest.middleware or "?", ""), False
    args = rest.value
    issues = validate_args(args, tool.input_schema)  # the ask paused before validation: it runs now
    if issues:
        return format_arg_issues(tool.name, issues), False
    if tool.check_in is not None:
        history = tuple(peek(scope, "history"))
        if await should_check_in(
            tool.check_in,
            args,
            CheckInPredicateContext(iteration, call["id"], history_for_check_in(cfg.system_prompt, history)),
        ):
            return TWO_GATES.format(tool=tool.name, middleware=paused["middleware"]), False
    return await _run_after_consent(site, args)


async def _run_after_consent(site: CallSite, args: dict[str, Any]) -> tuple[str, bool]:
    try:
        result, _error = await _execute(site, args)
    except AskHumanSignal:
        return (
            f"tool '{site.tool.name}' requested a pause while resuming an approved check-in, which is not supported",
            False,
        )
    return result_text(result), True


def _not_run(ctx: StageContext, call: dict[str, Any], text: str) -> None:
    """Close the ``tool.start`` of a call whose tool did not run: ``tool.end`` with what the model reads."""
    ctx.emit(events.TOOL_END, {"tool_call_id": call["id"], "tool_name": call["name"], "result": text, "error": True})


def _append_result(history: Any, call: dict[str, Any], text: str) -> None:
    history.append({"role": "tool", "content": text, "tool_call_id": call["id"], "tool_name": call["name"]})


async def _run_batch(cfg: AgentConfig, scope: Scope, ctx: StageContext, calls: Any, history: Any, start: int) -> Any:
    """Dispatch ``calls[start:]`` in order, appending each result to ``history`` (the stage's view)."""
    iteration = scope.iteration
    for index in range(start, len(calls)):
        call = calls[index]
        outcome = await dispatch_call(cfg, scope, ctx, call, iteration)
        if outcome.pause is not None:
            scope[PAUSED_KEY] = {**(outcome.paused or {}), "index": index}
            ctx.emit(events.PAUSE_REQUEST, outcome.pause)
            return outcome.pause
        if not outcome.executed:
            _not_run(ctx, call, outcome.text or "")
        _append_result(history, call, outcome.text or "")
        if ctx._traverser.stopped:  # a permission halt: the rest of the batch is not dispatched
            return None
    ctx.emit(events.ITERATION_END, {"iteration": iteration, "tool_calls": len(calls)})
    scope.iteration = iteration + 1
    return None


def make_tool_calls(cfg: AgentConfig, book: AnswerBook | None = None) -> Pausable:
    """The pausable ``tool-calls`` stage (``book``: the requests answered in this process)."""

    async def execute(scope: Scope, ctx: StageContext) -> Any:
        calls = peek(scope, "llm_latest_tool_calls")
        history = scope.history
        history.append(
            {
                "role": "assistant",
                "content": scope.llm_latest_content,
                "tool_calls": [{"id": c["id"], "name": c["name"], "args": c["args"]} for c in calls],
            }
        )
        return await _run_batch(cfg, scope, ctx, calls, history, 0)

    async def resume(scope: Scope, answer: Any, ctx: StageContext) -> Any:
        paused = dict(scope[PAUSED_KEY])
        del scope[PAUSED_KEY]
        ctx.emit(events.PAUSE_RESUME, {"tool_call_id": paused["tool_call_id"], "tool_name": paused["tool_name"],
                                       "kind": paused["kind"]})  # fmt: skip
        calls = peek(scope, "llm_latest_tool_calls")
        index = paused["index"]
        row = scope[HUMAN_DECISIONS][-1]  # the answer as recorded by record_answer: what decides
        text, executed = await answer_paused(cfg, scope, ctx, paused, calls[index], dict(row), scope.iteration)
        if not executed:
            _not_run(ctx, calls[index], text)
        history = scope.history
        _append_result(history, calls[index], text)
        data = await _run_batch(cfg, scope, ctx, calls, history, index + 1)
        return pause_again(data) if data is not None else None

    return Pausable(execute=execute, resume=resume, answer=make_record_answer(book))
