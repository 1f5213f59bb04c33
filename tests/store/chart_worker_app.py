"""The Celery app of the chart worker test: ``celery -A chart_worker_app worker`` advances runs
of ``chart_flows:chart`` in ``chart_flows:store`` and retries a failed one twice."""

from __future__ import annotations

import os

from agent.celery import make_app
from flowchart import Retry

app = make_app(
    "chart_flows:chart",
    store="chart_flows:store",
    retry_failed=Retry(attempts=3),
    visibility_timeout=float(os.environ.get("VISIBILITY_TIMEOUT", "3600")),
)
