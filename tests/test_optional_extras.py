"""The extras stay optional: flowchart, agent and governance import without OpenTelemetry or MCP."""

from __future__ import annotations

import subprocess
import sys

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("opentelemetry", "mcp"):
            raise ImportError(f"{name} is blocked in this test")
        return None
sys.meta_path.insert(0, Block())
"""


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True, timeout=120)


def test_the_packages_import_without_opentelemetry_or_mcp() -> None:
    """With opentelemetry and mcp unimportable, the three packages (and an agent run) still work."""
    done = run(
        "import flowchart, agent, governance\n"
        "from agent import Agent\nfrom agent.providers import mock\n"
        "print(Agent.create(provider=mock('hi'), recorders=[]).build().run('hello'))\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('opentelemetry', 'mcp')))\n"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hi", "[]"]


def test_the_extras_say_which_extra_to_install() -> None:
    """Importing flowchart.otel or agent.mcp without the SDK names the extra to install."""
    otel = run("import flowchart.otel")
    assert "pip install opentelemetry-api opentelemetry-sdk (in a pyfootprint checkout: pip install -e '.[otel]')" in (
        otel.stderr
    )
    mcp = run("import agent.mcp")
    assert "pip install 'mcp>=1.30,<2' (in a pyfootprint checkout: pip install -e '.[mcp]')" in mcp.stderr
