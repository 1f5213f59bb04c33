"""``Agent.create(...)...build()`` and the built ``Agent``: run, resume, snapshot, events.

The agent IS a flowchart::

    seed ──► call-llm ──► route ─┬─ 'tool-calls' ──► tool-calls (pausable) ──loop──► call-llm
                                 ├─ 'wrap-up'    ──► wrap-up ──loop──► call-llm
                                 └─ 'final' (default) ──► final (prepare-final ► break-final)

so every model call, routing decision and tool result is a commit in the run's log, and
the whole flowchart toolkit (narrative, replay, causal chains, traces) works on it.

Laws: builder refusals name the problem (duplicate tool, bad ``max_iterations``, no
provider, a middleware without a name or hook); ``run`` refuses a blank message before
any provider call; a consent pause (check-in or middleware ask) is answered only with a
decision for THAT request, once.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from flowchart import Checkpoint, FlowChart, Pausable, Redaction, RunResult, flow_chart, narrative
from flowchart.chart import drive, run_coroutine
from flowchart.events import ALL_HOOKS
from flowchart.stream import AsyncRunStream, RunStream
from governance import (
    HUMAN_DECISIONS,
    MessageDeniedError,
    resolve_check_in_config,
    tell_latest,
    validate_chain,
)
from governance.permissions import validate_permission_checker

from . import conversations, durable
from .config import AgentConfig
from .dispatch import make_tool_calls
from .events import EventBus, Listener
from .paused import AnswerBook, Paused, check_answer, paused_from
from .resume_checks import check_resumable
from .stages import (
    break_final,
    final_input,
    final_output,
    make_call_llm,
    make_route,
    make_seed,
    make_wrap_up,
    prepare_final,
)
from .tools import Tool


class AgentBuildError(ValueError):
    """The agent builder was given something it cannot build."""


class PolicyHaltError(RuntimeError):
    """The permission checker halted the run (``PermissionDecision.halt``): no final answer.

    Message: ``Policy halt at tool '<tool_name>' (call <tool_call_id>): <reason>``. The model's
    tool result and the halt (``policy_halt``) are in the commit log; ``last_snapshot()`` has them.
    """

    code = "ERR_POLICY_HALT"

    def __init__(self, reason: str, tool_name: str, tool_call_id: str) -> None:
        super().__init__(f"Policy halt at tool '{tool_name}' (call {tool_call_id}): {reason}")
        self.reason = reason
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.tool_name, self.tool_call_id))


def _sync(stage: Any) -> Any:
    """Wrap an ``async def`` stage for a run that needs no event loop (nothing it awaits suspends)."""

    def run_now(*args: Any) -> Any:
        return drive(stage(*args))

    run_now.__name__ = getattr(stage, "__name__", "stage")
    return run_now


def build_agent_chart(cfg: AgentConfig, answered: AnswerBook | None = None) -> FlowChart:
    """The agent chart for ``cfg`` (stage ids: seed, call-llm, route, tool-calls, wrap-up, final);
    ``answered`` is where a run without a store marks the requests it answered."""
    asynchronous = cfg.needs_event_loop

    def fit(stage: Any) -> Any:
        return stage if asynchronous else _sync(stage)

    tool_calls = make_tool_calls(cfg, answered)
    if not asynchronous:
        assert tool_calls.answer is not None
        tool_calls = Pausable(
            execute=_sync(tool_calls.execute), resume=_sync(tool_calls.resume), answer=_sync(tool_calls.answer)
        )
    final = (
        flow_chart("PrepareFinal", prepare_final, "prepare-final")
        .add_function("BreakFinal", break_final, "break-final")
        .build()
    )
    branches = (
        flow_chart("Seed", fit(make_seed(cfg)), "seed")
        .add_function("CallLLM", fit(make_call_llm(cfg)), "call-llm")
        .add_decider_function("Route", fit(make_route(cfg)), "route")
        .add_pausable_function_branch("tool-calls", "ToolCalls", tool_calls, loop_to="call-llm")
    )
    if cfg.wrap_up and cfg.tools:
        branches = branches.add_function_branch("wrap-up", "WrapUp", make_wrap_up(), loop_to="call-llm")
    return (
        branches.add_subflow_chart_branch(
            "final",
            final,
            mount_name="Final",
            input_mapper=final_input,
            output_mapper=final_output,
            propagate_break=True,
        )
        .set_default("final")
        .end()
        .build()
    )


@attrs.frozen
class AgentSnapshot:
    """The last run of an agent: its ``shared_state``, ``commit_log`` and ``narrative`` lines."""

    shared_state: dict[str, Any]
    commit_log: list[Any]
    narrative: list[str]
    result: RunResult = attrs.field(repr=False)


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
        self._conversations = conversations.ConversationBook()
        self._last_conversation: str | None = None

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
        conversation_window: int | None = None,
        conversation_chars: int | None = None,
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
        ``conversation_window``/``conversation_chars`` bound the history a conversation turn
        sends (the last N turns / a character budget; see docs/conversations.md).
        """
        return AgentBuilder(
            provider=provider, model=model, wrap_up=wrap_up_at_max_iterations, permission_checker=permission_checker,
            temperature=temperature, max_tokens=max_tokens, stream=stream, store=store, narrative=narrative,
            redaction=redaction, timeout=timeout, recorders=tuple(recorders),
            conversation_window=conversation_window, conversation_chars=conversation_chars,
        )  # fmt: skip

    # -- events -------------------------------------------------------------------------
    def on(self, name: str, listener: Listener) -> Agent:
        """Call ``listener(name, payload)`` for agent event ``name`` (``"*"`` for every event)."""
        self._events.on(name, listener)
        return self

    def _recorders(self, attach: Any = None) -> list[Any]:
        # agent events go to agent.on listeners; narrated, they would repeat the commits
        # the narrative tells each human answer in one sentence, right after its row is written
        notes = {HUMAN_DECISIONS: tell_latest, conversations.CONVERSATION: conversations.tell}
        recorders: list[Any] = [narrative(include_emits=False, notes=notes)] if self.narrative else []
        if self._events.active:
            recorders.append(self._events)
        recorders.extend(self.recorders)
        return recorders if attach is None else attach(recorders)  # a stream's tap (agent.streaming)

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
            return await self._arun_turn(run_input)
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
            message, identity, conversation=last, conversation_window=conversation_window,
            conversation_chars=conversation_chars,
        )  # fmt: skip

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
            message, identity, conversation=last, conversation_window=conversation_window,
            conversation_chars=conversation_chars,
        )  # fmt: skip

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

    async def _arun_turn(
        self, run_input: dict[str, Any], attach: Any = None, run_id: str | None = None
    ) -> str | Paused:
        """One turn on ``run_input``; ``attach(recorders)`` adds a stream's tap to the recorders."""
        if self.store is not None:
            return await durable.start(self, run_input, run_id, attach=attach)
        recorders = self._recorders(attach)
        result = await self.chart.arun(
            run_input,
            recorders=recorders,
            max_iterations=self.config.max_iterations + 2,
            timeout=self.timeout,
            redaction=self.redaction,
        )
        return self._finish(result, recorders)

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
        recorders = self._recorders()
        result = await self.chart.aresume(
            checkpoint,
            resume_input,
            recorders=recorders,
            max_iterations=self.config.max_iterations + 2,
            timeout=self.timeout,
            redaction=self.redaction,
        )
        return self._finish(result, recorders)

    def resume_run(self, run_id: str, decision: Any = None) -> str | Paused:
        """Answer the pause of the stored run ``run_id`` (in any process) and run on.

        The decision is checked against the store's record and accepted ONCE: a second
        answer to the same request, from any process, raises ``ResumeDecisionError``.
        """
        if self.needs_event_loop:
            return run_coroutine(lambda _c: self.aresume_run(run_id, decision), True)
        return drive(self.aresume_run(run_id, decision))

    def submit(self, message: str, identity: Any = None, *, app: Any = None) -> str:
        """Queue a run for Celery workers (``agent.celery``): record it in the store and
        enqueue ``advance_run``; returns the run id (``app`` defaults to the newest
        ``make_app`` of this process)."""
        from .celery import submit

        return submit(self, message, identity, app=app)

    async def aresume_run(self, run_id: str, decision: Any = None) -> str | Paused:
        """``resume_run`` inside the caller's event loop."""
        return await durable.resume(self, run_id, decision)

    def _finish(self, result: RunResult, recorders: list[Any]) -> str | Paused:
        if self.store is None and conversations.CONVERSATION in result.state:
            self._conversations.settle(result)  # an in-memory conversation turn ended or paused
        lines = recorders[0].lines() if self.narrative else []
        self._last = AgentSnapshot(result.state, result.commit_log, lines, result)
        state = result.state
        if "message_denied_phase" in state:
            raise MessageDeniedError(
                state["message_denied_reason"], state["message_denied_phase"], state["message_denied_by"]
            )
        if "policy_halt" in state:
            halt = state["policy_halt"]
            raise PolicyHaltError(halt["reason"], halt["tool_name"], halt["tool_call_id"])
        if result.paused:
            assert result.checkpoint is not None
            return paused_from(result.checkpoint)
        return str(state.get("final_content", ""))

    def last_snapshot(self) -> AgentSnapshot:
        """The last run's state, commit log and narrative (raises before the first run)."""
        if self._last is None:
            raise RuntimeError("last_snapshot(): the agent has not run yet")
        return self._last


class AgentBuilder:
    """Collects an agent's settings; ``build()`` checks them and makes the ``Agent``."""

    def __init__(self, **settings: Any) -> None:
        self._settings = settings
        self._system: str | None = None
        self._tools: dict[str, Tool] = {}
        self._tool_middleware: list[Any] = []
        self._message_middleware: list[Any] = []
        self._check_in: tuple[Any, Any] = ("standard", None)
        self._max_iterations = 10

    def system(self, prompt: str) -> AgentBuilder:
        """The system prompt (sent to the model on every call, never stored in ``history``)."""
        if not isinstance(prompt, str):
            raise AgentBuildError(f"system(prompt): expected a string, got {type(prompt).__name__}")
        self._system = prompt
        return self

    def tool(self, tool: Tool) -> AgentBuilder:
        """Offer ``tool`` (from ``define_tool``) to the model; names must be unique."""
        if not isinstance(tool, Tool):
            raise AgentBuildError(f"tool(...): expected a Tool from define_tool(...), got {type(tool).__name__}")
        if tool.name in self._tools:
            raise AgentBuildError(f"duplicate tool name '{tool.name}': each tool needs its own name")
        self._tools[tool.name] = tool
        return self

    def tools(self, tools: Iterable[Tool]) -> AgentBuilder:
        """Offer several tools, in order."""
        for tool in tools:
            self.tool(tool)
        return self

    def tool_middleware(self, *links: Any) -> AgentBuilder:
        """Add tool middleware links (declaration order = chain order); repeatable."""
        self._tool_middleware.extend(links)
        return self

    def message_middleware(self, *links: Any) -> AgentBuilder:
        """Add message middleware links (input at seed, output at route); repeatable."""
        self._message_middleware.extend(links)
        return self

    def check_in(self, evidence: Any = "standard", scorer: Any = None) -> AgentBuilder:
        """How check-in evidence is assembled: "standard", "minimal" or an assembler; a custom scorer."""
        self._check_in = (evidence, scorer)
        return self

    def max_iterations(self, count: int) -> AgentBuilder:
        """The tool-round budget of one turn (a positive integer; default 10)."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise AgentBuildError(f"max_iterations must be a positive integer, got {count!r}")
        self._max_iterations = count
        return self

    def build(self) -> Agent:
        """Check everything and build the agent."""
        settings = dict(self._settings)
        provider = settings.pop("provider")
        if provider is None or not callable(getattr(provider, "complete", None)):
            raise AgentBuildError("Agent.create(provider=...): a provider with a complete(request) method is required")
        if not isinstance(settings["model"], str) or not settings["model"]:
            raise AgentBuildError("Agent.create(model=...): model must be a non-empty string")
        timeout = settings["timeout"]
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise AgentBuildError(f"Agent.create(timeout=...): expected a positive number of seconds, got {timeout!r}")
        try:
            tool_links = validate_chain(self._tool_middleware, "tool")
            message_links = validate_chain(self._message_middleware, "message")
            evidence, scorer = self._check_in
            resolve_check_in_config(evidence, scorer)
            if settings["permission_checker"] is not None:
                validate_permission_checker(settings["permission_checker"])
        except (TypeError, ValueError) as exc:
            raise AgentBuildError(str(exc)) from None
        for recorder in settings["recorders"]:
            if not any(callable(getattr(recorder, hook, None)) for hook in ALL_HOOKS):
                raise AgentBuildError(
                    f"Agent.create(recorders=...): {type(recorder).__name__} has no recorder hook "
                    "(on_run_start, on_commit, on_emit, ... — see flowchart.events)"
                )
        cfg = AgentConfig(
            provider=provider, model=settings["model"], system_prompt=self._system, tools=dict(self._tools),
            tool_middleware=tuple(tool_links), message_middleware=tuple(message_links), check_in_evidence=evidence,
            check_in_scorer=scorer, max_iterations=self._max_iterations, wrap_up=settings["wrap_up"],
            temperature=settings["temperature"], max_tokens=settings["max_tokens"],
            permission_checker=settings["permission_checker"], stream=settings["stream"],
        )  # fmt: skip
        try:
            history = conversations.HistoryPolicy.of(settings["conversation_window"], settings["conversation_chars"])
        except ValueError as exc:
            raise AgentBuildError(f"Agent.create({exc}") from None
        return Agent(
            cfg, settings["store"], narrative=settings["narrative"], redaction=settings["redaction"], timeout=timeout,
            recorders=settings["recorders"], history=history,
        )  # fmt: skip
