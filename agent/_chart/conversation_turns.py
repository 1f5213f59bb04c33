"""What one finished turn of a conversation said, read back from its record (untrusted).

Law: a turn's messages are derived from the turn's OWN commit log — never from a second
copy — so what a later turn loads is exactly what the record shows (with the run's
redaction already applied). A turn contributes the messages its run added to
``history`` (the user's message, each assistant tool-call turn, each tool result) and,
when it ended with an answer, that answer as an assistant message; each message keeps
the run id and the index of the commit that wrote it (its ORIGIN, which ``agent why``
follows across turns). A paused, running or failed turn contributes nothing.

Stored rows are untrusted: a history that is not a list of messages of the known shapes
(``user``/``assistant``/``tool`` with string content) is refused with
``ConversationError`` naming the run and what was wrong — it is never sent to a model.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from agent._chart.cost import usd_text
from agent._chart.state import CONVERSATION, FINAL_CONTENT, HISTORY, LLM_COST
from agent.errors import ConversationError
from flowchart import Commit
from flowchart.lowlevel import apply_commit, thaw

_ROLES = ("user", "assistant", "tool")
LOADED_ENV = "agent_conversation_loaded"
"""The env key carrying a stored turn's loaded messages to its seed (never recorded: the turn's
input names the turns they came from, ``sources``, and the seed's commit records them)."""


@attrs.frozen
class Turn:
    """One turn of a conversation: its run, status and (when done) the messages it added,
    each with the commit that wrote it (``None`` where the record cannot say)."""

    turn: int
    run_id: str
    status: str
    messages: tuple[dict[str, Any], ...] = ()
    commits: tuple[int | None, ...] = ()
    #: a turn known only by its size (a later turn's record left it out): (messages, chars)
    size: tuple[int, int] | None = None
    #: what the conversation had spent through this turn (``{"usd", "tokens", "calls"}``), when the
    #: turn's agent recorded cost (``agent._chart.spend``); None otherwise
    spent: dict[str, Any] | None = None

    @property
    def chars(self) -> int:
        """The characters this turn's messages cost in the history (content and tool calls)."""
        return self.size[1] if self.size is not None else sum(message_chars(m) for m in self.messages)

    @property
    def count(self) -> int:
        """How many messages the turn adds to the history."""
        return self.size[0] if self.size is not None else len(self.messages)


def message_chars(message: dict[str, Any]) -> int:
    """Characters of one message: its content plus its tool calls as JSON."""
    size = len(message.get("content") or "")
    if message.get("tool_calls"):
        size += len(json.dumps(message["tool_calls"], ensure_ascii=False, sort_keys=True))
    return size


def check_message(message: Any, where: str) -> dict[str, Any]:
    """One history message, checked and copied to its known keys (``ConversationError`` otherwise)."""
    if not isinstance(message, dict):
        raise ConversationError(f"{where}: expected a message object, got {type(message).__name__}")
    role, content = message.get("role"), message.get("content", "")
    if role not in _ROLES:
        raise ConversationError(f"{where}: unknown role {role!r} (expected user, assistant or tool)")
    if not isinstance(content, str):
        raise ConversationError(f"{where}: content must be a string, got {type(content).__name__}")
    out: dict[str, Any] = {"role": role, "content": content}
    if role == "assistant" and "tool_calls" in message:
        calls = message["tool_calls"]
        if not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("id"), str) and isinstance(c.get("name"), str) for c in calls
        ):
            raise ConversationError(f"{where}: tool_calls must be a list of {{id, name, args}} objects")
        out["tool_calls"] = calls
    if role == "tool":
        for key in ("tool_call_id", "tool_name"):
            if key in message:
                if not isinstance(message[key], str):
                    raise ConversationError(f"{where}: {key} must be a string")
                out[key] = message[key]
    return out


def loaded_count(state: dict[str, Any]) -> int:
    """How many history messages the turn's seed loaded from earlier turns (0 for none)."""
    meta = state.get(CONVERSATION)
    count = meta.get("messages", 0) if isinstance(meta, dict) else 0
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0


def fold(
    log: Sequence[Commit], initial: dict[str, Any] | None = None, offset: int = 0, earlier: tuple[int | None, ...] = ()
) -> tuple[dict[str, Any], list[int | None], int | None]:
    """(the state after ``log``, the commit index that wrote each history message, the commit
    that wrote ``final_content``). ``initial``/``offset``/``earlier``: a resumed segment's
    starting state, the number of commits before it and the origins already known."""
    state: dict[str, Any] = dict(initial or {})
    origins: list[int | None] = list(earlier)
    final_at: int | None = None
    for commit in log:
        apply_commit(state, commit)
        history = state.get(HISTORY)
        if isinstance(history, list):
            grown = len(history) - len(origins)
            if grown > 0:  # one step for the whole seed's write of a long history, not one a message
                origins.extend([offset + commit.idx] * grown)
            del origins[len(history) :]
        if any(op.path[:1] == (FINAL_CONTENT,) for op in commit.trace):
            final_at = offset + commit.idx
    return state, origins, final_at


def turn_from_log(
    log: Sequence[Commit],
    *,
    run_id: str,
    turn: int,
    status: str,
    initial: dict[str, Any] | None = None,
    offset: int = 0,
    earlier: tuple[int | None, ...] = (),
) -> Turn:
    """The ``Turn`` a run's commit log records (see ``fold`` for the resumed-segment arguments)."""
    if status != "done":
        return Turn(turn, run_id, status)
    state, origins, final_at = fold(log, initial, offset, earlier)
    where = f"conversation turn {turn} (run '{run_id}')"
    history = state.get(HISTORY)
    if not isinstance(history, list):
        raise ConversationError(f"{where}: its record holds no history list (got {type(history).__name__})")
    skip = loaded_count(state)
    messages = [check_message(m, f"{where}, message {i + 1}") for i, m in enumerate(history[skip:])]
    commits = origins[skip : skip + len(messages)]
    answer = state.get(FINAL_CONTENT)
    if isinstance(answer, str) and answer:
        messages.append({"role": "assistant", "content": answer})
        commits.append(final_at)
    return Turn(turn, run_id, status, tuple(messages), tuple(commits), spent=spent_through(state))


def spent_through(state: dict[str, Any]) -> dict[str, Any] | None:
    """What the conversation had spent by the end of the turn ``state`` is the end of: the
    ``spent_before`` its seed loaded plus its own ``llm_cost`` totals (None when it recorded no cost):
    ``{"usd", "tokens", "calls"}``, and ``unpriced`` (how many of the calls cost ``unknown``: ``usd``
    is the sum of the priced ones) when some did."""
    from decimal import Decimal, InvalidOperation

    meta = state.get(CONVERSATION)
    before = meta.get("spent_before") if isinstance(meta, dict) else None
    from agent._chart.spend import run_totals

    cost = state.get(LLM_COST)
    try:
        own = dict(run_totals(cost), usd=cost["run"]["usd"]) if isinstance(cost, dict) else None
    except (KeyError, TypeError, AttributeError):
        raise ConversationError("a turn's recorded llm_cost is malformed: cannot tell what it spent") from None
    if not isinstance(own, dict) and not isinstance(before, dict):
        return None
    usd, counts = Decimal(0), {"tokens": 0, "calls": 0}
    unpriced = 0
    for part in (before, own):
        if not isinstance(part, dict):
            continue
        found = part.get("unpriced", 0)
        found = len(found) if isinstance(found, list) else found
        if not isinstance(found, int) or isinstance(found, bool) or found < 0:
            raise ConversationError(f"a turn's recorded spend has a bad unpriced: {found!r}")
        unpriced += found
        try:
            usd += Decimal(str(part.get("usd", "0")))
        except InvalidOperation:
            raise ConversationError(f"a turn's recorded spend is not a number: {part.get('usd')!r}") from None
        tokens = part["tokens"] if "tokens" in part else part.get("input_tokens", 0) + part.get("output_tokens", 0)
        for key, value in (("tokens", tokens), ("calls", part.get("calls", 0))):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ConversationError(f"a turn's recorded spend has a bad {key}: {value!r}")
            counts[key] += value
    spent = {"usd": usd_text(usd), **counts}
    if unpriced:  # the calls whose cost is unknown (``usd`` is the priced calls' sum)
        spent["unpriced"] = unpriced
    return spent


def turns_through(record: Any) -> tuple[list[Turn], dict[str, Any]] | None:
    """The turns a finished turn's record holds: the earlier turns it loaded (their messages
    and origins, from its history and its ``conversation`` record), the turns it left out
    (a failed one, or one known by size), then its own — read from ONE record, so the next
    turn costs what it loads. ``None`` when the record cannot say (then read turn by turn)."""
    if record.status != "done" or not isinstance(record.turn, int):
        return None
    state, origins, final_at = fold(record.commit_log)
    meta = state.get(CONVERSATION)
    history = state.get(HISTORY)
    if not isinstance(meta, dict) or not isinstance(history, list) or not isinstance(meta.get("sources"), list):
        return None
    where = f"conversation turn {record.turn} (run '{record.run_id}')"
    turns: list[Turn] = []
    at = 0
    for source in meta["sources"]:
        commits = source.get("commits") if isinstance(source, dict) else None
        if not isinstance(commits, list) or not isinstance(source.get("turn"), int) or at + len(commits) > len(history):
            raise ConversationError(f"{where}: its 'conversation' record does not match its history")
        part = history[at : at + len(commits)]
        messages = tuple(check_message(m, f"{where}, loaded message {at + i + 1}") for i, m in enumerate(part))
        idx = tuple(c if isinstance(c, int) and not isinstance(c, bool) else None for c in commits)
        turns.append(Turn(source["turn"], str(source.get("run_id")), "done", messages, idx))
        at += len(commits)
    for left in meta.get("omitted") or ():
        if isinstance(left, dict) and isinstance(left.get("turn"), int) and "run_id" in left:
            if left.get("reason") == "turn failed":
                turns.append(Turn(left["turn"], str(left["run_id"]), "failed"))
            elif isinstance(left.get("messages"), int) and isinstance(left.get("chars"), int):
                size = (left["messages"], left["chars"])
                turns.append(Turn(left["turn"], str(left["run_id"]), "done", size=size))
    turns.append(turn_from_log(record.commit_log, run_id=record.run_id, turn=record.turn, status="done"))
    turns.sort(key=lambda t: t.turn)
    del origins, final_at
    return turns, meta


def turn_from_record(record: Any) -> Turn:
    """The ``Turn`` a stored conversation run records (``ConversationError`` for a bad row)."""
    if not isinstance(record.turn, int):
        raise ConversationError(f"run '{record.run_id}' is not a conversation turn")
    return turn_from_log(record.commit_log, run_id=record.run_id, turn=record.turn, status=record.status)


def transcript_lines(turns: Sequence[Turn], records: Sequence[Any] = ()) -> list[str]:
    """The conversation as text: a heading per turn, one line per message."""
    by_turn = {getattr(r, "turn", None): r for r in records}
    lines: list[str] = []
    for turn in turns:
        lines.append(f"turn {turn.turn} · run {turn.run_id} · {turn.status}")
        record = by_turn.get(turn.turn)
        if turn.status != "done":
            message = getattr(record, "input", {}).get("input_message") if record is not None else None
            if isinstance(message, str):
                lines.append(f"  user: {message}")
            continue
        for message, idx in zip(turn.messages, turn.commits, strict=True):
            where = f"  [commit {idx}]" if idx is not None else ""
            lines.append(f"  {_message_line(message)}{where}")
    return lines


def _message_line(message: dict[str, Any]) -> str:
    role, content = message["role"], message.get("content", "")
    if role == "tool":
        return f"tool {message.get('tool_name', '?')} [{message.get('tool_call_id', '?')}]: {content}"
    calls = message.get("tool_calls")
    if role == "assistant" and calls:
        asked = ", ".join(f"{c['name']}({json.dumps(c.get('args'), ensure_ascii=False)})" for c in calls)
        return f"assistant → {asked}" + (f" ({content})" if content else "")
    return f"{role}: {content}"


# -- what the seed loaded: read by the seed stage, the narrative, why and the viewer ----------------
def seed_parts(value: Any, given: Any = None) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
    """(the loaded messages, the ``conversation`` record, whether both were built in this process)
    of a turn whose run input's ``conversation`` is ``value`` (as ``ctx.args`` holds it).

    A stored turn's input names its loaded turns without their messages (``sources`` and the
    ``messages`` count); ``given`` is the plan with its messages (``history``), handed to the
    seed outside the record (``LOADED_ENV``) by whoever read them — checked already. It must be
    this turn's plan, with as many messages as the input says. An input that carries its
    ``history`` itself (an unstored turn, or one stored before inputs named their turns) is
    thawed and checked here."""
    if isinstance(value, Mapping) and "history" not in value:
        count = value.get("messages")
        if (
            not isinstance(given, dict)
            or not isinstance(given.get("history"), list)
            or given.get("id") != value.get("id")
            or given.get("turn") != value.get("turn")
            or len(given["history"]) != count
        ):
            raise ConversationError(
                f"conversation turn {value.get('turn')}: the {count} loaded message(s) its input names were not "
                "given to the run (advance it through the agent: agent.resume_run(run_id))"
            )
        return given["history"], {k: v for k, v in given.items() if k != "history"}, True
    value = thaw(value)
    if not isinstance(value, dict) or not isinstance(value.get("history"), list):
        raise ConversationError("the run input's 'conversation' must be an object with a 'history' list")
    history = [check_message(m, f"conversation history message {i + 1}") for i, m in enumerate(value["history"])]
    meta = {k: v for k, v in value.items() if k != "history"}
    return history, meta, False


def tell(meta: Any) -> str | None:
    """The narrative's sentence for the ``conversation`` write: what was loaded, what left out."""
    if not isinstance(meta, dict):
        return None
    loaded = meta.get("loaded_turns") or []
    turns = f"turn{'s' if len(loaded) != 1 else ''} {', '.join(map(str, loaded))}" if loaded else "no earlier turns"
    text = f"Turn {meta.get('turn')} of conversation '{meta.get('id')}' loaded {meta.get('messages')} message(s)"
    text += f" from {turns}"
    left = meta.get("omitted") or []
    if left:
        parts = [f"{_turns_text(o)} ({o.get('reason')})" for o in left if isinstance(o, dict)]
        text += f"; left out {'; '.join(parts)}"
    return text + "."


def _turns_text(omitted: dict[str, Any]) -> str:
    span = str(omitted.get("turns") or omitted.get("turn"))
    return f"turns {span}" if "-" in span else f"turn {span}"


def loaded_origin(state: dict[str, Any], index: int) -> tuple[int, str, int | None] | None:
    """(turn, run id, commit) of history message ``index`` (0-based) when an earlier turn wrote it."""
    meta = state.get(CONVERSATION)
    if not isinstance(meta, dict) or not isinstance(meta.get("sources"), list):
        return None
    at = 0
    for source in meta["sources"]:
        commits = source.get("commits") if isinstance(source, dict) else None
        if not isinstance(commits, list):
            return None
        if index < at + len(commits):
            idx = commits[index - at]
            return source.get("turn"), str(source.get("run_id")), idx if isinstance(idx, int) else None
        at += len(commits)
    return None


def named_plan(plan: dict[str, Any]) -> dict[str, Any]:
    """What a stored turn's input keeps of its plan: the turns it loads named — ``loaded_turns``
    and, beside them, their run ids (``runs``) — and counted (``messages``), what was left out,
    but not their messages nor each message's commit (the seed's ``conversation`` record has
    ``sources``; the turns' own records hold the messages)."""
    named = {k: v for k, v in plan.items() if k not in ("history", "sources")}
    named["runs"] = [source["run_id"] for source in plan["sources"]]
    return named


def loaded_from_store(store: Any, plan: Any) -> dict[str, Any] | None:
    """The plan a stored turn's input names (``named_plan``) with its ``sources`` and loaded
    messages (``history``) read back from the named turns' records — each checked, as many as
    the input says — or ``None`` for an input that carries its history itself (an unstored
    turn, or one stored before inputs named their turns) or is no conversation turn.
    ``ConversationError`` names a turn that no longer holds what the input says it gave."""
    if not isinstance(plan, dict) or "history" in plan:
        return None
    turns, runs = plan.get("loaded_turns"), plan.get("runs")
    if not isinstance(turns, list) or not isinstance(runs, list) or len(turns) != len(runs):
        return None
    where = f"conversation '{plan.get('id')}' turn {plan.get('turn')}"
    known: dict[Any, Turn] = {}
    if runs and isinstance(runs[-1], str):  # the newest loaded turn's record holds the ones it loaded
        through = turns_through(store.get(runs[-1]))
        known = {t.turn: t for t in through[0]} if through is not None else {}
    messages: list[dict[str, Any]] = []
    sources: list[dict[str, Any]] = []
    for number, run_id in zip(turns, runs, strict=True):
        if not isinstance(run_id, str) or type(number) is not int:
            raise ConversationError(f"{where}: its input names a loaded turn it cannot read ({number!r}, {run_id!r})")
        turn = known.get(number)
        if turn is None or turn.run_id != run_id or turn.size is not None:
            turn = turn_from_record(store.get(run_id))
        if turn.status != "done" or turn.turn != number:
            raise ConversationError(
                f"{where}: turn {number} (run '{run_id}') no longer holds the messages its input names"
            )
        messages.extend(turn.messages)
        sources.append({"turn": number, "run_id": run_id, "commits": list(turn.commits)})
    if len(messages) != plan.get("messages"):
        raise ConversationError(
            f"{where}: turn {turns[-1] if turns else '?'} (run '{runs[-1] if runs else '?'}') no longer holds the "
            f"messages its input names: its loaded turns hold {len(messages)} message(s), its input says "
            f"{plan.get('messages')}"
        )
    plan = {k: v for k, v in plan.items() if k != "runs"}
    return {**plan, "sources": sources, "history": messages}
