"""A small MCP server written with the SDK's FastMCP, started over stdio by the tests.

Run as ``python tests/mcp/inventory_server.py``; it logs every call it serves to the file
named by ``$CALL_LOG`` (one JSON line per call), so a test can see what reached the server.
"""

from __future__ import annotations

import json
import os

from mcp.server.fastmcp import FastMCP

server = FastMCP("inventory")


def _log(tool: str, args: dict[str, object]) -> None:
    path = os.environ.get("CALL_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps({"tool": tool, "args": args}) + "\n")


@server.tool()
def stock(sku: str, warehouse: str = "main") -> str:
    """How many items of a SKU a warehouse holds."""
    _log("stock", {"sku": sku, "warehouse": warehouse})
    return f"{sku}@{warehouse}: {len(sku) * 7} in stock"


@server.tool()
def reserve(sku: str, quantity: int) -> str:
    """Reserve items of a SKU for an order."""
    _log("reserve", {"sku": sku, "quantity": quantity})
    if quantity > 10:
        raise ValueError(f"cannot reserve {quantity} of {sku}: at most 10")
    return f"reserved {quantity} of {sku}"


if __name__ == "__main__":
    server.run("stdio")
