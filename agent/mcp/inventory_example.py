"""The example MCP server of ``docs/mcp.md``, shipped with the package so the page's "Tools in"
example runs wherever pyfootprint is installed (not only in a checkout).

Run it as ``python -m agent.mcp.inventory_example`` (stdio); ``mcp_tools(command=[sys.executable,
"-m", "agent.mcp.inventory_example"])`` starts it for you. It is written with the MCP SDK's
``FastMCP`` and needs the ``[mcp]`` extra, like every module of ``agent.mcp``. Two tools:
``stock`` (a deterministic count) and ``reserve`` (fails above 10, to show a tool error).
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


def main() -> None:
    """Serve the tools over stdio until the client closes the connection."""
    server.run("stdio")


if __name__ == "__main__":
    main()
