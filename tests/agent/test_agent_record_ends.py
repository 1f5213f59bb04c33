"""How an agent run's record ends: a stored streamed turn names its run in the last event, and
a run that raised is still the last run (``last_snapshot`` shows its partial record)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent import Agent
from agent.providers import scripted
from agent.providers.types import LLMRequest, LLMResponse
from flowchart.store import SqliteStore


class Down:
    """A provider whose server is down."""

    def complete(self, req: LLMRequest) -> LLMResponse:
        raise ConnectionError("provider down")


def test_the_last_event_of_a_stored_stream_names_the_stored_run(tmp_path: Path) -> None:
    """``agent.stream`` on a store: the final event's ``run_id`` is the run it was stored under
    (it was ``None`` whenever the turn ended with an answer)."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = Agent.create(provider=scripted(["hello"]), model="m", store=store).build()
    final = list(agent.stream("hi"))[-1].to_dict()
    (stored,) = store.list()
    assert final["run_id"] == stored.run_id and final["output"] == "hello"


def test_last_snapshot_after_a_run_that_raised_shows_its_partial_record() -> None:
    """The provider fails: the error goes on to the caller, and ``last_snapshot()`` is that run —
    its seed commit, the failed call's commit and the narrative's error line (it said "the agent
    has not run yet")."""
    agent = Agent.create(provider=Down(), model="m").build()
    with pytest.raises(ConnectionError, match=r"^provider down$"):
        agent.run("hi")
    snapshot = agent.last_snapshot()
    assert [c.stage_id for c in snapshot.commit_log] == ["seed", "call-llm"]
    assert snapshot.shared_state["user_message"] == "hi"
    assert snapshot.narrative[-1] == "[Error]: An error occurred at CallLLM: ConnectionError: provider down."


def test_last_snapshot_after_a_stored_run_that_raised_shows_it_too(tmp_path: Path) -> None:
    """The same with a store: the failed stored run is the last snapshot."""
    agent = Agent.create(provider=Down(), model="m", store=SqliteStore(tmp_path / "runs.db")).build()
    with pytest.raises(ConnectionError, match=r"^provider down$"):
        agent.run("hi")
    assert [c.stage_id for c in agent.last_snapshot().commit_log] == ["seed", "call-llm"]
