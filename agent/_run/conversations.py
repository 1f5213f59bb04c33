"""Conversations: ``agent.run(message, conversation="c-42")`` — a chain of runs, one per turn.

Laws (DESIGN.md: "A conversation is a chain of runs"):
- Each turn is its own run, linked to its conversation by id and turn number (stored
  with the run when the agent has a store; in the agent's memory otherwise). Turn N's
  model sees every earlier turn's messages — user messages, assistant tool-call turns,
  tool results, final answers — as real history messages, read from the earlier turns'
  records (``conversation_turns``).
- The seed's commit that loads them writes ``conversation``: ``{id, turn, loaded_turns,
  messages, sources: [{turn, run_id, commits}], omitted: [...]}`` — where each loaded
  message came from (run id + commit index, which ``agent why`` follows across turns) and
  what the history policy left out, with why. Nothing is left out silently: the
  narrative says it too.
- The history policy (``conversation_window=`` last N turns, ``conversation_chars=`` a
  character budget) drops whole turns, oldest first, so a tool call is never sent
  without its result.
- A turn that is paused (a check-in waiting) or still running blocks a new turn of the
  same conversation with ``ConversationBusyError``, before anything is written. Two
  processes starting the same turn: the store's ``UNIQUE(conversation_id, turn)``
  decides; the loser gets ``ConversationBusyError`` and nothing of its turn is stored.
- A turn loads only its own conversation's turns, through the store's index: the latest
  turn's record holds the earlier turns it loaded, so under a steady policy one record is
  read (else the turns in the window, one record each). Its cost follows what it loads,
  not the size of the conversation's past or of the store.
- A stored turn first reads the index row of the newest turn (``store.latest_turn``); when
  that is the turn this agent stored last (same number, same run id, done), the turns come
  from memory (``StoredTurns``) and no record is read — as a later turn's record would give
  them. The turn's stored input names the turns it loads (numbers, runs, the message count),
  not their messages; the seed is handed them outside the record (``LOADED_ENV``) and its
  commit records them.
- Without ``conversation=`` nothing of this runs: the run is byte-identical to before.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from itertools import chain
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import attrs

from agent._chart.conversation_turns import (
    CONVERSATION,
    Turn,
    fold,
    named_plan,
    turn_from_log,
    turn_from_record,
    turns_through,
)
from agent._chart.state import CONVERSATION_INPUT, HISTORY, MESSAGE_DENIED_PHASE, POLICY_HALT
from agent.errors import ConversationBusyError, ConversationError, NoConversationError
from flowchart.store import TurnTakenError
from flowchart.store.protocol import TurnHead, latest_turn

if TYPE_CHECKING:
    from agent._run.agent import Agent

INPUT_KEY = CONVERSATION_INPUT
"""The run-input key carrying the loaded history and its provenance to the seed."""
_NUMBER, _STATUS, _SIZE, _MESSAGES = (
    attrgetter("turn"),
    attrgetter("status"),
    attrgetter("size"),
    attrgetter("messages"),
)
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,199}$")


@attrs.frozen
class HistoryPolicy:
    """What earlier turns a turn sends: the last ``window`` turns, within ``chars`` characters."""

    window: int | None = None
    chars: int | None = None

    @staticmethod
    def of(window: Any, chars: Any, default: HistoryPolicy | None = None) -> HistoryPolicy:
        """Checked settings (``None`` keeps ``default``'s); a clear error for a bad value."""
        for name, value in (("conversation_window", window), ("conversation_chars", chars)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ConversationError(f"{name}={value!r}: expected a whole number >= 0 (or None for no limit)")
        base = default or HistoryPolicy()
        return HistoryPolicy(base.window if window is None else window, base.chars if chars is None else chars)

    def describe(self) -> str:
        """The policy as its settings (``conversation_window=2``), for the record."""
        parts = [f"conversation_window={self.window}"] if self.window is not None else []
        parts += [f"conversation_chars={self.chars}"] if self.chars is not None else []
        return ", ".join(parts)


def check_id(conversation: Any) -> str:
    """The conversation id, or ``ConversationError`` saying what an id may be."""
    if not isinstance(conversation, str) or not _ID.match(conversation):
        raise ConversationError(
            f"conversation={conversation!r}: expected an id of 1-200 characters (letters, digits and ._:@/-, "
            "starting with a letter or digit), e.g. conversation='c-42'"
        )
    return conversation


# -- the turns so far ---------------------------------------------------------------------------
class ConversationBook:
    """The conversations of an agent without a store: turns kept in this process only."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: dict[str, list[Turn]] = {}
        self._paused: dict[tuple[str, int], tuple[int, tuple[int | None, ...]]] = {}

    def turns(self, conversation: str) -> list[Turn]:
        """The conversation's turns, oldest first."""
        with self._lock:
            return list(self._turns.get(conversation, ()))

    def claim(self, conversation: str, turn: int, run_id: str) -> None:
        """Reserve ``turn`` (``ConversationBusyError`` when another run holds it)."""
        with self._lock:
            turns = self._turns.setdefault(conversation, [])
            if len(turns) != turn - 1:
                raise ConversationBusyError(
                    f"conversation '{conversation}' turn {turn} was started by another run first: "
                    "send the message again as the next turn",
                    conversation,
                    turn,
                )
            turns.append(Turn(turn, run_id, "running"))

    def settle(self, result: Any, *, failed: bool = False) -> None:
        """Record what a turn's run (or resumed segment) ended with."""
        meta = result.state.get(CONVERSATION)
        if not isinstance(meta, dict):
            return
        cid, number = meta.get("id"), meta.get("turn")
        with self._lock:
            turns = self._turns.get(cid, []) if isinstance(cid, str) else []
            if not isinstance(cid, str) or not isinstance(number, int) or not 0 < number <= len(turns):
                return
            resumed = self._paused.pop((cid, number), None)
            offset, earlier = resumed if resumed is not None else (0, ())
            run_id = turns[number - 1].run_id if resumed is not None else result.run_id
            state = result.state
            if failed or MESSAGE_DENIED_PHASE in state or POLICY_HALT in state:
                turns[number - 1] = Turn(number, run_id, "failed")
            elif result.paused:
                _, origins, _ = fold(result.commit_log, result.initial_state if resumed else None, offset, earlier)
                self._paused[(cid, number)] = (offset + len(result.commit_log), tuple(origins))
                turns[number - 1] = Turn(number, run_id, "paused")
            else:
                turns[number - 1] = turn_from_log(
                    result.commit_log,
                    run_id=run_id,
                    turn=number,
                    status="done",
                    initial=result.initial_state if resumed else None,
                    offset=offset,
                    earlier=earlier,
                )

    def fail(self, conversation: str, turn: int) -> None:
        """Mark a turn whose run raised before it could settle as failed (it contributes nothing)."""
        with self._lock:
            turns = self._turns.get(conversation, [])
            if 0 < turn <= len(turns) and turns[turn - 1].status == "running":
                turns[turn - 1] = Turn(turn, turns[turn - 1].run_id, "failed")


class StoredTurns:
    """The turns of the stored conversations this agent ran a turn of, kept in this process
    (the newest ``LIMIT`` conversations): what the next turn loads without reading a record.

    Law: an entry is the conversation as it stood after a turn this process ran and stored
    (its messages are the ones the run committed, as a read of the records would give them).
    It is used only while the store's index still names that turn, by number and run id, as
    the newest (``latest_turn``): a turn another process ran, a turn that failed or paused,
    and anything newer make the next turn read the records again.
    """

    LIMIT = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: OrderedDict[str, tuple[int, str, tuple[Turn, ...]]] = OrderedDict()

    def get(self, conversation: str, head: TurnHead) -> list[Turn] | None:
        """The conversation's turns when the entry is still the store's newest turn, else ``None``."""
        with self._lock:
            entry = self._known.get(conversation)
            if entry is None or entry[0] != head.turn or entry[1] != head.run_id or head.status != "done":
                return None
            self._known.move_to_end(conversation)
            return list(entry[2])

    def put(self, conversation: str, turns: list[Turn]) -> None:
        """Keep ``turns`` (oldest first; the last one is the turn just stored)."""
        with self._lock:
            self._known[conversation] = (turns[-1].turn, turns[-1].run_id, tuple(turns))
            self._known.move_to_end(conversation)
            while len(self._known) > self.LIMIT:
                self._known.popitem(last=False)

    def drop(self, conversation: str) -> None:
        """Forget the conversation (its next turn reads the records)."""
        with self._lock:
            self._known.pop(conversation, None)


def as_loaded(turns: list[Turn], rule: Any) -> list[Turn] | None:
    """``turns`` as a later turn's record holds them once this turn loaded them: the newest one
    (read from its own record, its answer as the run ended) with what ``rule`` hides in the
    messages hidden, as the seed's commit recorded them; the older ones were already. ``None``
    when the rule does not keep the messages' shape (then nothing is remembered)."""
    if not turns or rule is None or not rule.active or turns[-1].status != "done" or turns[-1].size is not None:
        return turns
    newest = turns[-1]
    shown = rule.scrub_state({HISTORY: list(newest.messages)}).get(HISTORY)
    if not isinstance(shown, list) or len(shown) != len(newest.messages):
        return None
    return [*turns[:-1], attrs.evolve(newest, messages=tuple(shown))]


def stored_plan(
    store: Any, conversation: str, policy: HistoryPolicy, cache: StoredTurns | None = None
) -> tuple[dict[str, Any], list[Turn]]:
    """The next turn's plan from the store, and the turns it was planned from. Fastest path:
    the newest turn in the store's index is the one ``cache`` holds (this process stored it):
    no record is read. Fast path: the latest turn's record alone holds the earlier turns it
    loaded, so when those cover what ``policy`` asks for (the same or a narrower policy),
    nothing else is read. Otherwise the turns in the window are read one record each (all
    turns when there is no window)."""
    head = latest_turn(store, conversation)
    if head is None:
        return plan_turn(conversation, 0, [], policy), []
    if head.status in ("paused", "running"):
        return plan_turn(conversation, head.turn, [Turn(head.turn, head.run_id, head.status)], policy), []
    cached = None if cache is None else cache.get(conversation, head)
    if cached is not None:
        planned = _covering(conversation, head.turn, cached, policy)
        if planned is not None:
            return planned, cached
    latest = _turns(store, conversation, 1)[0]
    if latest.status in ("paused", "running"):  # it moved on since the index was read
        return plan_turn(conversation, latest.turn, [Turn(latest.turn, latest.run_id, latest.status)], policy), []
    through = turns_through(latest)
    if through is not None:
        turns, _meta = through
        planned = _covering(conversation, latest.turn, turns, policy)
        if planned is not None:
            return planned, turns
    limit = None if policy.window is None else max(policy.window, 1)
    records = _turns(store, conversation, limit)
    turns = [turn_from_record(r) for r in reversed(records)]
    return plan_turn(conversation, int(records[0].turn), turns, policy), turns


def _covering(conversation: str, latest: int, turns: list[Turn], policy: HistoryPolicy) -> dict[str, Any] | None:
    """The plan from ``turns`` when they hold every turn ``policy`` may send, else ``None``."""
    first = 1 if policy.window is None else latest - policy.window + 1
    if not set(map(_NUMBER, turns)).issuperset(range(max(first, 1), latest + 1)):
        return None
    try:
        return plan_turn(conversation, latest, [t for t in turns if t.turn >= first], policy)
    except _NotLoaded:
        return None  # the policy wants a turn known only by its size: read turn by turn


def _turns(store: Any, conversation: str, limit: int | None) -> list[Any]:
    """The conversation's newest turns; an unreadable one fails the turn (a conversation never
    goes on without a turn it cannot read, as a listing may)."""
    records = store.list(conversation=conversation, limit=limit)
    for error in getattr(records, "unreadable", ()):
        raise error
    return list(records)


class _NotLoaded(ConversationError):
    """The plan would send a turn known only by its size (read it from its own record)."""


# -- planning a turn ----------------------------------------------------------------------------
def plan_turn(conversation: str, latest: int, turns: list[Turn], policy: HistoryPolicy) -> dict[str, Any]:
    """The ``conversation`` run input of the next turn: the history to load and its provenance
    (``ConversationBusyError`` when the latest turn has not finished)."""
    if turns and turns[-1].turn == latest and turns[-1].status in ("paused", "running"):
        last = turns[-1]
        waiting = (
            "is paused waiting for an answer: answer it (agent.resume_run(run_id, decision), "
            f"or `agent runs approve {last.run_id}`)"
            if last.status == "paused"
            else "is still running: wait for it to end"
        )
        where = f"run {last.run_id}" if last.run_id else "this process"
        raise ConversationBusyError(
            f"conversation '{conversation}' turn {last.turn} ({where}) {waiting} before sending turn {latest + 1}",
            conversation,
            last.turn,
            last.run_id,
        )
    first = 1 if policy.window is None else latest - policy.window + 1
    kept: list[Turn] = []
    omitted: list[dict[str, Any]] = []
    budget, full = policy.chars, False
    window = [t for t in turns if t.turn >= first] if first > 1 else turns  # turns are numbered from 1
    if budget is None and list(map(_STATUS, window)).count("done") == len(window):
        # every turn in the window done and no budget: the loop below would keep them all
        if list(map(_SIZE, window)).count(None) != len(window):
            raise _NotLoaded(next(t.turn for t in reversed(window) if t.size is not None))
        kept, window = window[::-1], []
    for turn in reversed(window):
        if turn.status != "done":
            omitted.append({"turn": turn.turn, "run_id": turn.run_id, "reason": f"turn {turn.status}"})
        elif budget is not None and (full or turn.chars > budget):
            full = True  # whole turns, newest first: once one does not fit, the older ones are out too
            omitted.append(_left_out(turn, f"conversation_chars={policy.chars}"))
        else:
            if turn.size is not None:
                raise _NotLoaded(turn.turn)
            kept.append(turn)
            budget = None if budget is None else budget - turn.chars
    if first > 1:
        span = "1" if first == 2 else f"1-{first - 1}"
        omitted.append({"turn": 1, "turns": span, "reason": f"conversation_window={policy.window}"})
    kept.reverse()
    omitted.sort(key=lambda o: int(o["turn"]))
    messages = list(chain.from_iterable(map(_MESSAGES, kept)))
    plan: dict[str, Any] = {
        "id": conversation,
        "turn": latest + 1,
        "loaded_turns": [t.turn for t in kept],
        "messages": len(messages),
        "sources": [{"turn": t.turn, "run_id": t.run_id, "commits": list(t.commits)} for t in kept],
        "history": messages,
    }
    if omitted:
        plan["omitted"] = omitted
    spent = next((t.spent for t in reversed(turns) if t.status == "done" and t.spent is not None), None)
    if spent is not None:  # what the conversation spent before this turn (a per-conversation budget reads it)
        plan["spent_before"] = spent
    return plan


def _left_out(turn: Turn, reason: str) -> dict[str, Any]:
    return {"turn": turn.turn, "run_id": turn.run_id, "messages": turn.count, "chars": turn.chars, "reason": reason}


# -- running a turn -----------------------------------------------------------------------------
def turn_options(agent: Agent, conversation: Any, window: Any, chars: Any) -> tuple[str, HistoryPolicy] | None:
    """(id, policy) of a conversation turn, checked before anything runs; ``None`` without one."""
    if conversation is None:
        if window is not None or chars is not None:
            raise ConversationError(
                "conversation_window=/conversation_chars= bound a conversation's history: pass conversation='id' too"
            )
        return None
    if agent.redaction is not None and agent.redaction.hides(HISTORY):
        raise ConversationError(
            "conversation=: the agent's redaction hides 'history' in the record, and a later turn loads the "
            "conversation from the record; hide fields inside the messages instead "
            "(Redaction(fields={'history': ['content']})), or run without conversation="
        )
    return check_id(conversation), HistoryPolicy.of(window, chars, agent.history_policy)


def last(agent: Agent) -> str:
    """The conversation ``follow_up`` continues (``NoConversationError`` when there is none)."""
    if agent.last_conversation is None:
        raise NoConversationError(
            "follow_up(): this agent has no conversation to continue yet: start one with "
            "agent.run(message, conversation='some-id')"
        )
    return agent.last_conversation


async def arun(
    agent: Agent,
    run_input: dict[str, Any],
    conversation: Any,
    policy: HistoryPolicy,
    attach: Any = None,
    run_id: str | None = None,
) -> Any:
    """Run ``run_input`` as the next turn of ``conversation`` (see the module laws)."""
    from agent._run import durable

    cid = check_id(conversation)
    if agent.store is not None:
        record, turns, loaded = _queued(agent, run_input, cid, policy, run_id)
        cache: StoredTurns = agent.stored_turns
        cache.drop(cid)  # until this turn is stored done

        def landed(result: Any) -> None:
            if not result.paused and record.turn is not None:
                own = turn_from_log(result.commit_log, run_id=record.run_id, turn=record.turn, status="done")
                loaded = as_loaded(turns, agent.recorded_redaction)
                if loaded is not None:
                    cache.put(cid, [*loaded, own])

        return await durable.advance_run(agent, record.run_id, attach, known=record, landed=landed, loaded=loaded)
    turns = agent.conversation_book.turns(cid)
    plan = plan_turn(cid, len(turns), turns, policy)
    run_input = {**run_input, INPUT_KEY: plan}
    agent.last_conversation = cid
    book = agent.conversation_book
    book.claim(cid, plan["turn"], "")  # the run's id is known when it settles
    try:
        return await agent.segments.arun_turn(run_input, attach)
    except BaseException:
        book.fail(cid, plan["turn"])
        raise


def queue(
    agent: Agent, run_input: dict[str, Any], conversation: Any, policy: HistoryPolicy, run_id: str | None = None
) -> str:
    """Record ``run_input`` as the next turn of ``conversation`` in the agent's store, queued
    (``running``, not yet started), and return its run id: what ``arun`` then advances in
    this process, and what ``agent.submit(..., conversation=)`` hands to the Celery workers.

    The turn's history is planned now, from the turns stored before it; a turn still running
    or paused blocks it, and of two processes queueing the same turn the store's unique
    ``(conversation, turn)`` lets one win (``ConversationBusyError`` for the other, nothing
    of its turn stored).
    """
    return _queued(agent, run_input, conversation, policy, run_id)[0].run_id


def _queued(
    agent: Agent, run_input: dict[str, Any], conversation: Any, policy: HistoryPolicy, run_id: str | None = None
) -> tuple[Any, list[Turn], dict[str, Any]]:
    """``queue``: the queued run's record, the turns its history was planned from, and its plan
    with the messages it loads (``history``). The stored input names the loaded turns (``sources``) and counts their
    messages; it does not carry them again (each turn's own record holds them): the seed is
    handed them (``LOADED_ENV``), in another process read back through the sources
    (``loaded_from_store``)."""
    from agent._run import durable

    cid = check_id(conversation)
    if agent.store is None:
        raise ConversationError(
            f"conversation '{cid}': a queued turn is a stored run: build the agent with a store "
            "(Agent.create(..., store=SqliteStore(path)))"
        )
    plan, turns = stored_plan(agent.store, cid, policy, agent.stored_turns)
    named = named_plan(plan)  # what the input keeps: the turns, named and counted
    agent.last_conversation = cid
    try:
        record = durable.create_record(agent, run_input, run_id, conversation=(cid, plan["turn"]), planned=named)
    except TurnTakenError as exc:
        raise ConversationBusyError(str(exc), cid, plan["turn"]) from None
    return record, turns, plan
