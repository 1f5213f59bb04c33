"""The MCP page's "Tools in" example runs wherever pyfootprint is installed, and a server whose
process ends says so.

The example server ships as ``agent.mcp.inventory_example`` (``python -m``), so the docs'
``mcp_tools(command=[sys.executable, "-m", "agent.mcp.inventory_example"])`` works from any
directory — here from an empty temporary one, in a fresh process, with only the installed
package importable. A stdio server that ends (cannot start, or dies mid-session) is an
``McpConnectionError`` that says its process ended and quotes its last stderr lines.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="agent.mcp needs the [mcp] extra")

from agent.mcp import McpConnectionError, mcp_tools

OUTSIDE = """
import sys
from agent.mcp import mcp_tools
with mcp_tools(command=[sys.executable, "-m", "agent.mcp.inventory_example"]) as inventory:
    print(inventory.name, [t.name for t in inventory])
"""


def test_the_docs_example_server_runs_outside_a_checkout(tmp_path: Path) -> None:
    """From an empty directory, without the checkout on ``sys.path``, the shipped server starts and lists
    its two tools (the page's old ``examples/...`` path failed there with "Connection closed")."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-I", "-c", OUTSIDE], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert (done.returncode, done.stdout) == (0, "inventory ['stock', 'reserve']\n"), done.stderr


def test_a_server_that_cannot_start_says_its_process_ended() -> None:
    """A server process that exits at once: the error names the server, says the process ended before it
    answered, and quotes what it wrote on stderr."""
    dies = [
        sys.executable,
        "-c",
        "import sys; sys.stderr.write('inventory: no config at /etc/inv.toml\\n'); sys.exit(3)",
    ]
    with pytest.raises(
        McpConnectionError,
        match=r"^MCP server '.*python[^']*': the server process ended before it answered; its last words on "
        r"stderr: inventory: no config at /etc/inv\.toml$",
    ):
        mcp_tools(command=dies, timeout=60)


def test_a_missing_server_module_is_named() -> None:
    """``python -m`` of a module that is not installed: Python's own complaint is quoted."""
    with pytest.raises(McpConnectionError, match=r"ended before it answered; .*No module named 'no_such_inventory'"):
        mcp_tools(command=[sys.executable, "-m", "no_such_inventory.server"], timeout=60)


def test_a_pipe_broken_by_the_ended_process_is_told_as_its_end() -> None:
    """Under load the client may write to the pipe of a server that already exited: anyio raises
    ``BrokenResourceError`` (no message) instead of the session's "Connection closed". That is the
    same end, told the same way with the server's last words (before: "MCP server '…':
    BrokenResourceError", which the suite saw once on a loaded machine)."""
    import anyio

    from agent.mcp.client import _Session, _TeeLog

    log = _TeeLog()
    log.file.write("inventory: no config at /etc/inv.toml\n")
    session = _Session("'inventory'", errlog=log)
    try:
        told = session.why_ended(ExceptionGroup("task group", [anyio.BrokenResourceError()]), "answered")
        assert told == "the server process ended before it answered; its last words on stderr: " + (
            "inventory: no config at /etc/inv.toml"
        )
        assert session.why_ended(ValueError("bad reply"), "answered") == "ValueError: bad reply"
    finally:
        session.close()
