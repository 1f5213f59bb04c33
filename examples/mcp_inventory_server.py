"""An MCP server written with the SDK's FastMCP: what ``docs/mcp.md`` connects an agent to.

Run it as ``python examples/mcp_inventory_server.py`` (stdio); ``mcp_tools(command=[...])``
starts it for you.
"""

from __future__ import annotations

from mcp.server.fastmcp import FastMCP

server = FastMCP("inventory")


@server.tool()
def stock(sku: str, warehouse: str = "main") -> str:
    """How many items of a SKU a warehouse holds."""
    return f"{sku}@{warehouse}: {len(sku) * 7} in stock"


@server.tool()
def reserve(sku: str, quantity: int) -> str:
    """Reserve items of a SKU for an order."""
    if quantity > 10:
        raise ValueError(f"cannot reserve {quantity} of {sku}: at most 10")
    return f"reserved {quantity} of {sku}"


if __name__ == "__main__":
    server.run("stdio")
