"""The MCP tests start real MCP servers (Python scripts in this folder) with the SDK installed."""

import sys
from pathlib import Path

try:
    import mcp  # noqa: F401
except ImportError:  # the [mcp] extra is not installed: nothing here can run
    collect_ignore_glob = ["test_*.py"]

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE.parent / "agent"))
sys.path.insert(0, str(HERE))
