"""The Celery app of the SIGKILL loop's workers (``bench/effects_sigkill_celery.py``): the refund
agent of ``effect_agent.py`` with the effect ``$EFFECT`` on the PostgreSQL store ``$AGENT_RUNS_DSN``,
at the default settings of ``agent.celery.make_app`` (the broker from ``$AGENT_BROKER_URL``).
"""

from __future__ import annotations

import os
from typing import Any

from effect_agent import build

from agent.celery import make_app


def agent() -> Any:
    """The refund agent the workers advance (built once per worker process)."""
    return build(os.environ["AGENT_RUNS_DSN"], os.environ["EFFECT"])


app = make_app("effect_worker_app:agent")
