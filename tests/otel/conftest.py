"""The OpenTelemetry tests reuse the agent tests' builders (tests/agent/agent_helpers.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "agent"))

try:
    import opentelemetry.sdk  # noqa: F401
except ImportError:  # the [otel] extra is not installed: nothing here can run
    collect_ignore_glob = ["test_*.py"]
