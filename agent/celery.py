"""Scale-out on Celery: many worker processes, on many machines, advance stored agent runs.

    # myapp/worker.py
    from agent.celery import make_app
    app = make_app("myapp.agents:support_agent", broker="redis://queue:6379/0")

    $ celery -A myapp.worker worker --concurrency 4        # on every machine
    >>> run_id = agent.submit("refund order A-1", app=app)  # anywhere

Laws:
- The store, not the queue, is the truth. The one task, ``advance_run(run_id)``, reads
  the run from the store and does what the RECORD says (``RunRecord.next_step``):
  start it, resume it with the recorded answer, or nothing (waiting for a person, or
  finished). So a task delivered twice, late, or after a crash is harmless.
- Exactly-once commits, at-least-once delivery. Tasks acknowledge LATE (after the
  segment committed) and are re-queued when their worker dies, so every queued advance
  happens; a second worker running the same segment loses the store's commit race
  (``CommitConflictError``) and its work is discarded. A segment's stage bodies may
  therefore run again if a worker died before committing: tools get the idempotency
  key ``<run_id>:<tool_call_id>`` (``ctx.idempotency_key``) to deduplicate side effects.
- The agent is named by import path (``MODULE:ATTR``, a built ``Agent`` or a
  zero-argument factory) and built once per worker process, after the fork; nothing
  is pickled. Its store must be one every worker reaches (PostgreSQL across machines,
  SQLite on one machine).
- Messages are JSON (a run id); nothing else travels through the broker.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from flowchart.store import CommitConflictError, RunStore

from . import durable
from .errors import AgentLoadError
from .loading import load_agent

if TYPE_CHECKING:
    from .agent import Agent

TASK_NAME = "pyfootprint.advance_run"
DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
log = logging.getLogger("agent.celery")

_AGENTS: dict[tuple[int, str], Any] = {}
_DEFAULT_APP: list[Any] = []


def _celery() -> Any:
    try:
        import celery
    except ImportError:
        raise ImportError(
            "agent.celery needs Celery: pip install 'celery[redis]' "
            "(in a pyfootprint checkout: pip install -e '.[celery]')"
        ) from None
    return celery


def make_app(
    agent: str,
    *,
    broker: str | None = None,
    name: str = "pyfootprint",
    queue: str = "pyfootprint",
    visibility_timeout: float = 3600.0,
    **config: Any,
) -> Any:
    """A Celery app whose task ``advance_run`` advances runs of the agent ``agent`` names.

    ``broker`` defaults to ``$AGENT_BROKER_URL`` or local Redis. ``visibility_timeout``
    (seconds) is how long Redis waits before redelivering the task of a worker that
    vanished (a killed machine); keep it above your longest segment (a segment still
    running at the timeout is delivered again: harmless, the store keeps one commit, but
    its tools run twice). Workers sweep for abandoned tasks every quarter of it (1–10 s). ``config`` is
    passed to ``app.conf.update``. The newest app made in a process is the default
    for ``agent.submit``.
    """
    celery = _celery()
    from celery.utils.log import get_task_logger

    task_log = get_task_logger(__name__)
    app = celery.Celery(name, broker=broker or os.environ.get("AGENT_BROKER_URL", DEFAULT_BROKER))
    app.conf.update(
        task_acks_late=True, task_reject_on_worker_lost=True, worker_prefetch_multiplier=1,
        task_serializer="json", accept_content=["json"], task_ignore_result=True,
        task_default_queue=queue, broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": visibility_timeout,
            # sweep for abandoned tasks often enough that recovery ~ visibility timeout
            "unacked_restore_interval": max(1, min(10, int(visibility_timeout / 4))),
            "unacked_restore_throttle": 1,
        },
        worker_hijack_root_logger=False,
    )  # fmt: skip
    app.conf.update(config)
    app.conf.pyfootprint_agent = agent

    @app.task(name=TASK_NAME, bind=True, max_retries=20)
    def advance_run(task: Any, run_id: str) -> str:
        """Advance stored run ``run_id`` to its next pause or end (a no-op if it is not due)."""
        task_log.info("advance %s start", run_id)
        try:
            status = advance(app_agent(app), run_id)
            task_log.info("advance %s end %s", run_id, status)
            return status
        except _Retry as exc:
            raise task.retry(countdown=min(2**task.request.retries, 30), exc=exc.error) from None

    _DEFAULT_APP[:] = [app]
    return app


def default_app() -> Any:
    """The newest app ``make_app`` made in this process (``agent.submit``'s default)."""
    if not _DEFAULT_APP:
        raise RuntimeError("no Celery app: make one with agent.celery.make_app(...) or pass app=")
    return _DEFAULT_APP[0]


def app_agent(app: Any) -> Agent:
    """The agent ``app`` advances, built once per process (after a worker's fork)."""
    spec = app.conf.pyfootprint_agent
    key = (os.getpid(), spec)
    if key not in _AGENTS:
        try:
            _AGENTS[key] = load_agent(spec)
        except AgentLoadError as exc:
            raise RuntimeError(f"agent.celery: {exc}") from None
    return _AGENTS[key]


def app_store(app: Any) -> RunStore:
    """The store of the agent ``app`` advances."""
    store = app_agent(app).store
    if store is None:
        raise RuntimeError(f"the agent {app.conf.pyfootprint_agent} has no run store (Agent.create(store=...))")
    return store


class _Retry(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def advance(agent: Agent, run_id: str) -> str:
    """What ``advance_run`` does: advance the run if the store says it is due; return its status.

    A lost commit race (another worker committed this segment) is not an error: the
    run is already where it should be. A run failing in a stage is recorded ``failed``
    and not retried. Anything that left the run unrecorded (the store unreachable) is
    retried with backoff.
    """
    store = agent.store
    record = store.get(run_id)
    if record.next_step in ("wait", "finished"):
        return record.status
    try:
        durable.advance_now(agent, run_id)
    except CommitConflictError:
        log.info("run %s: another worker committed this segment first; nothing to do", run_id)
        return store.get(run_id).status
    except Exception as exc:
        try:
            status = store.get(run_id).status
        except Exception:
            raise _Retry(exc) from None
        if status == "running":
            raise _Retry(exc) from None
        log.warning("run %s %s: %s", run_id, status, exc)
        return status
    return store.get(run_id).status


def enqueue(app: Any, run_id: str) -> None:
    """Send ``advance_run(run_id)`` to the workers."""
    app.send_task(TASK_NAME, args=[run_id], queue=app.conf.task_default_queue)


def submit(agent: Agent, message: str, identity: Any = None, *, app: Any = None, run_id: str | None = None) -> str:
    """Record a queued run of ``agent`` on ``message`` and enqueue it; return its run id."""
    run_id = durable.create(agent, durable.make_input(message, identity), run_id)
    enqueue(app or default_app(), run_id)
    return run_id


def answer_and_enqueue(app: Any, store: RunStore, run_id: str, decision: Any) -> None:
    """Record ``decision`` for the run's pause (once, checked as ``resume_run`` checks it)
    and enqueue the advance that applies it."""
    durable.answer_in(store, run_id, decision)
    enqueue(app, run_id)
