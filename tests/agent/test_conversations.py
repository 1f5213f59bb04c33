"""Conversations without a store: turns live in the agent's memory; follow_up; the history
policy; pauses block; bad ids and policies are refused before any model call."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).parent.parent / "store"))
from chat_agent import Recall, chat_agent

from agent import AgentBuildError, ConversationBusyError, ConversationError, NoConversationError, Paused
from agent._chart.conversation_turns import turn_from_log
from agent._edge.explain import explain_answer
from flowchart import Commit
from flowchart._core.commits import Op
from governance import check_in_approved


def test_turn_two_sees_turn_one_in_memory_and_follow_up_continues() -> None:
    """Without a store, turn 2 (run or follow_up) is sent turn 1's messages, tool call and result included."""
    bot = Recall()
    agent = chat_agent(provider=bot)
    assert agent.run("weather in Oslo", conversation="c") == "It is sunny in Oslo"
    assert agent.follow_up("thanks") == "reply 2 (saw 5 messages)"
    assert [m["role"] for m in bot.requests[-1].messages] == ["user", "assistant", "tool", "assistant", "user"]
    assert agent.follow_up("more") == "reply 3 (saw 7 messages)"
    meta = agent.last_snapshot().shared_state["conversation"]
    assert (meta["id"], meta["turn"], meta["loaded_turns"], meta["messages"]) == ("c", 3, [1, 2], 6)


def test_follow_up_before_any_conversation_is_refused() -> None:
    """follow_up with no earlier conversation turn raises NoConversationError (agentfootprint's
    followUp refuses too), before any model call; a plain run does not start a conversation."""
    bot = Recall()
    agent = chat_agent(provider=bot)
    with pytest.raises(NoConversationError, match=r"no conversation to continue yet: start one with agent.run"):
        agent.follow_up("hello")
    agent.run("hi")
    with pytest.raises(NoConversationError):
        agent.follow_up("hello")
    assert len(bot.requests) == 1


def test_without_conversation_a_run_writes_nothing_new() -> None:
    """A run without conversation= has no conversation key and a one-message history, as before."""
    agent = chat_agent()
    agent.run("hi")
    state = agent.last_snapshot().shared_state
    assert "conversation" not in state and state["history"] == [{"role": "user", "content": "hi"}]
    assert not any("conversation" in line for line in agent.last_snapshot().narrative)


def test_conversations_are_separate_and_the_last_one_is_followed_up() -> None:
    """Two conversation ids keep separate histories; follow_up continues the one used last."""
    bot = Recall()
    agent = chat_agent(provider=bot)
    agent.run("a1", conversation="a")
    agent.run("b1", conversation="b")
    agent.follow_up("b2")
    assert [m["content"] for m in bot.requests[-1].messages] == ["b1", "reply 1 (saw 1 messages)", "b2"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"conversation": ""}, r"conversation='': expected an id of 1-200 characters"),
        ({"conversation": 42}, r"conversation=42: expected an id"),
        ({"conversation": "c", "conversation_window": -1}, r"conversation_window=-1: expected a whole number >= 0"),
        ({"conversation": "c", "conversation_chars": "9"}, r"conversation_chars='9': expected a whole number"),
        ({"conversation_window": 2}, r"conversation_window=/conversation_chars= bound a conversation's history"),
    ],
)
def test_bad_conversation_settings_are_refused_before_any_model_call(kwargs: dict[str, Any], message: str) -> None:
    """A bad id or policy is a ConversationError naming it; the model is never called."""
    bot = Recall()
    with pytest.raises(ConversationError, match=message):
        chat_agent(provider=bot).run("hi", **kwargs)
    assert bot.requests == []


def test_a_bad_policy_on_agent_create_is_a_build_error() -> None:
    """Agent.create(conversation_window=0.5) is refused by build() naming the setting."""
    with pytest.raises(AgentBuildError, match=r"conversation_window=0.5: expected a whole number"):
        chat_agent(conversation_window=0.5)


def test_a_per_run_window_overrides_the_agents_default() -> None:
    """Agent.create(conversation_window=1) sends one earlier turn; a run's conversation_window=0 sends none."""
    bot = Recall()
    agent = chat_agent(provider=bot, conversation_window=1)
    for text in ("one", "two", "three"):
        agent.run(text, conversation="c")
    assert [m["content"] for m in bot.requests[-1].messages] == ["two", "reply 2 (saw 3 messages)", "three"]
    agent.run("four", conversation="c", conversation_window=0)
    assert [m["content"] for m in bot.requests[-1].messages] == ["four"]
    assert agent.last_snapshot().shared_state["conversation"]["omitted"] == [
        {"turn": 1, "turns": "1-3", "reason": "conversation_window=0"}
    ]


def test_a_paused_turn_in_memory_blocks_until_resumed_then_its_result_is_history() -> None:
    """An in-memory turn paused at a check-in refuses the next turn; after agent.resume the next
    turn sees the approved tool result, with the commits of the resumed run counted on."""
    bot = Recall()
    agent = chat_agent(provider=bot)
    paused = agent.run("weather in Paris", conversation="c")
    assert isinstance(paused, Paused) and paused.check_in is not None
    with pytest.raises(ConversationBusyError, match=r"conversation 'c' turn 1 \(run \w+\) is paused waiting") as err:
        agent.follow_up("hello?")
    assert (err.value.conversation_id, err.value.turn) == ("c", 1)
    assert (
        agent.resume(paused.checkpoint, check_in_approved(request=paused.check_in, by="al")) == "It is sunny in Paris"
    )
    agent.follow_up("thanks")
    assert [m["role"] for m in bot.requests[-1].messages] == ["user", "assistant", "tool", "assistant", "user"]
    sources = agent.last_snapshot().shared_state["conversation"]["sources"]
    assert sources[0]["commits"] == [0, 3, 5, 8]


def test_a_failed_turn_is_left_out_and_recorded() -> None:
    """A turn whose model call raised contributes nothing; the next turn records it as left out."""

    class Flaky(Recall):
        def complete(self, req: Any) -> Any:
            if req.messages[-1]["content"] == "boom":
                raise RuntimeError("provider down")
            return super().complete(req)

    bot = Flaky()
    agent = chat_agent(provider=bot)
    agent.run("one", conversation="c")
    with pytest.raises(RuntimeError, match="provider down"):
        agent.run("boom", conversation="c")
    agent.run("three", conversation="c")
    assert [m["content"] for m in bot.requests[-1].messages] == ["one", "reply 1 (saw 1 messages)", "three"]
    (left,) = agent.last_snapshot().shared_state["conversation"]["omitted"]
    assert (left["turn"], left["reason"]) == (2, "turn failed")


def test_arun_and_astream_take_a_conversation() -> None:
    """arun and astream run conversation turns too; the streamed final result is the answer."""
    bot = Recall()
    agent = chat_agent(provider=bot)

    async def go() -> list[Any]:
        first = await agent.arun("one", conversation="c")
        events = [event async for event in agent.astream("two", conversation="c")]
        return [first, events[-1].result]

    assert asyncio.run(go()) == ["reply 1 (saw 1 messages)", "reply 2 (saw 3 messages)"]
    assert [event.kind for event in agent.stream("three", conversation="c")][-1] == "final"
    assert [m["content"] for m in bot.requests[-1].messages][-1] == "three" and len(bot.requests[-1].messages) == 5


def test_explain_labels_earlier_turns_in_memory() -> None:
    """explain_answer of turn 2 marks turn 1's messages with turn 1 and its run id."""
    agent = chat_agent()
    agent.run("weather in Oslo", conversation="c")
    first_run = agent.last_snapshot().result.run_id
    agent.follow_up("thanks")
    sent = explain_answer(agent.last_snapshot().result).sent
    assert [(m.from_turn, m.from_run) for m in sent if m.role != "system"] == [(1, first_run)] * 4 + [(None, None)]


def _commit(idx: int, value: Any) -> Commit:
    return Commit.from_dict(
        {
            "idx": idx,
            "stage": "S",
            "stage_id": "s",
            "runtime_stage_id": f"s#{idx}",
            "trace": [{"verb": "set", "path": ["history"], "value": value}],
        }
    )


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["role", "content", "tool_calls", "tool_call_id", "x"]), inner, max_size=4
            )
            | st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant", "tool", "system"]), "content": inner}
            )
        ),
        max_leaves=20,
    ),
    final=st.none() | st.text(max_size=5) | st.integers(),
)
def test_fuzz_a_turns_record_loads_or_is_refused_with_conversation_error(value: Any, final: Any) -> None:
    """Whatever a stored turn's history (and answer) holds, reading it gives checked messages
    of the known shapes, or one ConversationError naming the turn and run."""
    log = [_commit(0, value)]
    if final is not None:
        log.append(attrs.evolve(_commit(1, None), trace=(Op(("final_content",), "set", final),)))
    try:
        turn = turn_from_log(log, run_id="r", turn=1, status="done")
    except ConversationError as exc:
        assert "conversation turn 1 (run 'r')" in str(exc)
        return
    for message in turn.messages:
        assert message["role"] in ("user", "assistant", "tool") and isinstance(message["content"], str)


def test_a_turn_still_running_in_this_process_blocks_the_next_one() -> None:
    """While a turn runs (here: its model call sends the next turn from inside), the next
    turn of the same conversation is refused with ConversationBusyError."""
    refused: list[str] = []

    class Reentrant(Recall):
        def complete(self, req: Any) -> Any:
            if not refused:
                try:
                    agent.run("meanwhile", conversation="c")
                except ConversationBusyError as exc:
                    refused.append(str(exc))
            return super().complete(req)

    agent = chat_agent(provider=Reentrant())
    assert agent.run("first", conversation="c") == "reply 1 (saw 1 messages)"
    assert refused == [
        "conversation 'c' turn 1 (this process) is still running: wait for it to end before sending turn 2"
    ]


def test_a_redaction_hiding_the_history_is_refused_and_hidden_fields_stay_hidden() -> None:
    """Later turns load the record: a redaction hiding 'history' itself is refused before any
    model call (the conversation could not be continued); fields hidden inside the messages
    reach later turns as the placeholder, never as the real text."""
    from flowchart import Redaction

    bot = Recall()
    with pytest.raises(ConversationError, match=r"the agent's redaction hides 'history' in the record"):
        chat_agent(provider=bot, redaction=Redaction(keys={"history"})).run("hi", conversation="c")
    assert bot.requests == []
    agent = chat_agent(provider=bot, redaction=Redaction(fields={"history": ["content"]}))
    agent.run("weather in Oslo", conversation="c")
    agent.follow_up("thanks")
    sent = bot.requests[-1].messages
    assert [m["content"] for m in sent[:3]] == ["REDACTED"] * 3 and sent[-1]["content"] == "thanks"
