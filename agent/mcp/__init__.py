"""MCP (Model Context Protocol) for agents, with the official SDK (extra ``[mcp]``).

Tools in: ``mcp_tools(command=[...])`` / ``mcp_tools(url=...)`` — an MCP server's tools as
ordinary ``Tool``s (every gate applies; ``source`` is the server's name). Tools out:
``mcp_server(agent_or_chart, name=...)`` — an agent or a chart served as an MCP tool.
Importing ``agent`` never needs this package; importing this one needs ``mcp``.
"""

from .client import McpConnectionError, McpToolError, McpTools, mcp_tools
from .server import NEEDS_A_PERSON, McpServer, mcp_server

__all__ = [
    "NEEDS_A_PERSON",
    "McpConnectionError",
    "McpServer",
    "McpToolError",
    "McpTools",
    "mcp_server",
    "mcp_tools",
]
