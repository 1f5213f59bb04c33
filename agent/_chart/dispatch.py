"""The ``tool-calls`` stage: dispatch a batch of tool calls through the gates.

Gate order for each call, in the model's order:
    permission → before-tool middleware → argument validation (on the transformed args)
    → check-in → execute → after-tool middleware (reverse order)
Laws:
- Transformed args are what everything downstream sees; the assistant turn in
  ``history`` keeps the model's original args — except a person's edit: an approval with
  ``args={...}`` rewrites that call's args in the assistant turn the model is sent (it reads
  the call that ran next to its result), while ``llm_latest_tool_calls`` and the
  ``human_decisions`` row (``args``/``before``) keep what the model asked. An edited
  check-in call goes through the gates again as a fresh call would — permission, the whole
  before-tool chain (its rows filed beside the first pass's: both versions in the ledger; a
  second ``ask`` is refused), argument validation — before it runs.
- A middleware ``ask``, a tripped check-in or ``ask_human`` pauses the run HERE, before
  the tool runs (ask, check-in) or inside it (ask_human); what happened so far in the
  batch is committed and the paused call is recorded under ``paused_tool_call``.
- On resume the paused call is answered, then the calls AFTER it in the same batch are
  dispatched in order — none dropped, none run twice. If one of them needs a person too,
  the stage pauses again (``pause_again``) without re-running anything.
- A check-in's request is recorded (its events, the pause, the stored question): it carries
  the call it asks about as asked, and quotes the content and history (``intent``, the
  evidence's ``read`` and ``drivers``) as the run's redaction shows them.
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
- An agent that needs no event loop has no gate that can run or await anything: its first
  pass dispatches through ``tool_run.dispatch_now`` (arguments → execute), a plain function
  that records exactly what ``dispatch_call`` would.
"""

from __future__ import annotations

import inspect
from typing import Any

import attrs

from agent._chart import events
from agent._chart.answers import make_record_answer
from agent._chart.config import AgentConfig
from agent._chart.effects_run import guarded, settle_answered
from agent._chart.paused import PAUSED_KEY, AnswerBook  # noqa: F401  (re-exported: resume_checks, tests)
from agent._chart.stages import record_rows
from agent._chart.state import (
    HISTORY,
    ITERATION,
    LLM_LATEST_CONTENT,
    LLM_LATEST_TOOL_CALLS,
    PAUSED_TOOL_CALL,
    POLICY_HALT,
    PauseData,
    PausedCall,
)
from agent._chart.tool_run import (
    CallOutcome,
    CallSite,
    argument_gate,
    asked_human,
    dispatch_now,
    identity_of,
    look_up,
    position_of,
    record_failure,
    record_sub_agent,
    run_of,
    tool_context,
    tool_end_payload,
    tool_ended,
)
from agent._tools.tools import AgentAnswer, AskHumanSignal, result_text
from flowchart import Pausable, Scope, StageContext, pause_again
from flowchart.lowlevel import append_owned, copy_json, emit_owned, peek
from governance import HUMAN_DECISIONS, ChainResult, CheckInPredicateContext, PermissionRequest, ToolCallInfo
from governance.chains import run_after_tool_chain, run_tool_chain
from governance.checkin import (
    build_check_in_request,
    build_middleware_ask,
    history_for_check_in,
    should_check_in,
)
from governance.decisions import declined_result
from governance.ledger import ask_answer_row, ask_resumed_second_ask_reason
from governance.permissions import evaluate_permission

TWO_GATES = (
    "tool '{tool}' was not executed and cannot be retried this turn: it declares its own check_in "
    "consent gate, that gate trips for these arguments, and a resumed dispatch has no second checkpoint "
    "to ask on. Answer without it, or finish. (To the agent's author: the middleware '{middleware}' and "
    "the tool's check_in ask different questions — keep one of them for this tool.)"
)


async def _execute(site: CallSite, args: dict[str, Any]) -> tuple[Any, bool]:
    """Run the tool and the after-tool chain; returns (what the model reads, error flag)."""
    tool, call = site.tool, site.call
    tool_ctx = tool_context(site.ctx, call, site.iteration, identity_of(site.scope))
    execute = (
        tool.execute
        if tool.effect == "read"
        else guarded(site.cfg.effect_ledger, site.scope, tool, site.iteration, site.ctx.run_id)
    )
    attempt = 1
    result: Any = None
    while True:
        try:
            # the tool gets its own copy: the args are the committed record of what the model asked
            result = execute(copy_json(args), tool_ctx)
            if inspect.isawaitable(result):
                result = await result
            error = False
        except AskHumanSignal:
            raise
        except Exception as exc:
            delay = record_failure(site, exc, attempt)
            if delay is not None:
                await tool.retry.wait(delay)
                attempt += 1
                continue
            result, error = str(exc) or type(exc).__name__, True
        break
    if type(result) is AgentAnswer:
        result = record_sub_agent(site.scope, call, site.iteration, result)
    tool_ended(site, result, error)
    if not site.cfg.has_after_tool:
        return result, error
    return await _after_tool(site, args, result, error), error


async def _after_tool(site: CallSite, args: dict[str, Any], result: Any, error: bool = False) -> Any:
    """What the model reads for ``result``: the after-tool chain's word (reverse order), rows filed."""
    scope = site.scope
    verdict = await run_after_tool_chain(
        site.cfg.tool_middleware,
        ToolCallInfo(
            tool_name=site.tool.name,
            tool_call_id=site.call["id"],
            iteration=site.iteration,
            args=args,
            history=tuple(peek(scope, HISTORY)),
            identity=identity_of(scope),
            result=result,
            error=error,
            source=site.tool.source,
        ),
    )
    record_rows(scope, site.ctx, verdict.rows)
    return verdict.value if verdict.verdict == "allow" else (verdict.reason or "denied")


# -- the gates, one function each, in the order of the module docstring ---------------------
# Each returns ``None`` when the call passes on (``before_tool_gate`` also the args it passes
# on), else what the call comes to: the model-visible text or a pause.


def _history(site: CallSite) -> tuple[Any, ...]:
    # the gates see the history so far (the stage's history view, read without a copy per item)
    return tuple(list.__iter__(peek(site.scope, HISTORY)))


async def permission_gate(site: CallSite, args: dict[str, Any], history: tuple[Any, ...]) -> CallOutcome | None:
    """Gate 1: the permission checker; a halt records ``policy_halt`` and stops the run."""
    cfg, scope, ctx, call_id = site.cfg, site.scope, site.ctx, site.call["id"]
    if cfg.permission_checker is None:
        return None
    verdict = await evaluate_permission(
        cfg.permission_checker,
        PermissionRequest(
            tool_name=site.tool.name,
            args=args,
            tool_call_id=call_id,
            iteration=site.iteration,
            history=history,
            identity=identity_of(scope),
        ),
    )
    if verdict.result == "allow":
        return None
    if verdict.result == "halt":
        reason = verdict.rationale or "policy"
        scope[POLICY_HALT] = {
            "tool_name": site.tool.name,
            "tool_call_id": call_id,
            "reason": reason,
            "tell_llm": verdict.model_text,
        }
        ctx.stop(f"policy-halt: {reason}")
    return CallOutcome(text=verdict.model_text)


async def before_tool_gate(
    site: CallSite, args: dict[str, Any], history: tuple[Any, ...], *, start: int = 0, ask_policy: Any = None
) -> tuple[ChainResult, ToolCallInfo]:
    """Gate 2: the before-tool middleware chain from link ``start``; its rows are filed."""
    info = ToolCallInfo(
        tool_name=site.tool.name,
        tool_call_id=site.call["id"],
        iteration=site.iteration,
        args=args,
        history=history,
        identity=identity_of(site.scope),
        source=site.tool.source,
    )
    chain = await run_tool_chain(
        site.cfg.tool_middleware, info, start=start, ask_policy=ask_policy or site.cfg.ask_policy
    )
    record_rows(site.scope, site.ctx, chain.rows)
    return chain, info


async def check_in_trips(site: CallSite, args: dict[str, Any], history: tuple[Any, ...]) -> bool:
    """Gate 4's test: does the tool's check-in trip for ``args``?"""
    if site.tool.check_in is None:
        return False
    return await should_check_in(
        site.tool.check_in,
        args,
        CheckInPredicateContext(site.iteration, site.call["id"], history_for_check_in(site.cfg.system_prompt, history)),
    )


async def check_in_gate(site: CallSite, args: dict[str, Any], history: tuple[Any, ...]) -> CallOutcome | None:
    """Gate 4: a tripped check-in pauses the call with its evidence-carrying request."""
    if not await check_in_trips(site, args, history):
        return None
    cfg, ctx, tool, call_id, iteration = site.cfg, site.ctx, site.tool, site.call["id"], site.iteration
    position = position_of(ctx, iteration)
    # the request is recorded (its events, the pause, the stored question): beyond the call it
    # asks about, it tells the content and history as the run's redaction shows them
    intent, told = (
        ctx.shown(LLM_LATEST_CONTENT, peek(site.scope, LLM_LATEST_CONTENT)),
        ctx.shown(HISTORY, list(history)),
    )
    request = await build_check_in_request(
        tool_name=tool.name,
        tool_description=tool.description,
        args=args,
        tool_call_id=call_id,
        iteration=iteration,
        identity=identity_of(site.scope),
        intent=intent or None,
        system_prompt=cfg.system_prompt,
        history=told if type(told) is not str else (),
        evidence=cfg.check_in_evidence,
        scorer=cfg.check_in_scorer,
        run_id=run_of(ctx),
        position=position,
    )
    ctx.emit(
        events.CHECKIN_REQUEST,
        {"tool_name": tool.name, "tool_call_id": call_id, "iteration": iteration, "request": request.to_dict()},
    )
    paused = PausedCall("check_in", call_id, tool.name, request.args, request.id, position)
    return CallOutcome(pause=PauseData("check_in", call_id, tool.name, request.to_dict()), paused=paused)


async def dispatch_call(
    cfg: AgentConfig, scope: Scope, ctx: StageContext, call: dict[str, Any], iteration: int
) -> CallOutcome:
    """Take one call through every gate, in the order of the module docstring."""
    found = look_up(cfg, ctx, call, iteration)
    if isinstance(found, CallOutcome):
        return found
    tool, name, call_id, args = found, call["name"], call["id"], call.get("args") or {}
    site = CallSite(cfg, scope, ctx, tool, call, iteration)
    identity_of(scope)  # read here, before the gates, as the record has always listed the stage's reads
    gated = cfg.permission_checker is not None or bool(cfg.tool_middleware) or tool.check_in is not None
    history = _history(site) if gated else ()
    refused = await permission_gate(site, args, history)
    if refused is not None:
        return refused
    if cfg.tool_middleware:
        chain, info = await before_tool_gate(site, args, history)
        if chain.verdict == "deny":
            return CallOutcome(text=chain.reason)
        if chain.verdict == "ask":
            position = position_of(ctx, iteration)
            ask = build_middleware_ask(chain, info, run_id=run_of(ctx), position=position)
            paused = PausedCall("ask", call_id, name, ask.args, ask.id, position, chain.index, ask.middleware)
            return CallOutcome(pause=PauseData("ask", call_id, name, ask.to_dict()), paused=paused)
        args = chain.value
    stopped = argument_gate(site.tool, args) or await check_in_gate(site, args, history)
    if stopped is not None:
        return stopped
    try:
        result, _error = await _execute(site, args)
    except AskHumanSignal as signal:
        return asked_human(ctx, call, args, iteration, signal)
    return CallOutcome(text=result_text(result), executed=True)


async def answer_paused(
    cfg: AgentConfig,
    scope: Scope,
    ctx: StageContext,
    paused: PausedCall,
    call: dict[str, Any],
    row: dict[str, Any],
    iteration: int,
) -> tuple[str, bool]:
    """What the model reads for the call the run paused on, given the person's recorded
    answer (``row`` of ``human_decisions``), and whether the tool ran (then its
    ``tool.end`` event was emitted). The gates after the pause are the first pass's own
    functions (``before_tool_gate`` from the link after the asker, ``argument_gate``,
    ``check_in_trips``), so a resumed call is judged as a fresh one would be."""
    tool = cfg.tools[paused.tool_name]
    site = CallSite(cfg, scope, ctx, tool, call, iteration)
    args = paused.args
    kind = paused.kind
    if kind == "ask_human":
        # the tool ran up to ask_human: the answer is its result (the event reports it raw)
        answer = row["answer"]
        if tool.effect != "read":  # a reconciliation answered (or an effect tool's own ask): its receipt
            settle_answered(cfg.effect_ledger, run_of(ctx), tool, call["id"], args, answer)
        ctx.emit(events.TOOL_END, tool_end_payload(ctx, call["id"], tool.name, result_text(answer), False))
        if not cfg.has_after_tool:
            return result_text(answer), True
        return result_text(await _after_tool(site, args, answer)), True
    approved, by, note = row["approved"] is True, str(row["by"]), row.get("note")
    if approved and "after" in row:  # the person edited the call: it must still be a valid, allowed call
        args = row["after"]
        if kind == "check_in":  # the edited call is judged as a fresh one: permission, then the whole chain
            history = _history(site)
            stopped = await permission_gate(site, args, history)
            if stopped is not None:
                return str(stopped.text), False
            if cfg.tool_middleware:
                chain, _info = await before_tool_gate(site, args, history, ask_policy="refuse")
                if chain.verdict != "allow":
                    return chain.reason or ask_resumed_second_ask_reason(chain.middleware or "?", ""), False
                args = chain.value
        refused = argument_gate(site.tool, args)
        if refused is not None:
            return str(refused.text), False
    if kind == "check_in":
        ctx.emit(
            events.CHECKIN_DECISION,
            {
                "tool_name": tool.name,
                "tool_call_id": call["id"],
                "iteration": iteration,
                "approved": approved,
                "by": by,
                "note": note,
            },
        )
        if not approved:
            return declined_result(note), False
        return await _run_after_consent(site, args)
    # a middleware ask: the person's answer is filed under the asker
    ledger_row = ask_answer_row(
        approved=approved,
        by=by,
        note=note,
        middleware=str(paused.middleware),
        tool_name=tool.name,
        tool_call_id=call["id"],
        iteration=iteration,
    )
    record_rows(scope, ctx, [ledger_row])
    if not approved:
        return declined_result(note), False
    history = tuple(peek(scope, HISTORY))
    rest, _info = await before_tool_gate(site, args, history, start=int(paused.ask_index or 0) + 1, ask_policy="refuse")
    if rest.verdict != "allow":
        return rest.reason or ask_resumed_second_ask_reason(rest.middleware or "?", ""), False
    args = rest.value
    refused = argument_gate(site.tool, args)  # the ask paused before validation: it runs now
    if refused is not None:
        return str(refused.text), False
    if await check_in_trips(site, args, history):
        return TWO_GATES.format(tool=tool.name, middleware=paused.middleware), False
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
    ctx.emit(events.TOOL_END, tool_end_payload(ctx, call["id"], call["name"], text, True))


def _append_result(history: Any, call: dict[str, Any], text: str) -> None:
    message = {"role": "tool", "content": text, "tool_call_id": call["id"], "tool_name": call["name"]}
    if type(text) is str and text.isascii():
        # handed over without a copy: a fresh dict of an ASCII string and the committed call's
        # id and name (a committed value is never changed in place), so nobody holds anything
        # inside it that could change (test_agent_loop_cost.py::test_the_history_keeps_*)
        append_owned(history, message)
    else:
        history.append(message)  # checked and copied as any write: a lone surrogate is refused here


async def _run_batch(cfg: AgentConfig, scope: Scope, ctx: StageContext, calls: Any, history: Any, start: int) -> Any:
    """Dispatch ``calls[start:]`` in order, appending each result to ``history`` (the stage's view)."""
    iteration = scope[ITERATION]
    for index in range(start, len(calls)):
        done = _settle(scope, ctx, calls, index, await dispatch_call(cfg, scope, ctx, calls[index], iteration), history)
        if done is not _GO_ON:
            return done
    return _end_batch(scope, ctx, calls, iteration)


def _run_batch_now(cfg: AgentConfig, scope: Scope, ctx: StageContext, calls: Any, history: Any, start: int) -> Any:
    """``_run_batch`` through ``dispatch_now`` (an agent that needs no event loop)."""
    iteration = scope[ITERATION]
    for index in range(start, len(calls)):
        outcome = dispatch_now(cfg, scope, ctx, calls[index], iteration)
        if type(outcome) is str:  # the tool ran: ``_settle`` of its ``CallOutcome(text, executed=True)``
            _append_result(history, calls[index], outcome)
            if ctx.stopped:
                return None
            continue
        done = _settle(scope, ctx, calls, index, outcome, history)
        if done is not _GO_ON:
            return done
    return _end_batch(scope, ctx, calls, iteration)


_GO_ON = object()


def _settle(scope: Scope, ctx: StageContext, calls: Any, index: int, outcome: CallOutcome, history: Any) -> Any:
    """Record call ``index``'s outcome: its pause, or its tool message. ``_GO_ON`` when the
    batch goes on, else what the stage returns: the pause's data, or ``None`` after a
    permission halt (the rest of the batch is not dispatched)."""
    call = calls[index]
    if outcome.pause is not None:
        assert outcome.paused is not None
        scope[PAUSED_TOOL_CALL] = attrs.evolve(outcome.paused, index=index).to_dict()
        pause = outcome.pause.to_dict()
        ctx.emit(events.PAUSE_REQUEST, pause)
        return pause
    if not outcome.executed:
        _not_run(ctx, call, outcome.text or "")
    _append_result(history, call, outcome.text or "")
    return None if ctx.stopped else _GO_ON


def _end_batch(scope: Scope, ctx: StageContext, calls: Any, iteration: int) -> None:
    """Every call of the batch answered: the iteration ends."""
    emit_owned(ctx, events.ITERATION_END, {"iteration": iteration, "tool_calls": len(calls)})
    scope[ITERATION] = iteration + 1


def make_tool_calls(cfg: AgentConfig, book: AnswerBook | None = None) -> Pausable:
    """The pausable ``tool-calls`` stage (``book``: the requests answered in this process)."""

    async def execute(scope: Scope, ctx: StageContext) -> Any:
        calls, history = _open_batch(scope)
        return await _run_batch(cfg, scope, ctx, calls, history, 0)

    def execute_now(scope: Scope, ctx: StageContext) -> Any:
        calls, history = _open_batch(scope)
        return _run_batch_now(cfg, scope, ctx, calls, history, 0)

    async def resume(scope: Scope, answer: Any, ctx: StageContext) -> Any:
        paused = PausedCall.from_dict(copy_json(scope[PAUSED_TOOL_CALL]))  # the scope's view, as plain JSON
        del scope[PAUSED_TOOL_CALL]
        ctx.emit(
            events.PAUSE_RESUME,
            {"tool_call_id": paused.tool_call_id, "tool_name": paused.tool_name, "kind": paused.kind},
        )
        calls = peek(scope, LLM_LATEST_TOOL_CALLS)
        index = int(paused.index or 0)
        row = scope[HUMAN_DECISIONS][-1]  # the answer as recorded by record_answer: what decides
        text, executed = await answer_paused(cfg, scope, ctx, paused, calls[index], dict(row), scope[ITERATION])
        if not executed:
            _not_run(ctx, calls[index], text)
        history = scope[HISTORY]
        if paused.kind != "ask_human" and row.get("approved") is True and "after" in row:
            _show_edited_call(history, paused.tool_call_id, row["after"])
        _append_result(history, calls[index], text)
        data = await _run_batch(cfg, scope, ctx, calls, history, index + 1)
        return pause_again(data) if data is not None else None

    # with nothing to await (the agent needs no event loop) the first pass is a plain function
    first = execute if cfg.needs_event_loop else execute_now
    return Pausable(execute=first, resume=resume, answer=make_record_answer(book))


def _show_edited_call(history: Any, call_id: str, args: Any) -> None:
    """The assistant turn holding call ``call_id`` now shows the person's edited ``args``."""
    for position in range(len(history) - 1, -1, -1):
        message = history[position]
        calls = message.get("tool_calls") if message.get("role") == "assistant" else None
        if calls and any(call.get("id") == call_id for call in calls):
            turn = copy_json(message)
            for call in turn["tool_calls"]:
                if call["id"] == call_id:
                    call["args"] = copy_json(args)
            history[position] = turn
            return


def _open_batch(scope: Scope) -> tuple[Any, Any]:
    """The calls to dispatch and the history view, the model's assistant turn appended."""
    calls = peek(scope, LLM_LATEST_TOOL_CALLS)
    history = scope[HISTORY]
    content = scope[LLM_LATEST_CONTENT]
    message = {
        "role": "assistant",
        "content": content,
        "tool_calls": [{"id": c["id"], "name": c["name"], "args": c["args"]} for c in calls],
    }
    if type(content) is str:
        # handed over without a copy: the list and its dicts are built here, the content is a
        # committed string and each call's id, name and args are the committed call's own (``calls``
        # is the committed list, read without a view; a committed value is never changed in place,
        # and the tool is given its own copy of the args: tool_run.run_tool_now)
        append_owned(history, message)
    else:
        history.append(message)
    return calls, history
