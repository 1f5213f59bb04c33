"""Agents composed: an agent as a chart's stage (``as_subflow``), as another agent's tool
(``as_tool``).

Laws:
- ``as_subflow`` mounts the agent's OWN chart (no copy): the mounted run is a subflow log
  of the outer run, its narrative nested like any subflow's (its events are not narrated), and
  a pause inside it pauses the outer run. The agent's own run options apply inside the mount:
  the rule it records under (a scope of the outer run's rule; a rule that hides the answer
  hides ``into`` in the outer record too), its ``timeout`` and its loop limit. The subflow
  starts from ``message(parent_state)`` (a non-empty string, or a ``CompositionError`` naming
  the mount) and gives back only the answer, as ``into``.
- ``as_tool`` runs the agent on the model's ``input`` (with the caller's identity) and
  answers with its final answer; the caller's tool-calls commit records the sub-agent's run
  (``sub_agents``: tool, call id, run id, model calls, answer) — with a store, that run is
  stored and ``agent why RUN`` explains it; a sub-agent that pauses cannot be waited on from inside a
  tool call, so its pause is a tool error naming the agent and the remedy (mount it with
  ``add_agent``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from agent._chart.state import FINAL_CONTENT, LLM_LATEST_CONTENT
from agent._tools.tools import AgentAnswer, Tool, ToolContext, make_tool
from agent.errors import CompositionError
from flowchart import FlowChart, Redaction

if TYPE_CHECKING:
    from agent._run.agent import Agent

__all__ = ["CompositionError", "SubflowParts", "agent_tool", "subflow_parts"]


@attrs.frozen
class SubflowParts:
    """What ``FlowChartBuilder.add_agent`` mounts: the chart, the two mappers and the agent's own
    run options, applied inside the mount — the rule it records under, the outer keys that rule
    hides (``into`` when it hides the answer), its timeout and its loop limit."""

    chart: FlowChart
    input_mapper: Callable[[Any], Any]
    output_mapper: Callable[[Any, Any], Any]
    redaction: Redaction | None = None
    hidden_outputs: tuple[str, ...] = ()
    timeout: float | None = None
    max_iterations: int | None = None


def subflow_parts(
    agent: Agent, message: Callable[[Any], str], into: str, identity: Callable[[Any], Any] | None = None
) -> SubflowParts:
    """The mount of ``agent`` sent ``message(state)``, its answer written to ``into``."""
    from agent._run.durable import make_input

    def input_mapper(parent: Any) -> dict[str, Any]:
        text = message(parent)
        if not isinstance(text, str) or not text.strip():
            raise CompositionError(
                f"add_agent(...): message(state) must return the non-empty text the agent is sent, got {text!r}"
            )
        return make_input(text, identity(parent) if identity is not None else None)

    def output_mapper(sub_state: Any, _parent: Any) -> dict[str, Any]:
        return {into: sub_state[FINAL_CONTENT]}

    rule = agent.recorded_redaction
    hides_answer = rule is not None and (rule.hides(FINAL_CONTENT) or rule.hides(LLM_LATEST_CONTENT))
    return SubflowParts(
        agent.chart,
        input_mapper,
        output_mapper,
        redaction=rule,
        hidden_outputs=(into,) if hides_answer else (),
        timeout=agent.timeout,
        max_iterations=agent.config.loop_limit,
    )


def agent_tool(agent: Agent, name: str, description: str) -> Tool:
    """``agent`` as a tool: ``{"input": str}`` in, the agent's answer out."""
    from agent._chart.paused import Paused

    def execute(args: dict[str, Any], ctx: ToolContext) -> AgentAnswer:
        answer = agent.run(args["input"], ctx.identity)
        if isinstance(answer, Paused):
            raise CompositionError(
                f"sub-agent tool '{name}' paused (a person must answer it) and a tool call cannot wait: "
                "mount the agent in a chart with add_agent(...) so its pause pauses the run"
            )
        last = agent.segments.last
        run_id = last.result.run_id if last is not None else None
        calls = sum(1 for c in last.commit_log if c.stage_id == "call-llm") if last is not None else 0
        return AgentAnswer(answer if isinstance(answer, str) else str(answer), name, run_id, calls)

    execute.sub_agent = name  # type: ignore[attr-defined]  # the redaction cover looks for sub-agent tools

    return make_tool(
        name=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {"input": {"type": "string", "description": "what to ask the agent, in full"}},
            "required": ["input"],
        },
        execute=execute,
    )
