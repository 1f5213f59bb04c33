"""The Celery app the test and benchmark workers run: ``celery -A worker_app worker``.

Configured from the environment the test sets: ``AGENT_BROKER_URL`` (Redis),
``AGENT_RUNS_DSN`` (the PostgreSQL store), ``VISIBILITY_TIMEOUT`` and ``STRANDED_AFTER`` (seconds).
``BENCH_LEASES=off`` (``bench/scale_celery.py --leases off`` only: what leases cost) advances runs
without a lease and without the background sweep (the agent is still built when a pool process
starts, as the sweep builds it, so the two differ by the leases alone). ``SLEEP_BEFORE_LEASE``
seconds (with ``RECEIVED_MARK``, a file it writes the run id to): the worker waits that long
between receiving a run and leasing it — a test kills it there.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import agent.celery
from agent.celery import make_app

LEASES = os.environ.get("BENCH_LEASES", "on") != "off"

if not LEASES:

    @contextlib.contextmanager
    def _no_lease(store: Any, run_id: str, holder: str) -> Iterator[None]:
        yield None

    agent.celery.held = _no_lease  # type: ignore[assignment]

if os.environ.get("SLEEP_BEFORE_LEASE"):  # a worker that dies between receiving a run and leasing it
    import time
    from pathlib import Path

    _held = agent.celery.held

    def _late_lease(store: Any, run_id: str, holder: str) -> Any:
        Path(os.environ["RECEIVED_MARK"]).write_text(run_id)
        time.sleep(float(os.environ["SLEEP_BEFORE_LEASE"]))
        return _held(store, run_id, holder)

    agent.celery.held = _late_lease  # type: ignore[assignment]

app = make_app(
    "refund_agent:refund_agent",
    visibility_timeout=float(os.environ.get("VISIBILITY_TIMEOUT", "3600")),
    reclaim_every=agent.celery.DEFAULT_RECLAIM_EVERY if LEASES else None,
    stranded_after=float(os.environ.get("STRANDED_AFTER", agent.celery.STRANDED_AFTER)),
)

if not LEASES:
    from celery import signals

    @signals.worker_process_init.connect(weak=False)
    def _build_the_agent(**_: Any) -> None:
        agent.celery.app_store(app)
