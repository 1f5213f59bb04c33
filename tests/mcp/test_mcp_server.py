"""mcp_server: our agent served as an MCP tool, driven by the SDK's client over stdio and HTTP."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from served_agent import build_agent

from agent.mcp import mcp_server, mcp_tools
from flowchart import flow_chart
from flowchart.store import SqliteStore
from governance import check_in_approved

SERVED = str(Path(__file__).parent / "served_agent.py")


async def ask_over_stdio(db: Path, *arguments: dict[str, Any]) -> list[Any]:
    """Start served_agent.py as the SDK's stdio client does, list its tools, call ``support`` per argument set."""
    params = StdioServerParameters(command=sys.executable, args=[SERVED], env={**os.environ, "RUNS_DB": str(db)})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        results = [await session.call_tool("support", args) for args in arguments]
    return [listed.tools, *results]


def text(result: Any) -> str:
    [block] = result.content
    return str(block.text)


def test_the_agent_is_one_mcp_tool_and_a_check_in_needs_a_person_then_answers(tmp_path: Path) -> None:
    """Over stdio: the tool is listed with its schema; a check-in answers "needs a person" with
    the run id; once approved through the store, asking again with run_id returns the answer."""
    db = tmp_path / "runs.db"
    tools, first = asyncio.run(ask_over_stdio(db, {"message": "refund order A1"}))
    [tool] = tools
    assert tool.name == "support"
    assert sorted(tool.inputSchema["properties"]) == ["message", "run_id"]
    reply = text(first)
    assert first.isError is False
    assert reply.startswith("needs a person: the tool 'refund' must be approved before it runs (check-in cki_")
    store = SqliteStore(db)
    [record] = store.list()
    assert record.status == "paused"
    assert f"Run id: {record.run_id}." in reply and f'run_id="{record.run_id}"' in reply

    # a person approves the request the reply names, through the store (another agent on the same store)
    request_id = re.search(r"\(check-in (cki_[0-9a-f]+)\)", reply)
    assert request_id is not None
    approver = build_agent(str(db))
    decision = check_in_approved(request={"id": request_id.group(1)}, by="alice")
    assert approver.resume_run(record.run_id, decision) == "Done: refunded A1"

    _, again = asyncio.run(ask_over_stdio(db, {"run_id": record.run_id}))
    assert text(again) == "Done: refunded A1"


def test_an_answer_recorded_in_the_store_is_applied_when_the_caller_asks_again(tmp_path: Path) -> None:
    """A decision recorded in the store but not applied (as a queue's approve does): asking again
    with run_id applies it in the served process and answers; a third ask reads the stored answer."""
    from agent._run.durable import answer_in

    db = tmp_path / "runs.db"
    _, first = asyncio.run(ask_over_stdio(db, {"message": "refund order A1"}))
    request_id = re.search(r"\(check-in (cki_[0-9a-f]+)\)", text(first))
    assert request_id is not None
    store = SqliteStore(db)
    [record] = store.list()
    _, waiting = asyncio.run(ask_over_stdio(db, {"run_id": record.run_id}))
    assert text(waiting).startswith("needs a person: the tool 'refund' must be approved")
    answer_in(store, record.run_id, check_in_approved(request={"id": request_id.group(1)}, by="alice"))
    recorded = store.get(record.run_id)
    assert (recorded.status, recorded.has_answer) == ("running", True)  # recorded, not applied
    _, applied, again = asyncio.run(ask_over_stdio(db, {"run_id": record.run_id}, {"run_id": record.run_id}))
    assert (text(applied), text(again)) == ("Done: refunded A1", "Done: refunded A1")
    assert store.get(record.run_id).status == "done"


def test_a_middleware_ask_is_refused_as_a_denial_naming_the_middleware(tmp_path: Path) -> None:
    """Over MCP nobody can answer an ask: it becomes a denial by that middleware, in the ledger too."""
    db = tmp_path / "runs.db"
    _, result = asyncio.run(ask_over_stdio(db, {"message": "wipe the orders"}))
    assert text(result) == (
        "Done: middleware 'guard' asked a person to decide, and there is no pause here to carry that ask: "
        "Really wipe a table?"
    )
    [record] = SqliteStore(db).list()
    assert record.status == "done"
    [row] = next(op for c in record.commit_log for op in c.trace if op.path == ("middleware_decisions",)).value
    assert (row["middleware"], row["outcome"], row["tool_name"]) == ("guard", "deny", "wipe")


def test_asking_with_neither_message_nor_run_id_is_an_error_result(tmp_path: Path) -> None:
    """An empty call is the tool's error result, saying what to pass."""
    _, result = asyncio.run(ask_over_stdio(tmp_path / "runs.db", {}))
    assert result.isError is True
    assert "support: pass message (the question) or run_id" in text(result)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "RUNS_DB": str(tmp_path / "runs.db")}
    code = (
        "from served_agent import build_agent\nfrom agent.mcp import mcp_server\nimport os\n"
        f"mcp_server(build_agent(os.environ['RUNS_DB']), name='support').run('http', port={port})\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        env={**env, "PYTHONPATH": str(Path(__file__).parent)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.2)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_served_agent_over_http_is_a_tool_for_another_agent(http_server: str) -> None:
    """mcp_server over streamable HTTP on 127.0.0.1, consumed by mcp_tools(url=...): one agent asks another."""
    with mcp_tools(url=http_server) as tools:
        [tool] = tools
        assert (tool.name, tool.source) == ("support", "support")
        reply = asyncio.run(tool.execute({"message": "wipe everything"}, None))
    assert reply == (
        "Done: middleware 'guard' asked a person to decide, and there is no pause here to carry that ask: "
        "Really wipe a table?"
    )


def test_a_chart_is_served_as_a_tool_taking_its_input() -> None:
    """mcp_server(chart): the tool runs the chart on ``input`` and answers its output as JSON."""

    def double(scope: Any, ctx: Any) -> Any:
        return {"doubled": ctx.args["n"] * 2}

    server = mcp_server(flow_chart("Double", double, "double").build(), name="double")
    tools = asyncio.run(server.mcp.list_tools())
    assert [t.name for t in tools] == ["double"]
    content = asyncio.run(server.mcp.call_tool("double", {"input": {"n": 21}}))
    blocks = content[0] if isinstance(content, tuple) else content
    assert [b.text for b in blocks] == ['{"doubled": 42}']


def test_mcp_server_refuses_a_check_in_agent_without_a_store() -> None:
    """Without a run store nobody could answer a check-in: mcp_server says so before serving."""
    from agent_helpers import build, refund_tool

    agent, _ = build(["hi"], refund_tool(check_in="always"))
    with pytest.raises(ValueError, match=r"^mcp_server: tool\(s\) refund have a check-in, and a person can answer"):
        mcp_server(agent, name="support")
    with pytest.raises(TypeError, match=r"^mcp_server\(agent_or_chart\): expected an Agent or a FlowChart, got str"):
        mcp_server("agent", name="x")
