"""A plain chart for the Celery worker tests (``chart_worker_app``): no agent, just stages.

``Slow`` sleeps ``$CHART_DELAY`` seconds (so a test can kill a worker in the middle of it)
and logs each execution to ``$CHART_LOG``; ``Flaky`` fails while the file ``$CHART_FLAKY``
holds a positive count, counting it down, so a run fails and is retried by the workers.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from flowchart import flow_chart
from flowchart.store import PostgresStore, RunStore


def _log(line: str) -> None:
    with open(os.environ["CHART_LOG"], "a", encoding="utf-8") as out:
        out.write(line + "\n")


def slow(scope: Any, ctx: Any) -> None:
    """Log the execution, then take ``$CHART_DELAY`` seconds."""
    _log(f"slow {ctx.args['n']}")
    time.sleep(float(os.environ.get("CHART_DELAY", "0")))
    scope.slow = True


def flaky(scope: Any, ctx: Any) -> None:
    """Fail while the ``$CHART_FLAKY`` counter is positive (one failure per count)."""
    marker = Path(os.environ["CHART_FLAKY"])
    left = int(marker.read_text() or "0") if marker.exists() else 0
    if ctx.args["n"] == 0 and left > 0:
        marker.write_text(str(left - 1))
        raise ConnectionError("downstream is down")
    scope.flaky = True


chart = (
    flow_chart("Start", lambda scope: setattr(scope, "started", True), "start")
    .add_function("Slow", slow, "slow")
    .add_function("Flaky", flaky, "flaky")
    .build()
)


def store() -> RunStore:
    """The PostgreSQL store the test named in ``$AGENT_RUNS_DSN``."""
    return PostgresStore(os.environ["AGENT_RUNS_DSN"])
