"""The MCP server ``docs/mcp.md`` connects an agent to: ``agent.mcp.inventory_example``.

It ships with the package (so the docs' example runs wherever pyfootprint is installed);
this file runs it from a checkout: ``python examples/mcp_inventory_server.py`` is
``python -m agent.mcp.inventory_example`` (stdio).
"""

from __future__ import annotations

from agent.mcp.inventory_example import main

if __name__ == "__main__":
    main()
