"""The Celery app the test and benchmark workers run: ``celery -A worker_app worker``.

Configured from the environment the test sets: ``AGENT_BROKER_URL`` (Redis),
``AGENT_RUNS_DSN`` (the PostgreSQL store) and ``VISIBILITY_TIMEOUT`` (seconds).
"""

from __future__ import annotations

import os

from agent.celery import make_app

app = make_app(
    "refund_agent:refund_agent",
    visibility_timeout=float(os.environ.get("VISIBILITY_TIMEOUT", "3600")),
)
