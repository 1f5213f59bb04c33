"""A stored conversation's turn costs what it adds, not what came before (issue 30).

Measured with a real SQLite connection's trace callback: the statements a turn sends to
the database. A turn reads the newest turn's index row, not its record; it writes its run
and its segment without reading either back; and a later turn sends the same statements as
an early one. Beside it: a turn another process (another agent on the same database) stored
is never answered from this process's memory, and the conversation still lists, shows and
resumes as before.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from chat_agent import Recall, chat_agent
from traced_store import TracedStore

from agent._run import conversations, durable
from agent.cli import main as agent_cli
from agent.errors import ConversationError
from flowchart import Redaction, replay
from flowchart.store import SqliteStore
from governance import check_in_approved


def turn_statements(store: TracedStore, agent: Any, message: str) -> list[str]:
    """The statements one turn of conversation ``c`` sent, each with its values as ``?``."""
    store.statements.clear()
    agent.run(message, conversation="c")
    return [re.sub(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b", "?", " ".join(s.split())) for s in store.statements]


def reads_of(statements: list[str], table: str) -> list[str]:
    """The SELECTs among ``statements`` that read ``table``'s rows (a count of them is no read)."""
    return [s for s in statements if s.startswith("SELECT") and "COUNT(*)" not in s and f"FROM {table} " in f"{s} "]


def test_a_later_turn_sends_the_same_statements_as_an_early_one(tmp_path: Path) -> None:
    """Turn 3 and turn 40 of one conversation send the same statements, the same number of
    times: what a turn asks of the database does not grow with the turns before it."""
    store = TracedStore(tmp_path / "runs.db")
    agent = chat_agent(store)
    for n in range(1, 3):
        agent.run(f"note {n}", conversation="c")
    early = turn_statements(store, agent, "note 3")
    for n in range(4, 40):
        agent.run(f"note {n}", conversation="c")
    late = turn_statements(store, agent, "note 40")
    assert late and late == early


def test_a_turn_reads_no_earlier_record_and_reads_nothing_back(tmp_path: Path) -> None:
    """A turn after one this process stored reads no commit, segment or answer row (no record of
    an earlier turn is decoded, and its own run is not read back after create or commit); it
    reads the newest turn's index row once."""
    store = TracedStore(tmp_path / "runs.db")
    agent = chat_agent(store)
    agent.run("weather in Oslo", conversation="c")
    agent.run("thanks", conversation="c")
    statements = turn_statements(store, agent, "and tomorrow?")
    for table in ("commits", "segments", "answers"):
        assert reads_of(statements, table) == [], table
    heads = [s for s in statements if "conversation_id = ?" in s]
    assert len(heads) == 1 and heads[0].startswith("SELECT turn, run_id, status FROM runs")
    assert [s for s in statements if s.startswith("SELECT run_id, kind")] == []  # no whole run row decoded


@pytest.mark.parametrize("hidden", [None, Redaction(fields={"history": ["content"]})], ids=["plain", "redacted"])
def test_the_model_is_sent_every_earlier_turn_from_memory_and_from_the_store(
    tmp_path: Path, hidden: Redaction | None
) -> None:
    """The history a turn sends is the same whether this process remembers the turns (it ran
    them) or reads them (a fresh agent on the same database): every earlier message, in order
    — with a redaction hiding the messages' texts, the same placeholders in the same places."""
    path = tmp_path / "runs.db"
    for conversation in ("remembered", "read"):
        agent = chat_agent(SqliteStore(path), redaction=hidden)
        agent.run("weather in Oslo", conversation=conversation)
        agent.run("thanks", conversation=conversation)
    remembering, reading = Recall(), Recall()
    chat_agent(SqliteStore(path), reading, redaction=hidden).run("bye", conversation="read")  # read
    agent = chat_agent(SqliteStore(path), remembering, redaction=hidden)
    agent.run("bye", conversation="remembered")
    agent.run("again", conversation="remembered")  # from what this process stored
    reading_agent = chat_agent(SqliteStore(path), reading, redaction=hidden)
    reading_agent.run("again", conversation="read")
    assert remembering.requests[-1].messages == reading.requests[-1].messages
    assert [m["role"] for m in reading.requests[-1].messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]


def test_a_turn_another_process_stored_is_read_not_remembered(tmp_path: Path) -> None:
    """Agent A runs turn 1, agent B (another process's view of the database) turn 2, then A turn 3:
    A's model is sent turn 2 — A does not answer from what it remembered of turn 1 alone."""
    path = tmp_path / "runs.db"
    bot_a, bot_b = Recall(), Recall()
    a = chat_agent(SqliteStore(path), bot_a)
    b = chat_agent(SqliteStore(path), bot_b)
    a.run("hello", conversation="c")
    b.run("second", conversation="c")
    a.run("third", conversation="c")
    sent = [m["content"] for m in bot_a.requests[-1].messages]
    assert sent == ["hello", "reply 1 (saw 1 messages)", "second", "reply 2 (saw 3 messages)", "third"]


def test_a_paused_turn_resumed_then_the_next_turn_loads_it(tmp_path: Path) -> None:
    """A turn that paused for a check-in (``weather in Paris``) and was approved is loaded by the
    next turn whole (its tool call, result and answer), as a turn that never paused."""
    bot = Recall()
    agent = chat_agent(SqliteStore(tmp_path / "runs.db"), bot)
    agent.run("hello", conversation="c")
    paused = agent.run("weather in Paris", conversation="c")
    request = agent.store.get(paused.run_id).question
    assert agent.resume_run(paused.run_id, check_in_approved(request=request, by="alice")) == "It is sunny in Paris"
    agent.run("thanks", conversation="c")
    sent = bot.requests[-1].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert sent[4]["content"] == "sunny in Paris"


def test_the_conversation_lists_and_shows_every_turn(tmp_path: Path, capsys: Any) -> None:
    """After turns stored through the fast path, ``agent conversations show`` prints every turn's
    messages and ``list(conversation=)`` gives the turns newest first."""
    path = tmp_path / "runs.db"
    store = SqliteStore(path)
    agent = chat_agent(store)
    for text in ("hello", "weather in Oslo", "thanks"):
        agent.run(text, conversation="c")
    assert [r.turn for r in store.list(conversation="c")] == [3, 2, 1]
    assert agent_cli(["conversations", "show", "c", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    for line in ("user: hello", "user: weather in Oslo", "tool weather", "It is sunny in Oslo", "user: thanks"):
        assert line in out


def test_a_turn_stores_its_loaded_history_once_by_naming_its_turns(tmp_path: Path) -> None:
    """A stored turn's input names the turns it loads (their numbers and runs, the message
    count) without carrying their messages again; its seed's commit records them and where each
    came from, so its record still shows the whole history the model was sent."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = chat_agent(store)
    agent.run("weather in Oslo", conversation="c")
    agent.run("thanks", conversation="c")
    second = store.list(conversation="c")[0]
    planned = second.input["conversation_input"]
    first = store.list(conversation="c")[1]
    assert "history" not in planned and "sources" not in planned
    assert (planned["loaded_turns"], planned["runs"], planned["messages"]) == ([1], [first.run_id], 4)
    meta = replay(second.commit_log[:1])["conversation"]  # the seed's record names each message's commit
    assert meta["sources"] == [{"turn": 1, "run_id": first.run_id, "commits": [0, 3, 3, 6]}]
    assert [m["role"] for m in replay(second.commit_log[:1])["history"]] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]


def test_a_turn_queued_here_and_run_elsewhere_reads_its_loaded_turns_back(tmp_path: Path) -> None:
    """A turn queued in one process (``conversations.queue``: what ``agent.submit`` enqueues) and
    advanced by a fresh agent elsewhere (a worker) is sent every earlier message, read back
    through the turns its input names."""
    path = tmp_path / "runs.db"
    chat_agent(SqliteStore(path)).run("weather in Oslo", conversation="c")
    queuer = chat_agent(SqliteStore(path))
    run_id = conversations.queue(queuer, durable.make_input("thanks"), "c", queuer.history_policy)
    bot = Recall()
    worker = chat_agent(SqliteStore(path), bot)
    assert durable.advance_now(worker, run_id) == "reply 2 (saw 5 messages)"
    assert [m["role"] for m in bot.requests[0].messages] == ["user", "assistant", "tool", "assistant", "user"]


def test_a_queued_turn_whose_loaded_turn_is_gone_fails_by_name(tmp_path: Path) -> None:
    """When a turn the queued input names no longer holds the messages it names (its commit rows
    deleted behind the store), the worker refuses the turn naming it, and sends the model nothing."""
    path = tmp_path / "runs.db"
    chat_agent(SqliteStore(path)).run("weather in Oslo", conversation="c")
    first = SqliteStore(path).list(conversation="c")[0].run_id
    queuer = chat_agent(SqliteStore(path))
    run_id = conversations.queue(queuer, durable.make_input("thanks"), "c", queuer.history_policy)
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM commits WHERE run_id = ? AND seq > 0", (first,))
        db.execute("UPDATE runs SET next_seq = 1 WHERE run_id = ?", (first,))
    bot = Recall()
    with pytest.raises(ConversationError, match=rf"turn 1 \(run '{first}'\) no longer holds the messages"):
        durable.advance_now(chat_agent(SqliteStore(path), bot), run_id)
    assert bot.requests == []
