"""The built ``Agent``: run, resume, stream, snapshot, events.

Laws: ``run`` refuses a blank message before any provider call; a run ends in exactly
one way — the final answer, ``Paused`` (a person must answer first), or a refusal
raised as an error (``MessageDeniedError``, ``PolicyHaltError``); a consent pause
(check-in or middleware ask) is answered only with a decision for THAT request, once.

The public hooks ``run_recorders``, ``chart_options``, ``arun_turn``, ``finish_run`` and
``with_config`` are how the rest of the package (``agent.durable``, ``agent.streaming``,
``agent.mcp``) runs an agent's chart the way ``run`` does, without reaching into it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from flowchart import Checkpoint, Record, Redaction, Retry, RunResult, failed_run, narrative
from flowchart.lowlevel import drive, run_coroutine
from flowchart.stream import AsyncRunStream, RunStream
from governance import HUMAN_DECISIONS, MessageDeniedError
from governance.human import tell_latest

from . import conversation_turns, conversations, durable, queueing, structured
from .builder import AgentBuilder
from .chart import build_agent_chart
from .config import AgentConfig
from .errors import PolicyHaltError
from .events import EventBus, Listener
from .paused import AnswerBook, Paused, check_answer, paused_from
from .redaction_cover import recorded_rule
from .resume_checks import check_resumable
from .state import (
    CONVERSATION,
    FINAL_CONTENT,
    MESSAGE_DENIED_BY,
    MESSAGE_DENIED_PHASE,
    MESSAGE_DENIED_REASON,
    POLICY_HALT,
)


def _worded(lines: Any) -> list[str]:
    return list(lines()) if callable(lines) else lines


@attrs.frozen(repr=False)
class AgentSnapshot:
    """The last run of an agent: its ``shared_state``, ``commit_log`` and ``narrative`` lines.

    ``narrative`` may be given as the run's narrative recorder's ``lines`` (a callable): the
    lines are then worded the first time they are asked for, not at the end of every run.
    """

    shared_state: dict[str, Any]
    commit_log: list[Any]
    _narrative: list[str] | Callable[[], list[str]] = attrs.field(alias="narrative", eq=_worded)
    result: RunResult = attrs.field(repr=False)

    @property
    def narrative(self) -> list[str]:
        """The run's narrative lines (worded on first use, then kept)."""
        lines = self._narrative
        if callable(lines):
            lines = list(lines())
            object.__setattr__(self, "_narrative", lines)  # a cache of what the run already decided
        return lines

    @property
    def record(self) -> Record:
        """The last run segment's record (``flowchart._record.record``): ``record.shown()`` for a reader."""
        return self.result.record

    def __repr__(self) -> str:
        return (
            f"AgentSnapshot(shared_state={self.shared_state!r}, commit_log={self.commit_log!r}, "
            f"narrative={self.narrative!r})"
        )


class Agent:
    """A built agent. Make one with ``Agent.create(provider=..., model=...)...build()``."""

    def __init__(
        self,
        cfg: AgentConfig,
        store: Any = None,
        *,
        narrative: bool = True,
        redaction: Redaction | None = None,
        timeout: float | None = None,
        recorders: tuple[Any, ...] = (),
        history: conversations.HistoryPolicy | None = None,
    ) -> None:
        self.config = cfg
        self.recorders = recorders
        self.narrative = narrative
        self.redaction = redaction
        self._recorded: tuple[Redaction | None, Redaction | None] | None = None
        self.timeout = timeout
        # the requests answered by this agent's runs without a store (ids bind the run and the
        # pause, so an identical call of another run is another request)
        self._answered = AnswerBook()
        self.chart = build_agent_chart(cfg, self._answered)
        self.store = store
        self._events = EventBus()
        self._last: AgentSnapshot | None = None
        # conversations (agent.conversations): turns kept here without a store; the last one run
        self.history_policy = history or conversations.HistoryPolicy()
        #: the in-memory turns of this agent's conversations (used when there is no store)
        self.conversation_book = conversations.ConversationBook()
        #: the stored conversations' turns this process stored last (``conversations.StoredTurns``)
        self.stored_turns = conversations.StoredTurns()
        #: the conversation ``follow_up`` continues: the last one this agent ran a turn of
        self.last_conversation: str | None = None

    @staticmethod
    def create(
        *,
        provider: Any,
        model: str = "default",
        wrap_up_at_max_iterations: bool = True,
        permission_checker: Any = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stream: bool = False,
        store: Any = None,
        narrative: bool = True,
        redaction: Redaction | None = None,
        timeout: float | None = None,
        recorders: Iterable[Any] = (),
        output_schema: Any = None,
        output_retries: int = 2,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
        llm_retry: Retry | None = None,
    ) -> AgentBuilder:
        """Start building an agent on ``provider`` (see ``agent.providers``).

        ``narrative=False`` skips the narrative recorder (``last_snapshot().narrative`` is
        then empty): the commit log is still complete, and runs are about 2x cheaper.
        ``redaction`` hides values in every recording of the agent's runs (commit log,
        traces, narrative), e.g. ``Redaction(fields={"middleware_decisions": ["before"]})``.
        ``timeout`` bounds each ``run``/``resume`` in seconds: when it expires the model call
        in flight is cancelled (its connection closed) and ``RunTimeoutError`` names the stage.
        ``recorders`` are flowchart recorders attached to every run and resume of the agent
        (e.g. ``flowchart.otel.otel_recorder()``); they see the agent events as emits.
        ``output_schema`` (a JSON Schema dict, an attrs class, a dataclass or a pydantic model)
        makes ``run`` return a validated answer (a dict, or an instance); an invalid reply is
        sent back up to ``output_retries`` times, then ``OutputSchemaError`` (``agent.structured``).
        ``conversation_window``/``conversation_chars`` bound the history a conversation turn
        sends (the last N turns / a character budget; see docs/conversations.md).
        ``llm_retry`` is a ``flowchart.Retry`` for the call-llm stage: a model call that fails
        (after the provider's own HTTP retries) is tried again, each failed attempt recorded
        on the stage's commit (docs/durable.md).
        """
        return AgentBuilder(
            Agent,
            provider=provider,
            model=model,
            wrap_up=wrap_up_at_max_iterations,
            permission_checker=permission_checker,
            temperature=temperature,
            max_tokens=max_tokens,
            stream=stream,
            store=store,
            narrative=narrative,
            redaction=redaction,
            timeout=timeout,
            recorders=tuple(recorders),
            output_schema=output_schema,
            output_retries=output_retries,
            llm_retry=llm_retry,
            conversation_window=conversation_window,
            conversation_chars=conversation_chars,
        )

    def with_config(self, cfg: AgentConfig) -> Agent:
        """The same agent (store, narrative, redaction, timeout, recorders and ``on`` listeners)
        on another config: a new chart, sharing the event listeners."""
        other = Agent(
            cfg,
            self.store,
            narrative=self.narrative,
            redaction=self.redaction,
            timeout=self.timeout,
            recorders=self.recorders,
            history=self.history_policy,
        )
        other._events = self._events
        return other

    # -- events -------------------------------------------------------------------------
    def on(self, name: str, listener: Listener) -> Agent:
        """Call ``listener(name, payload)`` for agent event ``name`` (``"*"`` for every event)."""
        self._events.on(name, listener)
        return self

    def run_recorders(self, attach: Any = None) -> list[Any]:
        """The recorders of one run or resume: the narrative first (when on), the ``on``
        listeners, then ``Agent.create(recorders=)``; ``attach(recorders)`` may wrap or extend
        them (a stream's tap, ``agent.streaming``)."""
        # agent events go to agent.on listeners; narrated, they would repeat the commits
        # the narrative tells each human answer in one sentence, right after its row is written
        notes = {HUMAN_DECISIONS: tell_latest, CONVERSATION: conversation_turns.tell}
        notes.update(structured.notes(self.config.output))
        recorders: list[Any] = [narrative(include_emits=False, notes=notes)] if self.narrative else []
        if self._events.active:
            recorders.append(self._events)
        recorders.extend(self.recorders)
        return recorders if attach is None else attach(recorders)

    def chart_options(self, recorders: list[Any], env: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The keyword arguments of ``self.chart.arun`` / ``aresume`` for one segment of a run."""
        options: dict[str, Any] = {} if env is None else {"env": dict(env)}
        options.update(
            recorders=recorders,
            max_iterations=self.config.loop_limit,
            timeout=self.timeout,
            redaction=self.recorded_redaction,
        )
        return options

    @property
    def recorded_redaction(self) -> Redaction | None:
        """The rule the agent's runs are recorded and stored under: ``redaction`` extended to
        every copy the agent makes of what it hides (``agent.redaction_cover``)."""
        rule = self.redaction
        cached = self._recorded
        if cached is None or cached[0] is not rule:
            cached = self._recorded = (rule, recorded_rule(rule))
        return cached[1]

    # -- running --------------------------------------------------------------------------
    @property
    def needs_event_loop(self) -> bool:
        """True when a run needs an event loop: an awaiting stage, or a timeout to enforce."""
        return self.config.needs_event_loop or self.timeout is not None

    def run(
        self,
        message: str,
        identity: Any = None,
        *,
        conversation: str | None = None,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> str | Paused:
        """Run one turn: the final answer, or ``Paused`` when a person must answer first.

        ``conversation="c-42"`` makes it the next turn of that conversation (the model sees
        the earlier turns; ``conversation_window=``/``conversation_chars=`` bound them for
        this turn): see docs/conversations.md.
        """
        turn = conversations.turn_options(self, conversation, conversation_window, conversation_chars)
        return (
            run_coroutine(lambda _c: self._arun_message(message, identity, turn), True)
            if self.needs_event_loop
            else drive(self._arun_message(message, identity, turn))
        )

    async def arun(
        self,
        message: str,
        identity: Any = None,
        *,
        conversation: str | None = None,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> str | Paused:
        """``run`` inside the caller's event loop."""
        turn = conversations.turn_options(self, conversation, conversation_window, conversation_chars)
        return await self._arun_message(message, identity, turn)

    async def _arun_message(self, message: str, identity: Any, turn: Any) -> str | Paused:
        run_input = durable.make_input(message, identity)
        if turn is None:
            return await self.arun_turn(run_input)
        conversation, policy = turn
        return await conversations.arun(self, run_input, conversation, policy)

    def follow_up(
        self,
        message: str,
        identity: Any = None,
        *,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> str | Paused:
        """The next turn of this agent's last conversation (``NoConversationError`` before any)."""
        last = conversations.last(self)
        return self.run(
            message,
            identity,
            conversation=last,
            conversation_window=conversation_window,
            conversation_chars=conversation_chars,
        )

    async def afollow_up(
        self,
        message: str,
        identity: Any = None,
        *,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> str | Paused:
        """``follow_up`` inside the caller's event loop."""
        last = conversations.last(self)
        return await self.arun(
            message,
            identity,
            conversation=last,
            conversation_window=conversation_window,
            conversation_chars=conversation_chars,
        )

    def stream(
        self,
        message: str,
        identity: Any = None,
        *,
        modes: Any = None,
        conversation: str | None = None,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> RunStream:
        """Run one turn and iterate its events as they happen (see docs/streaming.md).

        The last event is ``final``, whose ``result`` is what ``run`` returns (the answer
        or ``Paused``); ``modes`` picks event kinds; leaving the loop early cancels the run.
        ``conversation=`` (and its policy) as for ``run``.
        """
        from .streaming import agent_plan

        turn = conversations.turn_options(self, conversation, conversation_window, conversation_chars)
        return RunStream(agent_plan(self, message, identity, modes, turn))

    def astream(
        self,
        message: str,
        identity: Any = None,
        *,
        modes: Any = None,
        conversation: str | None = None,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> AsyncRunStream:
        """``stream`` on the caller's event loop: ``async for event in agent.astream(...)``."""
        from .streaming import agent_plan

        turn = conversations.turn_options(self, conversation, conversation_window, conversation_chars)
        return AsyncRunStream(agent_plan(self, message, identity, modes, turn))

    async def arun_turn(self, run_input: dict[str, Any], attach: Any = None, run_id: str | None = None) -> str | Paused:
        """One turn on a checked ``run_input`` (``durable.make_input``); ``attach(recorders)`` adds
        a stream's tap to the recorders; ``run_id`` names the stored run (with a store)."""
        if self.store is not None:
            return await durable.start(self, run_input, run_id, attach=attach)
        recorders = self.run_recorders(attach)
        with self.failures_kept(recorders):
            result = await self.chart.arun(run_input, **self.chart_options(recorders))
        return self.finish_run(result, recorders)

    def resume(self, checkpoint: Checkpoint, answer: Any = None) -> str | Paused:
        """Answer the pause ``checkpoint`` was taken at and run on."""
        if self.needs_event_loop:
            return run_coroutine(lambda _c: self.aresume(checkpoint, answer), True)
        return drive(self.aresume(checkpoint, answer))

    async def aresume(self, checkpoint: Checkpoint, answer: Any = None) -> str | Paused:
        """``resume`` inside the caller's event loop."""
        # refused here before anything runs; the tool-calls stage marks the request answered
        # (AnswerBook) before its tool can run, so a failing resume cannot be retried into a rerun
        check_resumable(checkpoint, self.config, self.chart)
        resume_input, _request_id = check_answer(checkpoint, answer, self._answered.ids(), tools=self.config.tools)
        recorders = self.run_recorders()
        with self.failures_kept(recorders):
            result = await self.chart.aresume(checkpoint, resume_input, **self.chart_options(recorders))
        return self.finish_run(result, recorders)

    def resume_run(self, run_id: str, decision: Any = None) -> str | Paused:
        """Answer the pause of the stored run ``run_id`` (in any process) and run on.

        The decision is checked against the store's record and accepted ONCE: a second
        answer to the same request, from any process, raises ``ResumeDecisionError``.
        A ``failed`` run (a provider down, a stage error) is continued at the stage that
        failed instead, with no decision: nothing that committed runs again (docs/durable.md).
        """
        if self.needs_event_loop:
            return run_coroutine(lambda _c: self.aresume_run(run_id, decision), True)
        return drive(self.aresume_run(run_id, decision))

    def fork(self, run_id: str, at: int, patch: Mapping[str, Any] | None = None) -> str | Paused:
        """A new stored run that continues ``run_id`` after its commit ``at`` with ``patch``
        (state key → JSON value) written first — e.g. a rewritten tool result in ``history``
        — so the model answers again from there. Needs the agent's store; the fork lists
        under ``store.forks(run_id)``. See docs/durable.md."""
        return durable.fork(self, run_id, at, patch)

    def submit(
        self,
        message: str,
        identity: Any = None,
        *,
        app: Any = None,
        conversation: str | None = None,
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
    ) -> str:
        """Queue a run for Celery workers (``agent.celery``): record it in the store and
        enqueue ``advance_run``; returns the run id (``app`` defaults to the newest
        ``make_app`` of this process). With ``conversation=`` it is that conversation's next
        turn, claimed in the store before it is enqueued."""
        return queueing.submit(
            self,
            message,
            identity,
            app=app,
            conversation=conversation,
            conversation_window=conversation_window,
            conversation_chars=conversation_chars,
        )

    async def aresume_run(self, run_id: str, decision: Any = None) -> str | Paused:
        """``resume_run`` inside the caller's event loop."""
        return await durable.resume(self, run_id, decision)

    def finish_run(self, result: RunResult, recorders: list[Any]) -> str | Paused:
        """What a run segment ends in: keep it as ``last_snapshot()``, then raise its refusal
        (``MessageDeniedError``, ``PolicyHaltError``) or return ``Paused`` or the final answer."""
        if self.store is None and conversations.CONVERSATION in result.state:
            self.conversation_book.settle(result)  # an in-memory conversation turn ended or paused
        # the narrative is worded when last_snapshot().narrative is first read, not here
        lines = recorders[0].lines if self.narrative else []
        self._last = AgentSnapshot(result.state, result.commit_log, lines, result)
        state = result.state
        if MESSAGE_DENIED_PHASE in state:
            raise MessageDeniedError(
                state[MESSAGE_DENIED_REASON], state[MESSAGE_DENIED_PHASE], state[MESSAGE_DENIED_BY]
            )
        if POLICY_HALT in state:
            halt = state[POLICY_HALT]
            raise PolicyHaltError(halt["reason"], halt["tool_name"], halt["tool_call_id"])
        if result.paused:
            assert result.checkpoint is not None
            return paused_from(result.checkpoint)
        if self.config.output is not None:
            return structured.final_answer(self.config.output, state)
        return str(state.get(FINAL_CONTENT, ""))

    @contextlib.contextmanager
    def failures_kept(self, recorders: list[Any]) -> Iterator[None]:
        """Around a run segment: when it fails, its partial result (``failed_run``) becomes
        ``last_snapshot()`` before the error goes on — a failed run is a run too."""
        try:
            yield
        except Exception as exc:
            found = failed_run(exc)
            if found is not None:
                result = found[0]
                lines = recorders[0].lines if self.narrative else []
                self._last = AgentSnapshot(result.state, result.commit_log, lines, result)
            raise

    def last_snapshot(self) -> AgentSnapshot:
        """The last run's state, commit log and narrative (raises before the first run)."""
        if self._last is None:
            raise RuntimeError("last_snapshot(): the agent has not run yet")
        return self._last
