"""A turn's plan (``conversations.plan_turn``) is what its law says whatever path computes it:
the window of done turns with no budget is kept without a loop per turn (C1000, issue 30), and
gives exactly the plan the turn-by-turn rule gives — messages, sources, omissions, spend — for
any mix of done, failed and size-only turns, windows and budgets."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent._chart.conversation_turns import Turn
from agent._run import conversations
from agent._run.conversations import HistoryPolicy, plan_turn


def _reference(conversation: str, latest: int, turns: list[Turn], policy: HistoryPolicy) -> dict[str, Any]:
    """The plan, one turn at a time (the rule as first written): newest first, whole turns."""
    first = 1 if policy.window is None else latest - policy.window + 1
    kept: list[Turn] = []
    omitted: list[dict[str, Any]] = []
    budget, full = policy.chars, False
    for turn in reversed([t for t in turns if t.turn >= first]):
        if turn.status != "done":
            omitted.append({"turn": turn.turn, "run_id": turn.run_id, "reason": f"turn {turn.status}"})
        elif budget is not None and (full or turn.chars > budget):
            full = True
            omitted.append(
                {
                    "turn": turn.turn,
                    "run_id": turn.run_id,
                    "messages": turn.count,
                    "chars": turn.chars,
                    "reason": f"conversation_chars={policy.chars}",
                }
            )
        else:
            if turn.size is not None:
                raise conversations._NotLoaded(turn.turn)
            kept.append(turn)
            budget = None if budget is None else budget - turn.chars
    if first > 1:
        span = "1" if first == 2 else f"1-{first - 1}"
        omitted.append({"turn": 1, "turns": span, "reason": f"conversation_window={policy.window}"})
    kept.reverse()
    omitted.sort(key=lambda o: int(o["turn"]))
    messages = [m for t in kept for m in t.messages]
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
    spent = [t.spent for t in turns if t.status == "done" and t.spent is not None]
    if spent:
        plan["spent_before"] = spent[-1]
    return plan


@st.composite
def conversations_so_far(draw: Any) -> list[Turn]:
    """Turns 1..n: done (one to three messages, maybe a recorded spend, maybe known by size only) or failed."""
    turns = []
    for n in range(1, draw(st.integers(0, 12)) + 1):
        if draw(st.integers(0, 5)) == 0:
            turns.append(Turn(n, f"r{n}", "failed"))
            continue
        count = draw(st.integers(1, 3))
        messages = tuple({"role": "user", "content": "x" * draw(st.integers(0, 9))} for _ in range(count))
        spent = draw(st.none() | st.just({"usd": f"0.0{n}", "tokens": n, "calls": 1}))
        size = (count, draw(st.integers(0, 20))) if draw(st.integers(0, 7)) == 0 else None
        turns.append(
            Turn(n, f"r{n}", "done", () if size else messages, () if size else (0,) * count, size=size, spent=spent)
        )
    return turns


def _outcome(turns: list[Turn], policy: HistoryPolicy, plan: Any) -> Any:
    try:
        return plan("c", len(turns), turns, policy)
    except conversations._NotLoaded:
        return "read turn by turn"


@settings(max_examples=400, deadline=None)
@given(
    turns=conversations_so_far(),
    window=st.none() | st.integers(0, 14),
    chars=st.none() | st.integers(0, 40),
)
def test_property_the_plan_is_the_turn_by_turn_rule(turns: list[Turn], window: int | None, chars: int | None) -> None:
    """Any conversation so far and any policy: the plan (or the need to read turn by turn, for a
    turn known only by its size) is the one the turn-by-turn rule makes."""
    policy = HistoryPolicy(window, chars)
    assert _outcome(turns, policy, plan_turn) == _outcome(turns, policy, _reference)


def test_a_whole_history_plan_keeps_every_done_turn_in_order() -> None:
    """Three done turns and no policy: every message, oldest first, each turn a source."""
    turns = [Turn(n, f"r{n}", "done", ({"role": "user", "content": f"m{n}"},), (0,)) for n in (1, 2, 3)]
    plan = plan_turn("c", 3, turns, HistoryPolicy())
    assert [m["content"] for m in plan["history"]] == ["m1", "m2", "m3"]
    assert plan["loaded_turns"] == [1, 2, 3] and "omitted" not in plan
    with pytest.raises(conversations.ConversationBusyError, match=r"turn 4 \(run r4\) is still running"):
        plan_turn("c", 4, [*turns, Turn(4, "r4", "running")], HistoryPolicy())
