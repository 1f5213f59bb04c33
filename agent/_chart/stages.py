"""The agent's stages (all but tool-calls): seed, call-llm, route, wrap-up, final.

Laws:
- ``seed`` runs the INPUT message chain before anything is written: the model, the
  history and every later commit see the transformed text; a deny records why and stops
  the run before any provider call.
- On a conversation turn, ``seed`` puts the earlier turns' messages before the user's
  and writes ``conversation`` (their provenance) in the same commit (``agent._run.conversations``).
- ``call-llm`` sends exactly what ``history`` holds (plus the system prompt and the tool
  schemas; no tools once a wrap-up was asked) and writes the reply; it never appends to
  ``history`` (``tool-calls`` does). Retries the provider made are appended to
  ``llm_retries`` (``{"iteration", "attempt", "reason", "delay"}``); no retry, no key.
  Usage the provider did not report is unknown, not 0: the call is left out of
  ``total_input_tokens``/``total_output_tokens`` and ``usage_not_reported`` says which
  iterations' calls those totals miss ("usage not reported for iteration 2"); every call
  reported, no key.
- A streaming agent streams every call but a tool-bearing one to a provider that cannot stream
  it (``Capabilities.stream_tools`` false, or a 200 with an empty stream): that call is made
  whole, its text one ``llm.token``, and ``llm_not_streamed`` gets ``{"iteration", "reason"}``;
  nothing made whole, no key. With an output schema, the form the shape is asked in, and any
  form a server refused, is on the model-call commit (``output_schema_form``, agent._chart.structured).
- ``route`` decides with recorded evidence: ``tool-calls`` while calls are pending and
  budget remains; once the budget is spent with calls pending, ``wrap-up`` once (when
  enabled); otherwise ``final``. On ``final`` it runs the OUTPUT message chain, whose
  rows and transformed answer commit in the main state (the decider commits first).
- Each model call's usage and cost are on its commit (``llm_cost``: agent._chart.spend; not
  with ``pricing=False``); with ``budget=`` the budget is checked
  BEFORE the call (a ``pause`` budget makes ``call-llm`` a two-phase stage).
- Optional features write nothing when not configured ("absent means byte-identical").
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import attrs

from agent._chart import events, structured
from agent._chart.config import STATE_INPUT_IDENTITY, STATE_INPUT_MESSAGE, WRAP_UP_INSTRUCTION, AgentConfig
from agent._chart.context import default_namespace, plan_context, with_context
from agent._chart.conversation_turns import LOADED_ENV, seed_parts
from agent._chart.event_views import shown_entry
from agent._chart.handoff import wants_handoff
from agent._chart.spend import budget_gate, cost_recorder, raise_budget
from agent._chart.state import (
    BUDGET_STATE,
    CONTEXT_DROPPED,
    CONTEXT_INJECTED,
    CONVERSATION,
    CONVERSATION_INPUT,
    FINAL_CONTENT,
    HISTORY,
    IDENTITY,
    ITERATION,
    LLM_LATEST_CONTENT,
    LLM_LATEST_TOOL_CALLS,
    LLM_MODEL,
    LLM_NOT_STREAMED,
    LLM_OFFER,
    LLM_RETRIES,
    MAX_ITERATIONS,
    OUTPUT_SCHEMA_FORM,
    SYSTEM_PROMPT,
    TOTAL_INPUT_TOKENS,
    TOTAL_OUTPUT_TOKENS,
    USAGE_NOT_REPORTED,
    USER_MESSAGE,
    WRAP_UP_ASKED,
)
from agent.providers.types import LLMResponse
from flowchart import Decision, Pausable, Scope, StageContext, decide, pause_again
from flowchart.lowlevel import (
    NotJsonSafe,
    copy_json,
    drive,
    emit_owned,
    peek,
    raw_read,
    run_coroutine,
    set_owned,
    thaw,
)
from governance import LEDGER_KEY, MessageInfo
from governance.chains import run_message_chain
from governance.ledger import event_payload

_AGENT_STATE_DEFAULTS: tuple[tuple[str, Any], ...] = (
    (LLM_LATEST_CONTENT, ""),
    (LLM_LATEST_TOOL_CALLS, []),
    (FINAL_CONTENT, ""),
    (TOTAL_INPUT_TOKENS, 0),
    (TOTAL_OUTPUT_TOKENS, 0),
)


def record_rows(scope: Scope, ctx: StageContext, rows: list[dict[str, Any]]) -> None:
    """Append ledger rows to ``middleware_decisions`` and emit one event per row."""
    if not rows:
        return
    if LEDGER_KEY in scope:
        scope[LEDGER_KEY].extend(rows)
    else:
        scope[LEDGER_KEY] = rows
    for row in rows:
        ctx.emit(events.MIDDLEWARE_DECISION, shown_entry(ctx, LEDGER_KEY, event_payload(row)))


def deny_message(scope: Scope, ctx: StageContext, phase: str, reason: str, middleware: str | None) -> None:
    """Record a message denial and stop the run (nothing after this stage runs)."""
    scope.message_denied_reason = reason
    scope.message_denied_phase = phase
    scope.message_denied_by = middleware or ""
    ctx.stop(f"message denied at {phase}: {reason}")


def make_seed(cfg: AgentConfig) -> Any:
    """The ``seed`` stage: input chain, then the initial agent state (a plain function
    when there is no message middleware: nothing to await)."""

    def seed(scope: Scope, ctx: StageContext) -> None:
        message: str = ctx.args[STATE_INPUT_MESSAGE]
        seed_state(cfg, scope, ctx, message, thaw(ctx.args.get(STATE_INPUT_IDENTITY)), None)

    async def governed_seed(scope: Scope, ctx: StageContext) -> None:
        message: str = ctx.args[STATE_INPUT_MESSAGE]
        identity = thaw(ctx.args.get(STATE_INPUT_IDENTITY))  # ctx.args is frozen; state needs plain JSON
        content = message
        denied = None
        verdict = await run_message_chain(
            cfg.message_middleware, MessageInfo(phase="input", content=message, history=(), identity=identity)
        )
        record_rows(scope, ctx, verdict.rows)
        if isinstance(verdict.value, str):
            content = verdict.value
        if verdict.verdict != "allow":
            denied = verdict
        seed_state(cfg, scope, ctx, content, identity, denied)

    return governed_seed if cfg.message_middleware else seed


def seed_state(cfg: AgentConfig, scope: Scope, ctx: StageContext, content: str, identity: Any, denied: Any) -> None:
    """The seed's writes once the input chain (if any) has run: the initial agent state."""
    scope.user_message = content
    turn = ctx.args.get(CONVERSATION_INPUT)  # a conversation turn: the earlier turns' messages come first
    loaded, meta, owned = seed_parts(turn, ctx.env.get(LOADED_ENV)) if turn is not None else ([], None, False)
    history = [*loaded, {"role": "user", "content": content}]
    if loaded and content.isascii():
        # the loaded messages are fresh dicts of committed or decoded values (``seed_parts`` checks
        # and copies each), the new text plain: handed over as built, not copied again
        set_owned(scope, HISTORY, history)
    else:
        scope.history = history
    scope.iteration = 1
    scope.max_iterations = cfg.max_iterations
    for key, value in _AGENT_STATE_DEFAULTS:
        scope[key] = value
    if identity is not None:
        scope.identity = identity
    if cfg.system_prompt:
        # what the model is told is part of the record (``agent why`` quotes it)
        scope.system_prompt = cfg.system_prompt
    if meta is not None and owned:  # built for this turn by the agent that planned it: no copy
        set_owned(scope, CONVERSATION, meta)  # where the loaded messages came from, and what was left out
    elif meta is not None:
        scope[CONVERSATION] = meta
    if ctx.listens(events.TURN_START):
        ctx.emit(events.TURN_START, {USER_MESSAGE: ctx.shown(USER_MESSAGE, content)})
    if denied is not None:
        deny_message(scope, ctx, "input", denied.reason or "denied", denied.middleware)


def _tool_call_dict(call: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "name": call.name, "args": call.args}
    if getattr(call, "args_error", None):
        out["args_error"] = call.args_error
    return out


def _owned_calls(tool_calls: Any) -> list[dict[str, Any]] | None:
    """The reply's calls as the record keeps them, built here with each call's args copied (the
    provider's own object: the record must not follow it), so the write need not copy them again
    (``set_owned``); ``None`` when one is not plain (a text that is not ASCII, args that are not
    JSON-safe): the ordinary write then checks and copies, and refuses as it always did."""
    out = []
    for call in tool_calls:
        call_id, name = call.id, call.name
        if not (type(call_id) is str and call_id.isascii() and type(name) is str and name.isascii()):
            return None
        try:
            args = copy_json(call.args)
        except NotJsonSafe:
            return None
        made: dict[str, Any] = {"id": call_id, "name": name, "args": args}
        error = getattr(call, "args_error", None)
        if error:
            if not (type(error) is str and error.isascii()):
                return None
            made["args_error"] = error
        out.append(made)
    return out


def make_call_llm(cfg: AgentConfig) -> Any:
    """The ``call-llm`` stage: one provider call, usage added to the totals (driven to its end
    without a loop when the agent needs none: the provider answers synchronously)."""
    from agent.providers.errors import ProviderError
    from agent.providers.types import LLMRequest, offer_of

    output_schema = cfg.output.request if cfg.output is not None else None
    forms = cfg.output_forms  # the forms the shape may be asked in, best first; () without a schema
    offered = cfg.tool_schemas  # built once: a request never mutates its lists (LLMRequest)
    system_prompt, model, temperature, max_tokens = cfg.system_prompt, cfg.model, cfg.temperature, cfg.max_tokens
    has_context = cfg.has_context
    namespace_of = cfg.memory_namespace or default_namespace
    offers: dict[tuple[int, int, str], tuple[Any, Any, dict[str, Any]]] = {}

    def context_for(scope: Scope) -> list[dict[str, Any]]:
        """Decide and record what this call is sent besides history (``agent._chart.context``)."""
        sent, dropped = plan_context(cfg.injections, cfg.memory, cfg.recall, namespace_of, scope)
        # what the previous call was sent is not written again (the commit would change nothing):
        # compared unrecorded, so an unchanged context costs no write and no read in the record
        if raw_read(scope, CONTEXT_INJECTED) != sent:
            scope[CONTEXT_INJECTED] = sent
        if (dropped or raw_read(scope, CONTEXT_DROPPED) is not None) and raw_read(scope, CONTEXT_DROPPED) != dropped:
            scope[CONTEXT_DROPPED] = dropped
        return sent

    def told(request: Any, rows: list[dict[str, Any]] | None) -> Any:
        """``request`` with the context rows in its system slot (as it is when there are none)."""
        if not rows:
            return request
        return attrs.evolve(request, system_prompt=with_context(request.system_prompt, rows))

    def request_for(scope: Scope, ctx: StageContext) -> tuple[int, Any]:
        iteration = scope[ITERATION]  # item reads: an attribute read first fails a slot lookup (≈ 3× the cost)
        wrapped_up = WRAP_UP_ASKED in scope
        # (system_prompt, messages, tools, model, temperature, max_tokens, output_schema), by position: a
        # keyword call costs attrs' __init__ a fifth more. Committed values are never mutated in
        # place, so the request shares the history list.
        request = LLMRequest(
            system_prompt,
            peek(scope, HISTORY),
            [] if wrapped_up else offered,
            model,
            temperature,
            max_tokens,
            output_schema,
        )
        if forms:  # the form the run has settled on, else the provider's best
            request = shaped(request, scope[OUTPUT_SCHEMA_FORM]["form"] if OUTPUT_SCHEMA_FORM in scope else forms[0])
        if has_context:
            request = told(request, context_for(scope))
        # what the call offers besides the messages (tools, answer shape), written when it differs
        # from the last call's: on the first call, and again only when a wrap-up drops the tools
        # (made once per offer; inline: the agent layer's per-call budget, test_agent_loop_cost)
        tools, schema = request.tools, request.output_schema
        held = offers.get((id(tools), id(schema), request.output_form))
        if held is None or held[0] is not tools or held[1] is not schema:
            held = offers[(id(tools), id(schema), request.output_form)] = (tools, schema, offer_of(request))
        if raw_read(scope, LLM_OFFER) != held[2]:
            set_owned(scope, LLM_OFFER, {"tools": list(held[2]["tools"]), "digest": held[2]["digest"]})
        # event payloads are built only when somebody takes that event (a stream's ``modes=``
        # leaves names out), from scalars: handed over without a copy (emit_owned)
        if ctx.listens(events.ITERATION_START):
            emit_owned(ctx, events.ITERATION_START, {"iteration": iteration})
        if ctx.listens(events.LLM_START):
            emit_owned(
                ctx,
                events.LLM_START,
                {
                    "iteration": iteration,
                    "model": cfg.model,
                    "messages": len(request.messages),
                    "tools": len(request.tools),
                },
            )
        return iteration, request

    def record_reply(scope: Scope, ctx: StageContext, iteration: int, response: Any) -> None:
        usage = response.usage
        if usage is not None:
            scope.total_input_tokens = scope[TOTAL_INPUT_TOKENS] + usage.input_tokens
            scope.total_output_tokens = scope[TOTAL_OUTPUT_TOKENS] + usage.output_tokens
        else:
            record_unreported_usage(scope, iteration)
        scope.llm_latest_content = response.content
        if raw_read(scope, LLM_MODEL) is None:  # which model answers: recorded once per run
            scope.llm_model = cfg.model_record
        calls = _owned_calls(response.tool_calls)
        if calls is not None:  # fresh dicts of ASCII strings and copied args: handed over as they are
            set_owned(scope, LLM_LATEST_TOOL_CALLS, calls)
        else:
            scope.llm_latest_tool_calls = [_tool_call_dict(c) for c in response.tool_calls]
        if getattr(response, "retries", None):
            record_retries(scope, iteration, response.retries)
        if ctx.listens(events.LLM_END):
            payload: dict[str, Any] = {
                "iteration": iteration,
                "content": ctx.shown(LLM_LATEST_CONTENT, response.content),
                "tool_calls": len(response.tool_calls),
            }
            if usage is not None:  # unknown usage is absent, never a made-up 0
                payload["usage"] = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
            payload["finish_reason"] = response.finish_reason
            emit_owned(ctx, events.LLM_END, payload)

    def shaped(request: Any, form: str, rows: list[dict[str, Any]] | None = None) -> Any:
        """``request`` asking for the answer's shape in ``form`` (see ``agent._chart.structured``);
        ``rows``: the context the call was decided to be sent, kept in the new prompt."""
        prompt = system_prompt
        if forms[0] == "json_schema" and form != "json_schema":  # the instruction joins the prompt
            prompt = structured.system_prompt(cfg.output, system_prompt, form)  # type: ignore[arg-type]
        native = output_schema if form != "instruction" else None
        return told(attrs.evolve(request, system_prompt=prompt, output_schema=native, output_form=form), rows)

    def next_form(request: Any, exc: Exception) -> str | None:
        """The form to ask in after the server refused ``request``'s form, or None (not a refusal)."""
        form = request.output_form
        if not forms or form not in forms or not structured.refused_form(exc, form):
            return None
        return forms[forms.index(form) + 1]

    def asked_again(request: Any, exc: ProviderError, refusals: list[dict[str, Any]], scope_rows: Any = None) -> Any:
        """The request in the next form after ``exc`` refused ``request``'s (the refusal noted in
        ``refusals``), or ``None`` when ``exc`` is no refusal of a form (it goes on up)."""
        form = next_form(request, exc)
        if form is None:
            return None
        refusals.append(structured.refusal_row(exc, request.output_form))
        rows = thaw(peek(scope_rows, CONTEXT_INJECTED)) if has_context and scope_rows is not None else None
        return shaped(request, form, rows)

    def record_form(scope: Scope, request: Any, refusals: list[dict[str, Any]]) -> None:
        """The form on the first model-call commit; a fallback's refusals (and new prompt) on its own."""
        if refusals:
            earlier = thaw(peek(scope, OUTPUT_SCHEMA_FORM)) if OUTPUT_SCHEMA_FORM in scope else {}
            rows = [*earlier.get("refused", []), *refusals]
            scope[OUTPUT_SCHEMA_FORM] = {"form": request.output_form, "refused": rows}
            # the prompt without the call's context (that is recorded in ``context_injected``)
            prompt = shaped(request, request.output_form).system_prompt if has_context else request.system_prompt
            if prompt != peek(scope, SYSTEM_PROMPT, None):
                scope[SYSTEM_PROMPT] = prompt  # what the model is told is part of the record
        elif OUTPUT_SCHEMA_FORM not in scope:
            scope[OUTPUT_SCHEMA_FORM] = {"form": request.output_form}

    budget = cfg.budget
    record_cost = cost_recorder(cfg) if cfg.prices is not None else None  # prices made figures once

    async def call_llm(scope: Scope, ctx: StageContext) -> Any:
        if budget is not None:  # checked before the call (agent._chart.spend)
            gate, data = budget_gate(cfg, scope, ctx, scope[ITERATION])
            if gate != "go":
                return data
        iteration, request = request_for(scope, ctx)
        refusals: list[dict[str, Any]] = []
        not_streamed: list[dict[str, Any]] = []
        while True:
            try:
                response = await _complete(cfg, request, ctx, iteration, not_streamed)
                break
            except ProviderError as exc:
                again = asked_again(request, exc, refusals, scope)
                if again is None:
                    raise
            # asked again outside the ``except``: a second failure chains nothing of the first
            request = again
        if forms:
            record_form(scope, request, refusals)
        if not_streamed:  # the key exists only once a streaming agent made a call whole
            if LLM_NOT_STREAMED in scope:
                scope[LLM_NOT_STREAMED].extend(not_streamed)
            else:
                scope[LLM_NOT_STREAMED] = not_streamed
        record_reply(scope, ctx, iteration, response)
        if record_cost is not None:
            record_cost(scope, iteration, response)
        return None

    # one model-call stage: an agent that needs no event loop drives it to its end (``chart._sync``);
    # its twin for that case bought 1.4 % of W6 and went (docs/performance.md, "Round seven")
    return call_llm


def make_budget_call_llm(cfg: AgentConfig) -> Pausable:
    """``call-llm`` of an agent whose budget pauses: a two-phase stage. Its first half pauses
    before a call that would go past the budget; the answer (``{"approved": true, "usd": ...}``)
    is recorded in ``budget`` in a commit of its own, then the resumed half makes the call —
    nothing before it runs again — or, declined, ends the run (``BudgetExceededError``)."""
    call = make_call_llm(cfg)

    def record(scope: Scope, answer: Any, _ctx: StageContext) -> None:
        raise_budget(cfg, scope, thaw(answer))

    async def resume(scope: Scope, _answer: Any, ctx: StageContext) -> Any:
        decisions = peek(scope, BUDGET_STATE)["decisions"]
        if decisions[-1]["decision"] == "declined":
            ctx.stop("budget exceeded: the person declined to raise it")
            return None
        result = call(scope, ctx)
        if inspect.isawaitable(result):
            result = await result
        return pause_again(result) if result is not None else None

    return Pausable(execute=call, resume=resume, answer=record)


_RULE_SETS_KEPT = 64  # route's rule sets kept per agent (one per pending-call count seen)
#: the result types a stage run without an event loop need not test for an awaitable
NEVER_AWAITABLE = frozenset((str, int, float, bool, dict, list, tuple, type(None)))


async def _awaited(value: Any) -> Any:
    return await value


def settled(value: Any) -> Any:
    """``value``, or what it resolves to when it is an awaitable that never suspends (a stage
    run without an event loop awaits it in place, as a coroutine stage driven to its end did)."""
    if type(value) in NEVER_AWAITABLE or not inspect.isawaitable(value):
        return value
    return drive(_awaited(value))


def awaited_now(value: Any) -> Any:
    """``value``, or what it resolves to when it is an awaitable: a plain ``def complete`` may
    return one that does real I/O (a wrapper around an HTTP provider), so it is awaited in a fresh
    event loop — in a helper thread when this thread already runs one (``run_coroutine``) — never
    driven without a loop."""
    if not inspect.isawaitable(value):
        return value
    return run_coroutine(lambda _loop: _awaited(value), True)


def record_unreported_usage(scope: Scope, iteration: int) -> None:
    """Say, in the state (so in the commit log and the narrative), which calls the totals miss."""
    numbers = [*re.findall(r"\d+", peek(scope, USAGE_NOT_REPORTED, "")), str(iteration)]
    word = "iteration" if len(numbers) == 1 else "iterations"
    scope[USAGE_NOT_REPORTED] = f"usage not reported for {word} {', '.join(numbers)}"


def record_retries(scope: Scope, iteration: int, retries: Any) -> None:
    """Append a call's provider retries to ``llm_retries`` (the key exists only once a retry happened)."""
    rows = [{"iteration": iteration, **record.to_dict()} for record in retries]
    if LLM_RETRIES in scope:
        scope.llm_retries.extend(rows)
    else:
        scope.llm_retries = rows


async def _complete(
    cfg: AgentConfig, request: Any, ctx: StageContext, iteration: int, not_streamed: list[dict[str, Any]]
) -> Any:
    """One model call: streamed when the agent streams, except a tool-bearing request to a provider
    that cannot stream one (``Capabilities.stream_tools`` false, or an empty stream): that call is
    made whole, its text one ``llm.token``, and why is appended to ``not_streamed``."""
    provider = cfg.provider
    stream = getattr(provider, "stream", None)
    if cfg.stream and callable(stream):
        from agent.providers.errors import EmptyStreamError
        from agent.providers.types import capabilities_of

        if request.tools and not capabilities_of(provider).stream_tools:
            reason = "the provider declares stream_tools=False: a request offering tools is not streamed"
            return await _made_whole(provider, request, ctx, iteration, not_streamed, reason)
        try:
            return await _streamed(provider, stream, request, ctx, iteration)
        except EmptyStreamError:
            if not request.tools:
                raise
        # answered outside the ``except``: a failure of the whole call chains nothing of the stream's
        reason = (
            "the server answered the streamed request offering tools with an empty stream, "
            "so the call was made again without streaming"
        )
        return await _made_whole(provider, request, ctx, iteration, not_streamed, reason)
    result = provider.complete(request)
    if type(result) is not LLMResponse and inspect.isawaitable(result):  # no ABC check of a reply
        # a plain ``def complete`` that returned an awaitable may do real I/O: without a loop
        # of the agent's own it is awaited in a fresh one (``awaited_now``), never driven
        result = await result if cfg.needs_event_loop else awaited_now(result)
    return result


async def _streamed(provider: Any, stream: Any, request: Any, ctx: StageContext, iteration: int) -> Any:
    final = None
    index = 0
    async for item in stream(request):
        if isinstance(item, LLMResponse):
            final = item
        elif getattr(item, "text", ""):
            ctx.emit(
                events.LLM_TOKEN,
                {"iteration": iteration, "index": index, "text": ctx.shown(LLM_LATEST_CONTENT, item.text)},
            )
            index += 1
    if final is None:
        raise RuntimeError(f"provider '{getattr(provider, 'name', provider)}' streamed no final response")
    return final


async def _made_whole(
    provider: Any, request: Any, ctx: StageContext, iteration: int, not_streamed: list[dict[str, Any]], reason: str
) -> Any:
    """A call of a streaming agent made without streaming: its text arrives as one token."""
    result = provider.complete(request)
    if inspect.isawaitable(result):
        result = await result
    not_streamed.append({"iteration": iteration, "reason": reason})
    if result.content:
        text = ctx.shown(LLM_LATEST_CONTENT, result.content)
        ctx.emit(events.LLM_TOKEN, {"iteration": iteration, "index": 0, "text": text})
    return result


def make_route(cfg: AgentConfig) -> Any:
    """The ``route`` decider (see the module laws); a plain function when there is no message
    middleware (the OUTPUT chain is its only await)."""
    wrap_up = bool(cfg.wrap_up and cfg.tools)
    retry = structured.retry_rule(cfg.output) if cfg.output is not None else None

    made: dict[int, tuple[list[dict[str, Any]], dict[str, str]]] = {}  # the rules by pending count

    handoff = wants_handoff(cfg) if cfg.handoffs else None

    def rules_for(pending: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
        rules: list[dict[str, Any]] = []
        if handoff is not None and pending:
            rules.append({"when": handoff, "then": "handoff", "label": "LLM asked to hand the conversation over"})
        rules += [
            {
                "when": lambda s: pending > 0 and s[ITERATION] < s[MAX_ITERATIONS],
                "then": "tool-calls",
                "label": f"LLM requested {pending} tool call(s)",
            }
        ]
        if wrap_up:
            rules.append(
                {
                    # reads the budget it judges, so the narrative shows that evidence
                    "when": lambda s: pending > 0 and s[ITERATION] >= s[MAX_ITERATIONS] and WRAP_UP_ASKED not in s,
                    "then": "wrap-up",
                    "label": "max_iterations reached with tool calls pending — asking for a wrap-up",
                }
            )
        if retry is not None:
            rules.append(retry)
        fallback = "max_iterations reached — forcing final" if pending else "LLM produced no tool calls — final answer"
        return rules, {"branch": "final", "label": fallback}

    def route(scope: Scope, ctx: StageContext) -> Decision:
        pending = len(peek(scope, LLM_LATEST_TOOL_CALLS))
        # the rules depend on the pending count alone and decide() only reads them: made once per count
        found = made.get(pending)
        if found is None:
            found = rules_for(pending)
            if len(made) < _RULE_SETS_KEPT:
                made[pending] = found
        rules, default = found
        decision = decide(scope, rules, default)
        if ctx.listens(events.ROUTE_DECIDED):
            # the rules above made the recorded reads; this one only labels the event
            matched = [r["label"] for r in decision.evidence["rules"] if r["matched"]]
            rationale = matched[0] if matched else default["label"]
            iteration = raw_read(scope, ITERATION)
            payload = {"iteration": iteration, "chosen": decision.branch, "rationale": rationale}
            emit_owned(ctx, events.ROUTE_DECIDED, payload)
        return decision

    async def governed_route(scope: Scope, ctx: StageContext) -> Decision:
        decision = route(scope, ctx)
        if decision.branch == "final":
            await _output_chain(cfg, scope, ctx)
        return decision

    return governed_route if cfg.message_middleware else route


async def _output_chain(cfg: AgentConfig, scope: Scope, ctx: StageContext) -> None:
    verdict = await run_message_chain(
        cfg.message_middleware,
        MessageInfo(
            phase="output",
            content=scope.llm_latest_content,
            history=tuple(peek(scope, HISTORY)),
            identity=peek(scope, IDENTITY),
            iteration=scope.iteration,
        ),
    )
    record_rows(scope, ctx, verdict.rows)
    if verdict.verdict == "allow":
        if isinstance(verdict.value, str):
            scope.llm_latest_content = verdict.value
        return
    deny_message(scope, ctx, "output", verdict.reason or "denied", verdict.middleware)


def make_wrap_up() -> Any:
    """The ``wrap-up`` branch: ask once for a final answer from what is known."""

    def wrap_up(scope: Scope, ctx: StageContext) -> None:
        scope.history.append({"role": "user", "content": WRAP_UP_INSTRUCTION})
        scope.wrap_up_asked = True
        iteration = scope[ITERATION]
        emit_owned(ctx, events.ITERATION_END, {"iteration": iteration, "tool_calls": 0})
        scope.iteration = iteration + 1

    return wrap_up


def prepare_final(scope: Scope, ctx: StageContext) -> None:
    """``final/prepare-final``: the answer is the latest model content."""
    scope.final_content = scope[LLM_LATEST_CONTENT]
    # the reads below are the stage's record (whether or not anybody takes the event)
    shown = ctx.shown  # what the state holds, as the run's redaction lets events show it
    payload = {
        FINAL_CONTENT: shown(FINAL_CONTENT, scope[FINAL_CONTENT]),
        "iterations": shown(ITERATION, scope[ITERATION]),
        TOTAL_INPUT_TOKENS: shown(TOTAL_INPUT_TOKENS, scope[TOTAL_INPUT_TOKENS]),
        TOTAL_OUTPUT_TOKENS: shown(TOTAL_OUTPUT_TOKENS, scope[TOTAL_OUTPUT_TOKENS]),
    }
    if USAGE_NOT_REPORTED in scope:  # the totals above miss these calls
        payload[USAGE_NOT_REPORTED] = shown(USAGE_NOT_REPORTED, scope[USAGE_NOT_REPORTED])
    ctx.emit(events.TURN_END, payload)


def break_final(scope: Scope, ctx: StageContext) -> str:
    """``final/break-final``: end the run with the answer as its output."""
    ctx.stop()
    return str(scope[FINAL_CONTENT])


def final_input(parent: Any) -> dict[str, Any]:
    """What the final subflow starts from: the answer and the totals (and what they miss)."""
    seeded = {
        LLM_LATEST_CONTENT: parent[LLM_LATEST_CONTENT],
        ITERATION: parent[ITERATION],
        TOTAL_INPUT_TOKENS: parent[TOTAL_INPUT_TOKENS],
        TOTAL_OUTPUT_TOKENS: parent[TOTAL_OUTPUT_TOKENS],
    }
    if USAGE_NOT_REPORTED in parent:
        seeded[USAGE_NOT_REPORTED] = parent[USAGE_NOT_REPORTED]
    return seeded


def final_output(sub_state: Any, _parent: Any) -> dict[str, Any]:
    """What the final subflow gives back: only ``final_content``."""
    return {FINAL_CONTENT: sub_state[FINAL_CONTENT]}
