"""``agent runs list --conversation`` and ``agent conversations show`` on a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from chat_agent import chat_agent

from agent.cli import main
from flowchart.store import SqliteStore


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A SQLite store holding a two-turn conversation 'c-42' and an unrelated run."""
    monkeypatch.delenv("AGENT_RUNS_DB", raising=False)
    monkeypatch.delenv("AGENT_RUNS_DSN", raising=False)
    path = str(tmp_path / "runs.db")
    agent = chat_agent(SqliteStore(path))
    agent.run("weather in Oslo", conversation="c-42")
    agent.follow_up("thanks")
    agent.run("not a turn")
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_list_conversation_lists_its_turns_newest_first(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """--conversation lists only that conversation's runs, with a TURN column, newest turn first;
    --json says each run's conversation and turn."""
    code, out, _ = _run(capsys, "runs", "list", "--conversation", "c-42", "--db", db)
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("TURN  RUN") and len(lines) == 3
    assert [line.split()[0] for line in lines[1:]] == ["2", "1"]
    code, out, _ = _run(capsys, "runs", "list", "--conversation", "c-42", "--json", "--db", db)
    assert [(r["conversation"], r["turn"]) for r in json.loads(out)] == [("c-42", 2), ("c-42", 1)]
    code, out, _ = _run(capsys, "runs", "list", "--conversation", "nope", "--db", db)
    assert out.strip() == "no runs in conversation nope"


def test_conversations_show_prints_the_transcript(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The transcript shows every turn's messages — tool call and result included — with the
    commit of the turn's run that wrote each; --json gives the same as data."""
    store = SqliteStore(db)
    first, second = reversed(store.list(conversation="c-42"))
    code, out, _ = _run(capsys, "conversations", "show", "c-42", "--db", db)
    assert code == 0
    assert out.splitlines() == [
        "conversation c-42: 2 turn(s)",
        f"turn 1 · run {first.run_id} · done",
        "  user: weather in Oslo  [commit 0]",
        '  assistant → weather({"city": "Oslo"})  [commit 3]',
        "  tool weather [call-1]: sunny in Oslo  [commit 3]",
        "  assistant: It is sunny in Oslo  [commit 6]",
        f"turn 2 · run {second.run_id} · done",
        "  user: thanks  [commit 0]",
        "  assistant: reply 2 (saw 5 messages)  [commit 3]",
    ]
    code, out, _ = _run(capsys, "conversations", "show", "c-42", "--json", "--db", db)
    data = json.loads(out)
    assert [t["turn"] for t in data["turns"]] == [1, 2] and data["turns"][0]["messages"][2]["commit"] == 3


def test_conversations_show_of_an_unknown_id_is_one_error_line(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """An id with no turns exits 2 with one 'agent: error:' line."""
    code, out, err = _run(capsys, "conversations", "show", "nope", "--db", db)
    assert code == 2 and out == ""
    assert err.strip() == "agent: error: no conversation 'nope' in the run store (no run is a turn of it)"


def test_why_keys_on_a_turn_names_the_earlier_runs_it_loaded(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`agent why RUN --keys` on turn 2 follows the chain to the seed and names turn 1's run and commits."""
    second, first = SqliteStore(db).list(conversation="c-42")
    code, out, _ = _run(capsys, "why", second.run_id, "--keys", "--db", db)
    assert code == 0
    assert out.splitlines()[-2:] == [
        "Seed (seed#0) loaded earlier turns of conversation 'c-42':",
        f"  turn 1: run {first.run_id}, commits 0, 3, 6",
    ]
    code, out, _ = _run(capsys, "why", second.run_id, "--db", db)
    assert f"turn 1: tool result of weather(city=Oslo) [call-1] (run {first.run_id}, commit 3)" in out


def test_runs_show_of_a_turn_names_its_conversation_and_counts_the_loaded_history(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`runs show` of turn 2 says its conversation and turn, and counts the loaded messages
    instead of printing them again."""
    second, _ = SqliteStore(db).list(conversation="c-42")
    code, out, _ = _run(capsys, "runs", "show", second.run_id, "--db", db)
    lines = out.splitlines()
    assert code == 0 and lines[1] == "conversation: c-42, turn 2"
    assert '"history": "(4 messages: agent conversations show c-42)"' in lines[2]
    assert "sunny in Oslo" not in lines[2]
