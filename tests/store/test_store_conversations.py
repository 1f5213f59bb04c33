"""Conversations on a run store (memory, SQLite, a real PostgreSQL): each turn is a stored run,
linked by (conversation id, turn); any process continues it; the store decides races."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from chat_agent import Recall, chat_agent
from old_schema import insert_old_run, schema_database

from agent import ConversationBusyError, Paused
from agent._edge.explain import explain_answer
from flowchart import replay
from flowchart.store import RunStore, SqliteStore, TurnTakenError
from flowchart.store.schema import SCHEMA_VERSION
from governance import check_in_approved

TURN_ONE = [
    {"role": "user", "content": "weather in Oslo"},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "call-1", "name": "weather", "args": {"city": "Oslo"}}]},
    {"role": "tool", "content": "sunny in Oslo", "tool_call_id": "call-1", "tool_name": "weather"},
    {"role": "assistant", "content": "It is sunny in Oslo"},
]


def seed_state(store: RunStore, run_id: str) -> dict:
    """The conversation record the run's seed commit wrote."""
    record = store.get(run_id)
    assert record.commit_log[0].stage_id == "seed"
    return replay(record.commit_log[:1])["conversation"]


def test_turn_two_in_another_process_sees_turn_one_as_real_messages(make_store: Callable[[], RunStore]) -> None:
    """Turn 1 runs on one agent/store view; a fresh agent on another view runs turn 2 and its
    model is sent turn 1's user message, tool-call turn, tool result and answer as messages."""
    assert chat_agent(make_store()).run("weather in Oslo", conversation="c-42") == "It is sunny in Oslo"
    bot = Recall()
    assert chat_agent(make_store(), bot).run("thanks", conversation="c-42") == "reply 2 (saw 5 messages)"
    assert bot.requests[0].messages == [*TURN_ONE, {"role": "user", "content": "thanks"}]


def test_each_turn_is_a_stored_run_linked_to_its_conversation(make_store: Callable[[], RunStore]) -> None:
    """Runs carry (conversation id, turn); list(conversation=) gives the turns newest first; the
    seed commit of turn 2 names the run and commits the loaded messages came from, and the
    conversation's spend so far."""
    store = make_store()
    agent = chat_agent(store)
    agent.run("weather in Oslo", conversation="c-42")
    agent.run("thanks", conversation="c-42")
    agent.run("unrelated", conversation="other")
    turns = store.list(conversation="c-42")
    assert [(r.conversation_id, r.turn, r.status) for r in turns] == [("c-42", 2, "done"), ("c-42", 1, "done")]
    first = turns[1]
    meta = seed_state(store, turns[0].run_id)
    assert meta == {
        "id": "c-42",
        "turn": 2,
        "loaded_turns": [1],
        "messages": 4,
        "sources": [{"turn": 1, "run_id": first.run_id, "commits": [0, 3, 3, 6]}],
        # cost is counted on every call: turn 1's two calls of an unpriced model, carried into turn 2
        "spent_before": {"calls": 2, "tokens": 0, "unpriced": 2, "usd": "0"},
    }
    log = first.commit_log
    assert replay(log[:4])["history"][1:3] == TURN_ONE[1:3] and replay(log[:3]).get("history") == TURN_ONE[:1]
    assert replay(log[:7])["final_content"] == "It is sunny in Oslo"


def test_agent_why_on_turn_three_reaches_the_tool_result_of_turn_one(make_store: Callable[[], RunStore]) -> None:
    """The explanation of turn 3's answer lists turn 1's tool result with turn 1's run id and the
    commit of that run that wrote it — and that commit did write it (the chain crosses turns)."""
    store = make_store()
    agent = chat_agent(store)
    agent.run("weather in Oslo", conversation="c-42")
    agent.run("thanks", conversation="c-42")
    agent.run("and now?", conversation="c-42")
    third, _, first = store.list(conversation="c-42")
    explanation = explain_answer(third)
    (tool,) = [m for m in explanation.sent if m.role == "tool"]
    assert (tool.from_turn, tool.from_run) == (1, first.run_id)
    assert tool.origin == f"turn 1: tool result of weather(city=Oslo) [call-1] (run {first.run_id}, commit 3)"
    assert tool.to_dict()["from_commit"] == 3
    written = first.commit_log[tool.from_commit]
    assert written.stage_id == "tool-calls"
    assert replay(first.commit_log[: tool.from_commit + 1])["history"][2] == TURN_ONE[2]


def test_a_window_leaves_out_old_turns_and_the_seed_commit_says_so(make_store: Callable[[], RunStore]) -> None:
    """conversation_window=1 sends only the last turn; the seed commit records turn 1 as left
    out by that policy and the narrative says it in a sentence."""
    store = make_store()
    agent = chat_agent(store)
    agent.run("weather in Oslo", conversation="c-1")
    agent.run("thanks", conversation="c-1")
    bot = Recall()
    chat_agent(make_store(), bot).run("third", conversation="c-1", conversation_window=1)
    assert [m["content"] for m in bot.requests[0].messages] == ["thanks", "reply 2 (saw 5 messages)", "third"]
    latest = store.list(conversation="c-1", limit=1)[0]
    meta = seed_state(store, latest.run_id)
    assert meta["loaded_turns"] == [2]
    assert meta["omitted"] == [{"turn": 1, "turns": "1", "reason": "conversation_window=1"}]
    assert "Turn 3 of conversation 'c-1' loaded 2 message(s) from turn 2; left out turn 1 (conversation_window=1)." in (
        latest.narrative
    )


def test_a_character_budget_drops_whole_old_turns_and_records_them(make_store: Callable[[], RunStore]) -> None:
    """conversation_chars (on Agent.create) keeps the newest turns that fit; turn 1 (too big
    with its tool call) is left out whole, with its message count and size recorded."""
    store = make_store()
    agent = chat_agent(store, conversation_chars=40)
    agent.run("weather in Oslo", conversation="c-1")
    agent.run("hi", conversation="c-1")
    bot = Recall()
    chat_agent(make_store(), bot, conversation_chars=40).run("again", conversation="c-1")
    assert [m["content"] for m in bot.requests[0].messages] == ["hi", "reply 1 (saw 1 messages)", "again"]
    meta = seed_state(store, store.list(conversation="c-1", limit=1)[0].run_id)
    left = meta["omitted"]
    assert left[0]["turn"] == 1 and left[0]["messages"] == 4 and left[0]["reason"] == "conversation_chars=40"
    assert left[0]["chars"] > 40


def test_a_paused_turn_blocks_the_next_turn_until_it_is_answered(make_store: Callable[[], RunStore]) -> None:
    """Turn 1 pauses at a check-in: turn 2 is refused (nothing stored) until the pause is
    answered, from any process; then turn 2 sees turn 1's approved tool result."""
    store = make_store()
    paused = chat_agent(store).run("weather in Paris", conversation="c-9")
    assert isinstance(paused, Paused) and paused.run_id and paused.check_in
    with pytest.raises(ConversationBusyError, match=r"conversation 'c-9' turn 1 \(run .*\) is paused waiting for an"):
        chat_agent(make_store()).run("hello?", conversation="c-9")
    assert len(store.list(conversation="c-9")) == 1
    decision = check_in_approved(request=paused.check_in, by="alice")
    assert chat_agent(make_store()).resume_run(paused.run_id, decision) == "It is sunny in Paris"
    bot = Recall()
    chat_agent(make_store(), bot).run("thanks", conversation="c-9")
    sent = bot.requests[0].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[2]["content"] == "sunny in Paris"


def test_two_processes_starting_the_same_turn_one_wins(make_store: Callable[[], RunStore]) -> None:
    """Two agents on their own connections send turn 2 at once: one runs it, the other gets a
    ConversationBusyError; the store holds exactly turns 1 and 2."""
    make_store()  # migrate once before the race
    chat_agent(make_store()).run("hi", conversation="c-7")
    agents = [chat_agent(make_store(), Recall(delay=0.2)) for _ in range(2)]
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def send(n: int) -> None:
        barrier.wait()
        try:
            outcomes.append(str(agents[n].run(f"from {n}", conversation="c-7")))
        except ConversationBusyError as exc:
            outcomes.append(f"refused: {exc}")

    threads = [threading.Thread(target=send, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(o.split(":")[0] for o in outcomes) == ["refused", "reply 2 (saw 3 messages)"]
    assert [r.turn for r in make_store().list(conversation="c-7")] == [2, 1]


def test_the_store_gives_a_turn_to_one_of_many_racing_writers(make_store: Callable[[], RunStore]) -> None:
    """Six connections create turn 1 of one conversation at once: one run gets it, five get
    TurnTakenError naming the conversation and turn (UNIQUE(conversation_id, turn))."""
    make_store()
    stores = [make_store() for _ in range(6)]
    barrier = threading.Barrier(6)
    outcomes: list[str] = []

    def create(n: int) -> None:
        barrier.wait()
        try:
            stores[n].create(f"r{n}", kind="agent", chart_fingerprint="f", input={}, conversation=("c", 1))
            outcomes.append("won")
        except TurnTakenError as exc:
            assert "conversation 'c' turn 1 was started by another run first" in str(exc)
            outcomes.append("lost")

    threads = [threading.Thread(target=create, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["lost"] * 5 + ["won"]
    assert len(make_store().list(conversation="c")) == 1


def test_a_malformed_turn_is_refused_before_anything_is_written(store: RunStore) -> None:
    """create(conversation=) takes (id, turn >= 1); anything else is a ValueError and no run is stored."""
    with pytest.raises(ValueError, match=r"conversation=\('c', 0\): expected \(conversation_id, turn\)"):
        store.create("r", kind="agent", chart_fingerprint="f", input={}, conversation=("c", 0))
    assert store.list() == []


def test_a_turn_loads_its_own_conversation_only(tmp_path: Path) -> None:
    """With a window, a turn reads only the last N turns of its conversation: 60 unrelated runs
    in the store and 30 earlier turns leave its loading time flat (reads go through the index)."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = chat_agent(store, conversation_window=2)
    for n in range(30):
        agent.run(f"noise {n}", conversation=f"other-{n}")
        agent.run(f"noise {n}", conversation=f"other-{n}")
    plan_sql: list[str] = []
    raw = sqlite3.connect(tmp_path / "runs.db")
    for (detail,) in [
        row[-1:]
        for row in raw.execute(
            "EXPLAIN QUERY PLAN SELECT run_id FROM runs WHERE conversation_id = ? ORDER BY turn DESC LIMIT 2", ("x",)
        )
    ]:
        plan_sql.append(detail)
    raw.close()
    assert any("runs_by_conversation" in d for d in plan_sql), plan_sql
    started = time.perf_counter()
    agent.run("first", conversation="c")
    first = time.perf_counter() - started
    for n in range(30):
        agent.run(f"turn {n}", conversation="c")
    started = time.perf_counter()
    agent.run("last", conversation="c")
    last = time.perf_counter() - started
    assert last < first * 3 + 0.05, (first, last)


def test_a_version_2_database_migrates_in_place_and_old_runs_still_load(tmp_path: Path) -> None:
    """A store written before conversations is migrated to the current schema on open; its old
    runs load with no conversation, and conversation turns then work on it."""
    path = tmp_path / "old.db"
    raw = schema_database(path, 2)
    insert_old_run(raw)
    raw.commit()
    raw.close()
    store = SqliteStore(path)
    assert store.schema_version() == SCHEMA_VERSION
    old = store.get("old")
    assert (old.status, old.conversation_id, old.turn) == ("done", None, None)
    chat_agent(store).run("hi", conversation="c")
    assert [r.turn for r in store.list(conversation="c")] == [1]


def test_a_stored_turn_row_with_unreadable_conversation_columns_fails_closed(tmp_path: Path) -> None:
    """A row whose turn column was changed outside the store is refused naming the run."""
    from flowchart.store import StoreError

    store = SqliteStore(tmp_path / "runs.db")
    chat_agent(store).run("hi", conversation="c")
    (record,) = store.list(conversation="c")
    raw = sqlite3.connect(tmp_path / "runs.db")
    raw.execute("UPDATE runs SET turn = 0 WHERE run_id = ?", (record.run_id,))
    raw.commit()
    raw.close()
    with pytest.raises(StoreError, match=rf"^Invalid stored run '{record.run_id}' \(conversation_id/turn\): "):
        store.get(record.run_id)


def test_the_next_turn_reads_the_latest_turns_record_alone(tmp_path: Path) -> None:
    """Under a steady policy a turn reads only the latest turn's record (which holds what it
    loaded): with turn 1's stored rows made unreadable, turn 4 still gets turns 1-3 from
    turn 3's record; asking for more than turn 3 loaded reads turn by turn — and fails closed."""
    from flowchart import CheckpointError

    store = SqliteStore(tmp_path / "runs.db")
    agent = chat_agent(store)
    for text in ("weather in Oslo", "two", "three"):
        agent.run(text, conversation="c")
    first = store.list(conversation="c")[-1]
    raw = sqlite3.connect(tmp_path / "runs.db")
    raw.execute("UPDATE commits SET body = 'not json' WHERE run_id = ?", (first.run_id,))
    raw.commit()
    raw.close()
    bot = Recall()
    chat_agent(store, bot).run("four", conversation="c")
    assert len(bot.requests[0].messages) == 4 + 2 + 2 + 1 and bot.requests[0].messages[2]["content"] == "sunny in Oslo"
    narrow = chat_agent(store, conversation_window=1)
    narrow.run("five", conversation="c")  # a narrower window: still turn 4's record alone
    with pytest.raises(CheckpointError, match=r"^Invalid stored run '.*' \(commit 0\): not JSON"):
        chat_agent(store).run("six", conversation="c")  # wants turns turn 5 left out: reads them, finds turn 1 broken


def test_a_streamed_turn_is_stored_as_the_next_turn(make_store: Callable[[], RunStore]) -> None:
    """agent.stream(..., conversation=) on a store runs the next turn: its final event carries
    the answer, and the stored run is turn 2 of the conversation, sent turn 1's messages."""
    store = make_store()
    chat_agent(store).run("weather in Oslo", conversation="s")
    bot = Recall()
    events = list(chat_agent(make_store(), bot).stream("thanks", conversation="s"))
    assert events[-1].kind == "final" and events[-1].result == "reply 2 (saw 5 messages)"
    latest = store.list(conversation="s", limit=1)[0]
    assert (latest.turn, latest.status, latest.output) == (2, "done", "reply 2 (saw 5 messages)")
    assert bot.requests[0].messages[:4] == TURN_ONE
