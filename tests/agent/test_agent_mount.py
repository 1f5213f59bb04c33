"""An agent mounted in a chart (``add_agent``) is a subflow like any other: one entry in
``subflow_results`` per execution, and a handoff target's pause pauses the run (docs/agents.md)."""

from __future__ import annotations

from typing import Any

from agent_helpers import call, calls  # noqa: F401  (used by the handoff tests below)

from agent import Agent
from agent.providers import scripted
from flowchart import flow_chart


def agent_on(replies: list[Any], system: str = "You help.", configure: Any = None, **create: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    builder = Agent.create(provider=provider, model="mock", **create).system(system)
    return (configure(builder) if configure else builder).build(), provider


def count(scope: Any, ctx: Any) -> None:
    scope.n = scope.n + 1 if "n" in scope else 1


def test_a_mounted_agent_leaves_one_subflow_entry_per_execution() -> None:
    """A planner mounted in a loop runs twice: two entries for the mount (its runtime ids) and one
    for each run of its own ``final`` subflow — never a second key for the same execution."""
    planner, _ = agent_on(["the plan"], "Plan.")
    chart = (
        flow_chart("Count", count, "count")
        .add_agent("Planner", planner, "planner", message=lambda s: f"Plan round {s['n']}", into="plan")
        .add_decider_function("More", lambda s, c: "again" if s["n"] < 2 else "done", "more")
        .add_function_branch("again", "Again", count, loop_to="planner")
        .add_function_branch("done", "Done", lambda s, c: None)
        .end()
        .build()
    )
    result = chart.run()
    assert result.state["plan"] == "the plan"
    runs = result.subflow_results
    mounts = [sub for sub in runs.values() if sub.mount_id == "planner"]
    assert [sub.state["user_message"] for sub in mounts] == ["Plan round 1", "Plan round 2"]
    assert len(runs) == 4 and all(key == sub.runtime_stage_id for key, sub in runs.items())
    assert sorted(sub.mount_id for sub in runs.values()) == ["planner", "planner", "planner/final", "planner/final"]
    assert runs["planner"] is mounts[-1]  # the path finds the latest execution (footprintjs's key)
