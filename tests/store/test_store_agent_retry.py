"""Agent retries: the model call and tool bodies under a ``Retry``, and a failed stored agent run
continued where it failed (``agent.resume_run``, ``agent runs retry``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent import Agent, AgentBuildError, define_tool
from agent._tools.tools import ToolDefinitionError
from agent.cli import main
from agent.providers import scripted
from flowchart import Retry
from flowchart.store import SqliteStore

STATE: dict[str, Any] = {"down": 0, "tool_fails": 0, "tool_calls": 0}


class Flaky:
    """A provider that raises ``TimeoutError`` while ``STATE["down"]`` > 0 (counting down), then
    answers from its script."""

    def __init__(self, replies: list[Any]) -> None:
        self.inner = scripted(replies)
        self.calls = 0

    def complete(self, request: Any) -> Any:
        self.calls += 1
        if STATE["down"] > 0:
            STATE["down"] -= 1
            raise TimeoutError("model timed out")
        return self.inner.complete(request)


def _lookup(args: dict[str, Any], ctx: Any) -> str:
    STATE["tool_calls"] += 1
    if STATE["tool_calls"] <= STATE["tool_fails"]:
        raise ConnectionError(f"backend down ({STATE['tool_calls']})")
    return "found"


def _tool(retry: Retry | None) -> Any:
    schema = {"type": "object", "properties": {}, "required": []}
    return define_tool(name="lookup", description="Look it up.", input_schema=schema, execute=_lookup, retry=retry)


CALL = {"content": "", "tool_calls": [{"id": "c1", "name": "lookup", "args": {}}]}


def make_agent(store: Any = None, llm_retry: Retry | None = None) -> Any:
    """The agent the CLI test loads (``--agent test_store_agent_retry:make_agent``)."""
    return Agent.create(provider=Flaky(["answer"]), model="m", store=store, llm_retry=llm_retry).build()


@pytest.fixture(autouse=True)
def _reset() -> None:
    STATE.update(down=0, tool_fails=0, tool_calls=0)


def test_llm_retry_tries_the_model_call_again_and_records_the_failed_attempt() -> None:
    """One timeout, then the answer: the call-llm commit lists the attempt, the narrative tells it."""
    STATE["down"] = 1
    agent = make_agent(llm_retry=Retry(attempts=2))
    assert agent.run("hi") == "answer"
    snap = agent.last_snapshot()
    (call,) = [c for c in snap.commit_log if c.stage_id == "call-llm"]
    assert [a.to_dict() for a in call.attempts] == [
        {"attempt": 1, "error_type": "TimeoutError", "message": "model timed out"}
    ]
    assert "[Retry]: retried CallLLM (attempt 2 of 2) after TimeoutError: model timed out" in snap.narrative


def test_a_tool_retry_records_each_failed_attempt_and_the_model_reads_the_success() -> None:
    """Two failures then success: two ``tool_errors`` rows marked retried, the model reads ``found``."""
    STATE["tool_fails"] = 2
    waited: list[float] = []
    provider = scripted([CALL, "done"])
    agent = (
        Agent.create(provider=provider, model="m")
        .tool(_tool(Retry(attempts=3, backoff=1, sleep=waited.append)))
        .build()
    )
    assert agent.run("look") == "done"
    rows = agent.last_snapshot().shared_state["tool_errors"]
    assert [(r["attempt"], r["message"], r.get("retried")) for r in rows] == [
        (1, "backend down (1)", True),
        (2, "backend down (2)", True),
    ]
    assert waited == [1.0, 2.0]
    assert provider.requests[1].messages[-1]["content"] == "found"


def test_a_tool_out_of_attempts_shows_the_model_its_last_error() -> None:
    """Every attempt failed: the last row is not marked retried, and the model reads its message."""
    STATE["tool_fails"] = 5
    provider = scripted([CALL, "sorry"])
    agent = Agent.create(provider=provider, model="m").tool(_tool(Retry(attempts=2))).build()
    assert agent.run("look") == "sorry"
    rows = agent.last_snapshot().shared_state["tool_errors"]
    assert [(r["attempt"], "retried" in r) for r in rows] == [(1, True), (2, False)]
    assert provider.requests[1].messages[-1]["content"] == "backend down (2)"


def test_a_retry_that_is_not_a_policy_is_refused() -> None:
    """``llm_retry=3`` and ``define_tool(retry=3)`` are refused naming the argument."""
    with pytest.raises(
        AgentBuildError, match=r"^Agent\.create\(llm_retry=\.\.\.\): expected a flowchart\.Retry, got int$"
    ):
        make_agent(llm_retry=3)  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match=r"^define_tool: retry must be a flowchart\.Retry, got int$"):
        _tool(3)  # type: ignore[arg-type]


def test_a_failed_agent_run_resumes_at_call_llm_in_another_process(tmp_path: Path) -> None:
    """Provider down: the run is stored failed at call-llm; another agent object on the same store
    continues it there — the seed is not run again — and it finishes once."""
    path = tmp_path / "runs.db"
    STATE["down"] = 1
    with pytest.raises(TimeoutError, match=r"^model timed out$"):
        make_agent(SqliteStore(path)).run("hi")
    (record,) = SqliteStore(path).list(status="failed")
    assert record.checkpoint is not None and record.checkpoint.paused_stage_id == "call-llm"
    other = make_agent(SqliteStore(path))
    assert other.resume_run(record.run_id) == "answer"
    done = SqliteStore(path).get(record.run_id)
    assert done.status == "done"
    assert [c.stage_id for c in done.commit_log].count("seed") == 1
    assert [c.recovers for c in done.commit_log if c.recovers] == [record.checkpoint.recovery.runtime_stage_id]  # type: ignore[union-attr]


def test_agent_runs_retry_continues_a_failed_run_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``agent runs retry RUN --agent`` finishes the failed run; a second retry is one error line."""
    path = str(tmp_path / "runs.db")
    STATE["down"] = 1
    with pytest.raises(TimeoutError):
        make_agent(SqliteStore(path)).run("hi")
    (record,) = SqliteStore(path).list(status="failed")
    argv = ["runs", "retry", record.run_id, "--agent", "test_store_agent_retry:make_agent", "--db", path]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    assert out.strip() == f"run {record.run_id}: retried at call-llm#1; done: answer"
    assert main(argv) == 2
    _, err = capsys.readouterr()
    assert err.strip() == f"agent: error: run '{record.run_id}' is done, not failed: only a failed run can be retried"


def test_a_worker_retries_a_failed_run_under_its_policy_until_it_finishes(store: Any) -> None:
    """``advance`` (the Celery task's body) with ``retry_failed``: the provider is down twice; each
    failure is recorded, the run made running again and re-queued after the policy's delay; the
    third advance finishes it. The seed ran once; each retry re-ran only call-llm."""
    from agent._run import durable
    from agent.celery import advance

    STATE["down"] = 2
    agent = make_agent(store)
    run_id = durable.create(agent, durable.make_input("hi"))
    queued: list[float] = []
    policy = Retry(attempts=3, backoff=2)
    assert advance(agent, run_id, retry_failed=policy, requeue=queued.append) == "running"
    assert advance(agent, run_id, retry_failed=policy, requeue=queued.append) == "running"
    assert advance(agent, run_id, retry_failed=policy, requeue=queued.append) == "done"
    assert queued == [2.0, 4.0]
    record = store.get(run_id)
    assert record.output == "answer"
    assert [c.stage_id for c in record.commit_log].count("seed") == 1
    assert [c.recovers for c in record.commit_log if c.recovers] == ["call-llm#1", "call-llm#2"]


def test_a_worker_leaves_a_run_failed_once_its_policy_is_spent(store: Any) -> None:
    """Down three times with ``attempts=2``: one retry, then the run stays ``failed``."""
    from agent._run import durable
    from agent.celery import advance

    STATE["down"] = 3
    agent = make_agent(store)
    run_id = durable.create(agent, durable.make_input("hi"))
    queued: list[float] = []
    policy = Retry(attempts=2)
    assert advance(agent, run_id, retry_failed=policy, requeue=queued.append) == "running"
    assert advance(agent, run_id, retry_failed=policy, requeue=queued.append) == "failed"
    assert queued == [0.0] and store.get(run_id).status == "failed"
