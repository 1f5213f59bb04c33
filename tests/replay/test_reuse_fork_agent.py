"""Done-when of issue 34: a 50-stage agent run with one tool result patched — the reuse-fork
re-runs exactly the stages of the forward slice, makes no model call outside it, and its record
names each reused stage. The slice is computed independently, from a full re-run fork: a stage
is in it when some key it read held, in the full fork, another value than in the parent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent import Agent, define_tool
from agent.providers.types import LLMResponse, ToolCall, Usage
from flowchart import Commit, replay
from flowchart.lowlevel import apply_commit, same_json
from flowchart.store import SqliteStore

TURNS = 16  # 1 seed + 16 × (call-llm, route, tool-calls) + call-llm, route, final = 52 commits


class Adder:
    """A deterministic model: asks for ``add`` until 16 results are in, then answers with the
    sum of the results' lengths (so a patched result changes the answer). Counts its calls."""

    name = "adder"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: Any) -> LLMResponse:
        self.calls += 1
        results = [m for m in request.messages if m.get("role") == "tool"]
        if len(results) < TURNS:
            call = ToolCall(f"c{len(results)}", "add", {"a": len(results), "b": 1})
            return LLMResponse(content="", tool_calls=(call,), usage=Usage(1, 1), finish_reason="tool_use")
        return LLMResponse(content=f"total {sum(len(str(m['content'])) for m in results)}", usage=Usage(1, 1))


def _agent(store: Any) -> tuple[Agent, Adder]:
    add = define_tool(
        name="add",
        description="Add two numbers.",
        input_schema={"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}},
        execute=lambda args, ctx: args["a"] + args["b"],
    )
    model = Adder()
    return Agent.create(provider=model, model="m", store=store).tool(add).max_iterations(40).build(), model


def _before(log: list[Commit], initial: dict[str, Any]) -> dict[str, dict[str, Any]]:
    state, out = dict(initial), {}
    for commit in log:
        out[commit.runtime_stage_id] = dict(state)
        apply_commit(state, commit)
    return out


def test_a_reuse_fork_of_a_50_stage_agent_reruns_exactly_the_forward_slice(tmp_path: Path) -> None:
    """Patch the 4th tool result: every stage whose reads changed re-runs, every other one is
    taken from the record (the last, ``final``, always runs: a run's answer is not in a commit)."""
    store = SqliteStore(tmp_path / "runs.db")
    agent, _ = _agent(store)
    agent.run("add sixteen times")
    parent = agent.last_snapshot().record
    assert len(parent.commits) == 52
    at = [c.idx for c in parent.commits if c.stage_id == "tool-calls"][3]
    history = [dict(m) for m in replay(list(parent.commits), at, dict(parent.initial_state))["history"]]
    history[-1]["content"] = "999"  # the 4th tool result, rewritten

    full_agent, full_model = _agent(store)
    full_answer = full_agent.fork(parent.run_id, at, {"history": history})
    full = full_agent.last_snapshot().record
    reuse_agent, reuse_model = _agent(store)
    answer = reuse_agent.fork(parent.run_id, at, {"history": history}, reuse=True)
    fork = reuse_agent.last_snapshot().record

    assert parent.final_state["final_content"] == "total 23"
    assert answer == full_answer == "total 25"  # "4" became "999": two characters more
    assert [c.to_dict() for c in fork.commits] == [c.to_dict() for c in full.commits]
    was, now = (
        _before(list(parent.commits), dict(parent.initial_state)),
        _before(list(full.commits), dict(full.initial_state)),
    )
    after_fork = [c for c in full.commits if c.stage_id != "fork"]
    in_slice = {
        c.runtime_stage_id
        for c in after_fork
        if c.runtime_stage_id not in was
        or any(
            (key in now[c.runtime_stage_id]) != (key in was[c.runtime_stage_id])
            or (
                key in was[c.runtime_stage_id]
                and not same_json(now[c.runtime_stage_id][key], was[c.runtime_stage_id][key])
            )
            for key in c.reads
        )
    }
    always_run = {parent.commits[-1].runtime_stage_id}
    reused = {r.runtime_stage_id for r in fork.reused}
    assert reused == {c.runtime_stage_id for c in after_fork} - in_slice - always_run
    assert all(
        r.from_run == parent.run_id and parent.commits[r.from_commit].runtime_stage_id == r.runtime_stage_id
        for r in fork.reused
    )
    model_calls_in_slice = sum(1 for rid in in_slice if rid.startswith("call-llm#"))
    assert reuse_model.calls == model_calls_in_slice == full_model.calls
    assert {rid.split("#")[0] for rid in reused} == {"route"}  # each route read only the unchanged calls
