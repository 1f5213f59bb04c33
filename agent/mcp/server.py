"""Tools out: ``mcp_server(agent_or_chart, name=...)`` serves an agent (or a chart) as one MCP tool.

Laws:
- MCP is request/response: nobody waits on the other side to answer a question. So a
  middleware ``ask`` in a served agent is refused as a denial naming the middleware (the
  seeds' ``askPolicy: 'refuse'``; the ledger row and the commit log say so), and a pause
  (a tool's check-in, ``ask_human``) answers ``needs a person`` with the run id: the
  caller approves through the run store (``agent runs approve RUN``, or
  ``agent.resume_run``) and calls the tool again with ``run_id``, which then returns the
  run's answer (or advances a run whose answer was recorded but not yet applied).
- An agent with a check-in tool is served only with a run store, so that its pauses can
  be answered at all; ``mcp_server`` says so before anything is served.
- Errors of the run (a denied message, a policy halt, a failed stage) are the tool's
  error result, with the run's own message.
- A stored run's answer (asked again with ``run_id``) is read as every reader of a stored
  run reads it, from its shown record (``shown_output``): what the run's rule hides is
  hidden, as ``agent runs show`` and ``agent runs approve`` print it. There is no
  redaction code here (``flowchart/_core/redaction.py`` is where it happens).
"""

from __future__ import annotations

import json
from typing import Any

try:
    from mcp.server.fastmcp import FastMCP
except ImportError as exc:  # without the extra: say which one to install
    raise ImportError(
        "agent.mcp needs the MCP SDK: pip install 'mcp>=1.30,<2' (in a pyfootprint checkout: pip install -e '.[mcp]')"
    ) from exc

import attrs

from agent._chart.paused import Paused
from agent._edge.cli_common import shown_output
from agent._run.agent import Agent
from flowchart import FlowChart

NEEDS_A_PERSON = "needs a person"


def _needs_a_person(paused: Paused) -> str:
    run = paused.run_id or ""
    if paused.check_in is not None:
        what = f"the tool '{paused.check_in.tool}' must be approved before it runs (check-in {paused.check_in.id})"
    else:
        what = f"the tool '{paused.pause_data.get('tool_name', '')}' asked a person: {_data(paused)}"
    return (
        f"{NEEDS_A_PERSON}: {what}. Run id: {run}. Approve or decline it through the run store "
        f"(agent runs approve {run} --by NAME --agent MODULE:ATTR), then call this tool again with "
        f'run_id="{run}".'
    )


def _data(paused: Paused) -> str:
    return json.dumps(paused.pause_data.get("data"), ensure_ascii=False)


class McpServer:
    """An agent or a chart served as one MCP tool; ``run()`` serves it (stdio by default)."""

    def __init__(self, target: Agent | FlowChart, name: str, description: str | None) -> None:
        self.name = name
        self.target = target
        self.mcp = FastMCP(name)
        if isinstance(target, Agent):
            self._agent = _refusing(target)
            self.mcp.add_tool(
                self._ask, name=name, description=description or f"Ask the agent '{name}' (one turn per call)."
            )
        else:
            self.mcp.add_tool(self._run_chart, name=name, description=description or f"Run the flowchart '{name}'.")

    async def _ask(self, message: str = "", run_id: str | None = None) -> str:
        """Run one turn on ``message``; with ``run_id``, the answer of that (earlier, paused) run."""
        agent = self._agent
        if run_id:
            return await self._again(agent, run_id)
        if not message.strip():
            raise ValueError(f"{self.name}: pass message (the question) or run_id (a run that needed a person)")
        out = await agent.arun(message)
        return _needs_a_person(out) if isinstance(out, Paused) else out

    async def _again(self, agent: Agent, run_id: str) -> str:
        from agent._run import durable

        if agent.store is None:
            raise ValueError(f"{self.name}: run_id needs an agent with a run store (Agent.create(store=...))")
        record = agent.store.get(run_id)
        if record.status == "done":  # a stored run, read as every reader reads it: its shown record
            return str(shown_output(record))
        if record.status == "failed":
            raise RuntimeError(f"run {run_id} failed: {record.error}")
        if record.status == "paused" and not record.has_answer:
            return _needs_a_person(durable.paused(agent, run_id))
        if not record.has_answer and record.checkpoint is not None:
            return f'run {run_id} is still running: call this tool again with run_id="{run_id}" later.'
        out = await durable.advance_run(agent, run_id)
        return _needs_a_person(out) if isinstance(out, Paused) else out

    async def _run_chart(self, input: dict[str, Any] | None = None) -> str:
        """Run the chart on ``input``; its output as JSON (a pause says it needs a person)."""
        assert isinstance(self.target, FlowChart)
        result = await self.target.arun(input or {})
        if result.paused:
            return f"{NEEDS_A_PERSON}: the run paused at a pausable stage. Run id: {result.run_id}."
        return json.dumps(result.output, ensure_ascii=False, default=str)

    def run(self, transport: str = "stdio", *, host: str = "127.0.0.1", port: int = 8000) -> None:
        """Serve: ``"stdio"`` (a client starts this process) or ``"http"`` (streamable HTTP on host:port/mcp)."""
        if transport == "stdio":
            self.mcp.run("stdio")
        elif transport == "http":
            self.mcp.settings.host, self.mcp.settings.port = host, port
            self.mcp.run("streamable-http")
        else:
            raise ValueError(f"McpServer.run(transport=...): expected 'stdio' or 'http', got {transport!r}")


def _refusing(agent: Agent) -> Agent:
    """The same agent (same chart, same store) whose middleware asks are refused, not paused."""
    return agent.with_config(attrs.evolve(agent.config, ask_policy="refuse"))


def mcp_server(agent_or_chart: Agent | FlowChart, *, name: str, description: str | None = None) -> McpServer:
    """Serve ``agent_or_chart`` as the MCP tool ``name`` (see the module laws); ``.run()`` starts it.

    An agent's tool takes ``message`` (and ``run_id`` to ask again after a person answered);
    a chart's takes ``input`` (the run's input object).
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError("mcp_server(name=...): the tool needs a non-empty name")
    if isinstance(agent_or_chart, Agent):
        checked = [t.name for t in agent_or_chart.config.tools.values() if t.check_in is not None]
        if checked and agent_or_chart.store is None:
            raise ValueError(
                f"mcp_server: tool(s) {', '.join(checked)} have a check-in, and a person can answer it only "
                "through a run store: build the agent with Agent.create(..., store=...)"
            )
    elif not isinstance(agent_or_chart, FlowChart):
        raise TypeError(
            f"mcp_server(agent_or_chart): expected an Agent or a FlowChart, got {type(agent_or_chart).__name__}"
        )
    return McpServer(agent_or_chart, name, description)
