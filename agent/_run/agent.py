"""The built ``Agent``: run, resume, stream, snapshot, events.

Laws: ``run`` refuses a blank message before any provider call; a run ends in exactly
one way — the final answer, ``Paused`` (a person must answer first), or a refusal
raised as an error (``MessageDeniedError``, ``PolicyHaltError``); a consent pause
(check-in or middleware ask) is answered only with a decision for THAT request, once.

How one segment of a run is set up and ended is the segment runner's (``agent.segments``,
``agent._run.segments``): ``agent._run.durable``, ``agent._run.streaming`` and
``agent._run.conversations`` run the agent's chart through it, the way ``run`` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal

from agent._chart.chart import build_agent_chart
from agent._chart.config import AgentConfig
from agent._chart.events import Listener
from agent._chart.handoff import held_pause
from agent._chart.paused import AnswerBook, Paused, check_answer
from agent._chart.redaction_cover import recorded_rule
from agent._run import compose, conversations, durable, queueing
from agent._run.builder import AgentBuilder
from agent._run.resume_checks import check_resumable
from agent._run.segments import Segments
from agent._run.snapshot import AgentSnapshot
from agent._tools.tools import Tool
from flowchart import Checkpoint, Redaction, Retry
from flowchart.lowlevel import check_checkpoint, drive, run_coroutine
from flowchart.stream import AsyncRunStream, RunStream
from governance import CheckInDecision


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
        #: runs this agent's segments and keeps the last one's snapshot (``agent._run.segments``)
        self.segments = Segments(self)
        # conversations (agent._run.conversations): turns kept here without a store; the last one run
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
        pricing: Mapping[str, Any] | Literal[False] | None = None,
        budget: Any = None,
        memory: Any = None,
        recall: int = 3,
        memory_namespace: Any = None,
        max_handoffs: int = 5,
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
        sent back up to ``output_retries`` times, then ``OutputSchemaError`` (``agent._chart.structured``).
        ``conversation_window``/``conversation_chars`` bound the history a conversation turn
        sends (the last N turns / a character budget; see docs/conversations.md).
        ``llm_retry`` is a ``flowchart.Retry`` for the call-llm stage: a model call that fails
        (after the provider's own HTTP retries) is tried again, each failed attempt recorded
        on the stage's commit (docs/durable.md).
        Every model call's usage and cost are recorded on its commit (``llm_cost``;
        ``last_snapshot().calls`` / ``.cost``), priced from the built-in table (a model not in
        it costs ``"unknown"``); ``pricing`` (model name → ``Price``) is laid over that table,
        and ``pricing=False`` records no cost at all (no budget then);
        ``budget`` (a ``Budget``) is checked before each model call (docs/cost.md).
        ``memory`` (an ``agent.memory`` store) gives the model ``remember``/``recall`` tools and
        recalls the ``recall`` most relevant items of the run's namespace before each model call
        (``memory_namespace(identity) -> tuple``; default ``(tenant, user)`` from the identity;
        docs/memory.md). ``max_handoffs`` caps a chain of handoffs (``AgentBuilder.handoff``).
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
            pricing=pricing,
            budget=budget,
            memory=memory,
            recall=recall,
            memory_namespace=memory_namespace,
            max_handoffs=max_handoffs,
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
        other.segments.events = self.segments.events
        return other

    # -- composition (agent._run.compose; docs/agents.md) ----------------------------------
    def as_tool(self, name: str, description: str) -> Tool:
        """This agent as a tool another agent may call: ``{"input": str}`` in, the answer out."""
        return compose.agent_tool(self, name, description)

    def resume_input(self, checkpoint: Checkpoint, answer: Any = None) -> Any:
        """The checked answer to a pause of this agent inside a chart it is mounted in
        (``add_agent``): ``outer_chart.resume(checkpoint, agent.resume_input(checkpoint, answer))``."""
        return check_answer(checkpoint, answer, self._answered.ids(), tools=self.config.tools)[0]

    def as_subflow(
        self, *, message: Callable[[Any], str], into: str, identity: Callable[[Any], Any] | None = None
    ) -> compose.SubflowParts:
        """What ``flow_chart(...).add_agent(name, agent, id, message=, into=)`` mounts."""
        return compose.subflow_parts(self, message, into, identity)

    # -- events -------------------------------------------------------------------------
    def on(self, name: str, listener: Listener) -> Agent:
        """Call ``listener(name, payload)`` for agent event ``name`` (``"*"`` for every event)."""
        self.segments.events.on(name, listener)
        return self

    @property
    def recorded_redaction(self) -> Redaction | None:
        """The rule the agent's runs are recorded and stored under: ``redaction`` extended to
        every copy the agent makes of what it hides (``agent._chart.redaction_cover``)."""
        rule = self.redaction
        cached = self._recorded
        if cached is None or cached[0] is not rule:
            cfg = self.config
            composed = (
                cfg.has_context
                or bool(cfg.handoffs)
                or cfg.memory is not None
                or any(getattr(tool.execute, "sub_agent", None) for tool in cfg.tools.values())
            )
            cached = self._recorded = (rule, recorded_rule(rule, composed, handoffs=bool(cfg.handoffs)))
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
            return await self.segments.arun_turn(run_input)
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
        from agent._run.streaming import agent_plan

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
        from agent._run.streaming import agent_plan

        turn = conversations.turn_options(self, conversation, conversation_window, conversation_chars)
        return AsyncRunStream(agent_plan(self, message, identity, modes, turn))

    def resume(self, checkpoint: Checkpoint, answer: Any = None) -> str | Paused:
        """Answer the pause ``checkpoint`` was taken at and run on."""
        if self.needs_event_loop:
            return run_coroutine(lambda _c: self.aresume(checkpoint, answer), True)
        return drive(self.aresume(checkpoint, answer))

    async def aresume(self, checkpoint: Checkpoint, answer: Any = None) -> str | Paused:
        """``resume`` inside the caller's event loop."""
        return await self.segments.aresume_turn(checkpoint, self.checked_resume_input(checkpoint, answer))

    def checked_resume_input(self, checkpoint: Checkpoint, answer: Any = None) -> Any:
        """What ``resume`` hands the chart for ``answer``, checked against ``checkpoint`` before
        anything runs. A pause inside a handoff is checked by the receiving agent (in turn,
        down a chain of handoffs) and goes on to it as given (``agent._chart.handoff``)."""
        if isinstance(checkpoint, Checkpoint):
            held = held_pause(self.config, checkpoint.shared_state)
            if held is not None:
                check_checkpoint(self.chart, checkpoint)
                receiver, where = held
                if isinstance(where, str):  # a stored receiver checks the answer when it is resumed
                    return answer.to_dict() if isinstance(answer, CheckInDecision) else answer
                return receiver.checked_resume_input(where, answer)
        # refused here before anything runs; the tool-calls stage marks the request answered
        # (AnswerBook) before its tool can run, so a failing resume cannot be retried into a rerun
        check_resumable(checkpoint, self.config, self.chart)
        return check_answer(checkpoint, answer, self._answered.ids(), tools=self.config.tools)[0]

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

    def fork(
        self, run_id: str, at: int, patch: Mapping[str, Any] | None = None, *, reuse: bool = False
    ) -> str | Paused:
        """A new stored run that continues ``run_id`` after its commit ``at`` with ``patch``
        (state key → JSON value) written first — e.g. a rewritten tool result in ``history``
        — so the model answers again from there. Needs the agent's store; the fork lists
        under ``store.forks(run_id)``. ``reuse=True``: a stage whose recorded reads did not
        change is taken from the record, its model or tool call not made again. See docs/durable.md."""
        return durable.fork(self, run_id, at, patch, reuse=reuse)

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

    def last_snapshot(self) -> AgentSnapshot:
        """The last run's state, commit log and narrative (raises before the first run)."""
        last = self.segments.last
        if last is None:
            raise RuntimeError("last_snapshot(): the agent has not run yet")
        return last
