"""The segment runner: how one segment of an agent's run (a run, a resume, a stored
segment, a streamed turn) is set up and ended — the same way for every caller.

Laws: every segment gets its recorders from ``recorders`` (the narrative first, when on)
and its chart options from ``options``; it ends in ``finish`` — kept as the agent's last
snapshot, then a refusal raised, ``Paused`` or the final answer — or, when it raises, its
partial result is kept first (``failures_kept``): a failed run is a run too.

``Agent`` owns one runner (``agent.segments``) and exposes none of this plumbing itself;
``agent._run.durable``, ``agent._run.streaming``, ``agent._run.conversations`` and
``agent.mcp`` run the agent's chart through it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from agent._chart import conversation_turns, structured
from agent._chart.events import EventBus
from agent._chart.paused import Paused, paused_from
from agent._chart.state import (
    BUDGET_STATE,
    CONVERSATION,
    FINAL_CONTENT,
    MESSAGE_DENIED_BY,
    MESSAGE_DENIED_PHASE,
    MESSAGE_DENIED_REASON,
    POLICY_HALT,
)
from agent._run import durable
from agent._run.snapshot import AgentSnapshot
from agent.errors import BudgetExceededError, PolicyHaltError
from flowchart import Checkpoint, RunResult, failed_run, narrative
from governance import HUMAN_DECISIONS, MessageDeniedError
from governance.human import tell_latest

if TYPE_CHECKING:
    from agent._run.agent import Agent


class Segments:
    """Runs the segments of one agent's runs; holds the last one's snapshot."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        #: the ``agent.on`` listeners (a recorder of every segment while any is registered)
        self.events = EventBus()
        #: the last segment's snapshot (``Agent.last_snapshot``); None before the first
        self.last: AgentSnapshot | None = None

    def recorders(self, attach: Any = None) -> list[Any]:
        """The recorders of one run or resume: the narrative first (when on), the ``on``
        listeners, then ``Agent.create(recorders=)``; ``attach(recorders)`` may wrap or extend
        them (a stream's tap, ``agent._run.streaming``)."""
        agent = self.agent
        # agent events go to agent.on listeners; narrated, they would repeat the commits
        # the narrative tells each human answer in one sentence, right after its row is written
        notes = {HUMAN_DECISIONS: tell_latest, CONVERSATION: conversation_turns.tell}
        notes.update(structured.notes(agent.config.output))
        found: list[Any] = [narrative(include_emits=False, notes=notes)] if agent.narrative else []
        if self.events.active:
            found.append(self.events)
        found.extend(agent.recorders)
        return found if attach is None else attach(found)

    def options(self, recorders: list[Any], env: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The keyword arguments of ``agent.chart.arun`` / ``aresume`` for one segment of a run."""
        agent = self.agent
        options: dict[str, Any] = {} if env is None else {"env": dict(env)}
        options.update(
            recorders=recorders,
            max_iterations=agent.config.loop_limit,
            timeout=agent.timeout,
            redaction=agent.recorded_redaction,
        )
        return options

    async def arun_turn(self, run_input: dict[str, Any], attach: Any = None, run_id: str | None = None) -> str | Paused:
        """One turn on a checked ``run_input`` (``durable.make_input``); ``attach(recorders)`` adds
        a stream's tap to the recorders; ``run_id`` names the stored run (with a store)."""
        agent = self.agent
        if agent.store is not None:
            return await durable.start(agent, run_input, run_id, attach=attach)
        recorders = self.recorders(attach)
        with self.failures_kept(recorders):
            result = await agent.chart.arun(run_input, **self.options(recorders))
        return self.finish(result, recorders)

    async def aresume_turn(self, checkpoint: Checkpoint, resume_input: Any) -> str | Paused:
        """Resume a paused turn (no store) with an answer already checked
        (``Agent.checked_resume_input``)."""
        recorders = self.recorders()
        with self.failures_kept(recorders):
            result = await self.agent.chart.aresume(checkpoint, resume_input, **self.options(recorders))
        return self.finish(result, recorders)

    def finish(self, result: RunResult, recorders: list[Any]) -> str | Paused:
        """What a run segment ends in: keep it as ``last_snapshot()``, then raise its refusal
        (``MessageDeniedError``, ``PolicyHaltError``) or return ``Paused`` or the final answer."""
        agent = self.agent
        if agent.config.effect_ledger is not None:  # the receipts kept for later: written as the segment ends
            agent.config.effect_ledger.flush()
        if agent.store is None and CONVERSATION in result.state:
            agent.conversation_book.settle(result)  # an in-memory conversation turn ended or paused
        self._keep(result, recorders)
        state = result.state
        if MESSAGE_DENIED_PHASE in state:
            raise MessageDeniedError(
                state[MESSAGE_DENIED_REASON], state[MESSAGE_DENIED_PHASE], state[MESSAGE_DENIED_BY]
            )
        if POLICY_HALT in state:
            halt = state[POLICY_HALT]
            raise PolicyHaltError(halt["reason"], halt["tool_name"], halt["tool_call_id"])
        if BUDGET_STATE in state and not result.paused:
            stopped = _budget_stop(state[BUDGET_STATE])
            if stopped is not None:
                raise BudgetExceededError(stopped)
        if result.paused:
            assert result.checkpoint is not None
            return paused_from(result.checkpoint)
        if agent.config.output is not None:
            return structured.final_answer(agent.config.output, state)
        return str(state.get(FINAL_CONTENT, ""))

    @contextlib.contextmanager
    def failures_kept(self, recorders: list[Any]) -> Iterator[None]:
        """Around a run segment: when it fails, its partial result (``failed_run``) becomes
        ``last_snapshot()`` before the error goes on — a failed run is a run too."""
        try:
            yield
        except Exception as exc:
            ledger = self.agent.config.effect_ledger
            if ledger is not None:  # the receipts of the calls that returned before it failed
                with contextlib.suppress(Exception):  # unwritten, those calls stay in doubt: the error goes on
                    ledger.flush()
            found = failed_run(exc)
            if found is not None:
                self._keep(found[0], recorders)
            raise

    def _keep(self, result: RunResult, recorders: list[Any]) -> None:
        # the narrative is worded when last_snapshot().narrative is first read, not here
        lines = recorders[0].lines if self.agent.narrative else []
        self.last = AgentSnapshot(result.state, result.commit_log, lines, result)


def _budget_stop(budget: Any) -> dict[str, Any] | None:
    """The overrun that ended the run (its last budget decision stopped it, or a person declined)."""
    decisions = budget.get("decisions") or []
    if not decisions:
        return None
    last = decisions[-1]
    if last.get("decision") == "stopped":
        return dict(last)
    if last.get("decision") == "declined":
        paused = [d for d in decisions if d.get("decision") == "paused"]
        return dict(paused[-1]) if paused else dict(last)
    return None
