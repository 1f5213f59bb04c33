"""Durable agent runs: ``Agent.create(..., store=)`` records every run in a run store.

Laws:
- Every ``agent.run`` with a store creates a stored run (``kind = "agent"``) and
  advances it one segment: to its pause (``Paused`` carrying ``run_id``) or its end
  (the final answer). The segment's commits, narrative, checkpoint and question land
  in one atomic store commit (see ``flowchart.store``).
- ``resume_run(run_id, decision)`` works in ANY process on an identically built agent:
  it loads the pause from the store, checks the decision against the request ids the
  STORE says were answered, then records the answer — the database's
  ``UNIQUE(run_id, request_id)`` makes a second answer from any process raise
  ``ResumeDecisionError`` — and only then resumes.
- A stored run's ``question`` reads back as the typed pending request (``CheckInRequest``
  or ``MiddlewareAsk``; an ``ask_human`` pause keeps its pause data), so a process holding
  only a run id can build a decision: ``check_in_approved(request=store.get(id).question, ...)``.
- Tools see the stored run's id (env ``agent_run_id``), so ``ctx.idempotency_key`` is
  ``<run_id>:<tool_call_id>`` in every process that (re)runs the call.
- A run that ends in a refusal (``MessageDeniedError``, ``PolicyHaltError``) or a stage
  error (a provider down, a tool-calls bug) is recorded ``failed`` with the commits made
  before it, the narrative so far and the error with the stage that raised, then the
  error is raised as before.
- The agent's redaction is stored with each run, so ``agent runs show`` / ``list --json``
  / ``trace`` hide what the run hid without being given the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from agent._chart.config import STATE_INPUT_IDENTITY, STATE_INPUT_MESSAGE, STORE_RUN_ENV
from agent._chart.conversation_turns import LOADED_ENV, loaded_from_store
from agent._chart.handoff import held_pause
from agent._chart.paused import Paused, check_answer, paused_from
from agent._chart.state import CONVERSATION_INPUT, FINAL_CONTENT
from agent._run.resume_checks import check_resumable
from flowchart import RunResult
from flowchart.lowlevel import drive, run_coroutine, validated_input
from flowchart.store import AlreadyAnsweredError, RunRecord, RunStore
from flowchart.store.runs import RefusedOutcome, aadvance, new_run_id
from governance import CheckInDecision, ResumeDecisionError

if TYPE_CHECKING:
    from agent._run.agent import Agent
    from agent._tools.tools import Tool

RUN_ID_ENV = STORE_RUN_ENV
AGENT_RUN_KIND = "agent"
"""The kind of an agent's stored runs: their ``RunRecord.question`` is the typed pending
request (``CheckInRequest`` or ``MiddlewareAsk``), read back by ``pending_request`` — named
for every store in ``pyproject.toml`` (entry point ``flowchart.question_readers``: ``agent``)."""


def _store(agent: Agent) -> Any:
    if agent.store is None:
        raise RuntimeError("this agent has no run store: build it with Agent.create(..., store=SqliteStore(path))")
    return agent.store


def make_input(message: Any, identity: Any = None) -> dict[str, Any]:
    """The run input of a turn on ``message`` (refusing a blank message)."""
    if not isinstance(message, str) or not message.strip():
        raise ValueError("agent.run(message): the message must be a non-empty string")
    run_input: dict[str, Any] = {STATE_INPUT_MESSAGE: message}
    if identity is not None:
        run_input[STATE_INPUT_IDENTITY] = identity
    return run_input


def advance_now(agent: Agent, run_id: str) -> str | Paused:
    """``advance_run`` from synchronous code (a worker): drives the coroutine to the end."""
    if agent.needs_event_loop:
        return run_coroutine(lambda _c: advance_run(agent, run_id), True)
    return drive(advance_run(agent, run_id))


async def start(agent: Agent, run_input: dict[str, Any], run_id: str | None = None, attach: Any = None) -> str | Paused:
    """Record a new run of ``agent`` on ``run_input`` and advance it to its pause or end."""
    run_id = create(agent, run_input, run_id)
    return await advance_run(agent, run_id, attach)


def create(
    agent: Agent, run_input: dict[str, Any], run_id: str | None = None, conversation: tuple[str, int] | None = None
) -> str:
    """Record a queued (``running``, not yet started) run, as turn ``conversation=(id, turn)``
    of a conversation when given; return its id."""
    return create_record(agent, run_input, run_id, conversation).run_id


def create_record(
    agent: Agent,
    run_input: dict[str, Any],
    run_id: str | None = None,
    conversation: tuple[str, int] | None = None,
    planned: dict[str, Any] | None = None,
) -> RunRecord:
    """``create``, returning the new run's record as written (``advance_run(..., known=)`` then
    starts it without reading it back). ``planned``: a conversation turn's plan that this
    process built from checked messages (``conversations``), added to the input as it is —
    not copied again, so a long conversation's history costs no copy here."""
    run_id = run_id or new_run_id()
    run_input = validated_input(run_input)  # refused as a chart run refuses it, before a run is stored
    if planned is not None:
        run_input[CONVERSATION_INPUT] = planned
    chart = agent.chart
    store = _store(agent)
    return store.create(
        run_id,
        kind=AGENT_RUN_KIND,
        chart_fingerprint=chart.fingerprint,
        input=run_input,
        chart_spec=chart.spec,
        redaction=agent.recorded_redaction,
        **({} if conversation is None else {"conversation": conversation}),
    )


def answer(agent: Agent, run_id: str, decision: Any) -> RunRecord:
    """Check ``decision`` against the stored pause and record it once (the database decides)."""
    return answer_in(_store(agent), run_id, decision, tools=agent.config.tools, agent=agent)


def answer_in(
    store: RunStore, run_id: str, decision: Any, tools: Mapping[str, Tool] | None = None, agent: Agent | None = None
) -> RunRecord:
    """``answer`` on a store directly (no agent needed: the pause is in the checkpoint; with
    the agent's ``tools`` edited args are checked against the tool's schema here too, and with
    the ``agent`` the checkpoint is checked against its chart and config first)."""
    record = store.get(run_id)
    if record.status != "paused" or record.checkpoint is None:
        raise ResumeDecisionError(
            f"run '{run_id}' is {record.status}: it is not waiting for an answer"
            + (" (its pause was answered already)" if record.answered else ""),
            problem="already-used",
            request_id=getattr(decision, "request_id", ""),
            pending_request_id="",
        )
    held = held_pause(agent.config, record.checkpoint.shared_state) if agent is not None else None
    if agent is not None and held is not None:  # paused inside a handoff: the receiving agent checks
        resume_input: Any = agent.checked_resume_input(record.checkpoint, decision)
        request_id = decision.request_id if isinstance(decision, CheckInDecision) else None
    else:
        check_resumable(record.checkpoint, *((agent.config, agent.chart) if agent is not None else ()))
        resume_input, request_id = check_answer(
            record.checkpoint, decision, record.answered, run_id=run_id, tools=tools
        )
    if held is None and isinstance(resume_input, dict) and isinstance(decision, CheckInDecision):
        # the decision is bound to the run as the person saw it: the head of its stored rows
        resume_input = {**resume_input, "store_head": store.verify(run_id)}
    try:
        return store.answer(run_id, record.pause_answer_id(request_id), resume_input, by=getattr(decision, "by", None))
    except AlreadyAnsweredError as exc:
        raise ResumeDecisionError(
            f"{exc}: another process answered it first",
            problem="already-used",
            request_id=request_id or "",
            pending_request_id=request_id or "",
        ) from None


async def resume(agent: Agent, run_id: str, decision: Any) -> str | Paused:
    """Answer the stored run's pause with ``decision`` (once) and advance it; a ``failed`` run
    is continued at the stage that failed instead (``retry_failed``)."""
    if _store(agent).get(run_id).status == "failed":
        retry_failed(_store(agent), run_id, decision)
    else:
        answer(agent, run_id, decision)
    return await advance_run(agent, run_id)


def retry_failed(store: RunStore, run_id: str, decision: Any = None) -> RunRecord:
    """Mark the failed run ``running`` again (once: ``store.retry``) so the next advance re-runs
    the stage that failed from its stored checkpoint; a failed run takes no answer."""
    if decision is not None:
        raise TypeError(
            f"resume_run('{run_id}', decision): the run failed, it is not paused — continue it at the "
            "stage that failed with resume_run(run_id) and no decision"
        )
    return store.retry(run_id)


async def advance_run(
    agent: Agent,
    run_id: str,
    attach: Any = None,
    known: RunRecord | None = None,
    landed: Callable[[RunResult], None] | None = None,
    loaded: dict[str, Any] | None = None,
) -> str | Paused:
    """Run the next segment of a stored agent run (start, or resume with the recorded answer);
    ``attach(recorders)`` adds a stream's tap (``agent._run.streaming``); ``known`` is the run's
    record as ``create_record`` just wrote it (not read again); ``landed(result)`` is told the
    segment once it is stored. ``loaded``: a conversation turn's plan with its loaded messages
    (``history``), as planned in this process; without it a turn whose seed is still to run
    reads them from the store (``conversation_turns.loaded_from_store``)."""
    outcome: list[str | Paused] = []

    async def step(record: RunRecord) -> RunResult:
        recorders = agent.segments.recorders(attach)
        env: dict[str, Any] = {RUN_ID_ENV: run_id}
        plan = loaded
        if plan is None and not record.commit_log:  # the seed runs: it needs the turns it loads
            plan = loaded_from_store(_store(agent), record.input.get(CONVERSATION_INPUT))
        if plan is not None:
            env[LOADED_ENV] = plan
        options = agent.segments.options(recorders, env=env)
        with agent.segments.failures_kept(recorders):
            if record.checkpoint is None:
                result = await agent.chart.arun(record.input, **options)
            else:
                result = await agent.chart.aresume(record.checkpoint, record.answer, **options)
        result = attrs.evolve(result, run_id=run_id)
        try:
            outcome.append(agent.segments.finish(result, recorders))
        except Exception as exc:
            raise RefusedOutcome(exc, result) from None
        return result

    result = await aadvance(_store(agent), run_id, agent.chart.fingerprint, step, output=_final, known=known)
    if landed is not None:
        landed(result)
    value = outcome[0]
    if isinstance(value, Paused):
        assert result.checkpoint is not None
        return attrs.evolve(paused_from(result.checkpoint), run_id=run_id)
    return value


def fork(agent: Agent, run_id: str, at: int, patch: Mapping[str, Any] | None, *, reuse: bool = False) -> str | Paused:
    """``agent.fork``: a new stored agent run continuing ``run_id`` after commit ``at`` with
    ``patch`` written first (``flowchart._rerun``); its answer, or ``Paused``."""
    from flowchart.lowlevel import RunOptions, fork_chart

    store = _store(agent)
    new_id = new_run_id()
    recorders = agent.segments.recorders()
    options = RunOptions(
        **agent.segments.options(recorders, env={RUN_ID_ENV: new_id}), store=store, run_id=new_id, reuse=reuse
    )
    result = fork_chart(agent.chart, run_id, at, patch, options, kind=AGENT_RUN_KIND, output=_final)
    value = agent.segments.finish(result, recorders)
    if isinstance(value, Paused):
        assert result.checkpoint is not None
        return attrs.evolve(paused_from(result.checkpoint), run_id=new_id)
    return value


def _final(result: RunResult) -> Any:
    """What a finished agent run stores as its output: the final answer text."""
    return str(result.state.get(FINAL_CONTENT, ""))


def paused(agent: Agent, run_id: str) -> Paused:
    """The stored run's pending pause as a ``Paused`` (``ValueError`` when it is not paused)."""
    record = _store(agent).get(run_id)
    if record.status != "paused" or record.checkpoint is None:
        raise ValueError(f"run '{run_id}' is {record.status}, not paused")
    return attrs.evolve(paused_from(record.checkpoint), run_id=run_id)
