"""mcp_tools: a real FastMCP server's tools, started over stdio, used as ordinary agent tools."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from agent_helpers import build, call, calls

from agent import Paused
from agent.mcp import McpConnectionError, McpTools, mcp_tools
from governance import allow, check_in_approved

SERVER = str(Path(__file__).parent / "inventory_server.py")


@pytest.fixture(scope="module")
def log_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mcp") / "calls.jsonl"


@pytest.fixture(scope="module")
def inventory(log_path: Path) -> Iterator[McpTools]:
    with mcp_tools(command=[sys.executable, SERVER], env={"CALL_LOG": str(log_path)}) as tools:
        yield tools


def served(log_path: Path) -> list[dict[str, Any]]:
    if not log_path.exists():
        return []
    return [json.loads(line) for line in log_path.read_text().splitlines()]


def test_the_servers_tools_arrive_with_their_json_schemas_and_source(inventory: McpTools) -> None:
    """Each MCP tool is a Tool named as on the server, with its JSON Schema and the server as source."""
    assert inventory.name == "inventory"
    assert [t.name for t in inventory] == ["stock", "reserve"]
    stock = inventory[0]
    assert stock.description == "How many items of a SKU a warehouse holds."
    assert stock.input_schema["required"] == ["sku"]
    assert stock.input_schema["properties"]["warehouse"] == {"default": "main", "title": "Warehouse", "type": "string"}
    assert {t.source for t in inventory} == {"inventory"}


def test_an_agent_calls_an_mcp_tool_and_middleware_sees_its_source(inventory: McpTools, log_path: Path) -> None:
    """A call goes through the middleware (which sees source="inventory") to the server, and the
    server's answer is the tool result in the history and the commit log."""
    seen: list[tuple[str, str | None]] = []

    def audit(c: Any) -> Any:
        seen.append((c.tool_name, c.source))
        return allow()

    before = len(served(log_path))
    agent, _ = build(
        [calls(call("c1", "stock", sku="AB12")), "There are 28."],
        *inventory,
        configure=lambda b: b.tool_middleware(SimpleNamespace(name="audit", on_tool_call=audit)),
    )
    assert agent.run("how many AB12?") == "There are 28."
    assert seen == [("stock", "inventory")]
    assert served(log_path)[before:] == [{"tool": "stock", "args": {"sku": "AB12", "warehouse": "main"}}]
    history = agent.last_snapshot().shared_state["history"]
    assert {"role": "tool", "tool_call_id": "c1", "content": "AB12@main: 28 in stock"}.items() <= history[2].items()
    rows = agent.last_snapshot().shared_state["middleware_decisions"]
    assert [(r["middleware"], r["tool_name"], r["outcome"]) for r in rows] == [("audit", "stock", "allow")]


def test_arguments_are_validated_against_the_mcp_schema_before_the_server_is_called(
    inventory: McpTools, log_path: Path
) -> None:
    """A call missing a required argument goes back to the model; the server never sees it."""
    before = len(served(log_path))
    agent, _ = build([calls(call("c1", "reserve", sku="AB")), "Sorry."], *inventory)
    assert agent.run("reserve AB") == "Sorry."
    assert served(log_path)[before:] == []
    assert "'quantity' is required but missing" in agent.last_snapshot().shared_state["history"][2]["content"]


def test_an_mcp_error_result_is_the_tool_failing(inventory: McpTools) -> None:
    """A tool result flagged isError reaches the model as the server's text, marked as an error."""
    events: list[Any] = []
    agent, _ = build([calls(call("c1", "reserve", sku="AB", quantity=50)), "Too many."], *inventory)
    agent.on("tool.end", lambda name, payload: events.append(payload))
    assert agent.run("reserve 50") == "Too many."
    [end] = events
    assert end["error"] is True
    assert end["result"] == "Error executing tool reserve: cannot reserve 50 of AB: at most 10"


def test_a_check_in_holds_an_mcp_tool_until_a_person_approves(log_path: Path) -> None:
    """check_in="always" on MCP tools: the run pauses before the server is called; after the
    approval the call reaches the server once."""
    with mcp_tools(command=[sys.executable, SERVER], env={"CALL_LOG": str(log_path)}, check_in="always") as tools:
        before = len(served(log_path))
        agent, _ = build([calls(call("c1", "reserve", sku="ZZ", quantity=2)), "Reserved."], *tools)
        out = agent.run("reserve 2 ZZ")
        assert isinstance(out, Paused) and out.check_in is not None and out.check_in.tool == "reserve"
        assert served(log_path)[before:] == []
        assert agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice")) == "Reserved."
        assert served(log_path)[before:] == [{"tool": "reserve", "args": {"sku": "ZZ", "quantity": 2}}]


def test_closing_the_tools_ends_the_server_and_later_calls_say_so(log_path: Path) -> None:
    """After close() (the end of the with block) a call is refused with the server named."""
    with mcp_tools(command=[sys.executable, SERVER], name="stockroom") as tools:
        assert {t.source for t in tools} == {"stockroom"}
    assert tools.closed
    agent, _ = build([calls(call("c1", "stock", sku="AB")), "No."], *tools)
    events: list[Any] = []
    agent.on("tool.end", lambda name, payload: events.append(payload))
    assert agent.run("stock?") == "No."
    assert events[0]["error"] is True
    assert events[0]["result"].endswith("is closed: its tools cannot be called any more")


def test_a_server_that_cannot_start_is_an_error_naming_it() -> None:
    """A command that does not exist fails in mcp_tools, before any run, naming the program."""
    with pytest.raises(McpConnectionError, match=r"^MCP server '/no/such/mcp-server': "):
        mcp_tools(command=["/no/such/mcp-server"], timeout=30)


def test_mcp_tools_needs_exactly_one_transport() -> None:
    """command= and url= are exclusive, and one is required; a bad URL is named."""
    with pytest.raises(ValueError, match=r"^mcp_tools: pass exactly one of command="):
        mcp_tools()
    with pytest.raises(ValueError, match=r"^mcp_tools: pass exactly one of command="):
        mcp_tools(command=["x"], url="http://127.0.0.1:1/mcp")
    with pytest.raises(ValueError, match=r"^mcp_tools\(url=...\): expected an http:// or https:// URL, got 'ftp://x'"):
        mcp_tools(url="ftp://x")
    with pytest.raises(ValueError, match=r"^mcp_tools\(command=...\): expected a list of non-empty strings"):
        mcp_tools(command="python server.py")


async def test_mcp_tools_work_from_arun_inside_the_callers_loop(inventory: McpTools, log_path: Path) -> None:
    """await agent.arun in a running loop reaches the session's own loop without blocking this one."""
    before = len(served(log_path))
    agent, _ = build([calls(call("c1", "stock", sku="Q", warehouse="east")), "One lot."], *inventory)
    assert await agent.arun("stock of Q in east?") == "One lot."
    assert served(log_path)[before:] == [{"tool": "stock", "args": {"sku": "Q", "warehouse": "east"}}]


def test_the_server_lives_as_long_as_the_agent_that_holds_its_tools() -> None:
    """Tools handed straight to a builder keep their server alive; when the agent is gone, so is it."""
    import gc
    import weakref

    tools = mcp_tools(command=[sys.executable, SERVER])
    owner = weakref.ref(tools)
    session = tools._session
    agent, _ = build([calls(call("c1", "stock", sku="AB")), "14."], *tools)
    del tools
    gc.collect()
    assert owner() is not None and not owner().closed  # type: ignore[union-attr]
    assert agent.run("stock of AB?") == "14."
    assert agent.last_snapshot().shared_state["history"][2]["content"] == "AB@main: 14 in stock"
    del agent, _
    gc.collect()
    assert owner() is None and session.closed
