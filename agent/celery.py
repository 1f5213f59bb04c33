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
  is pickled. A plain ``FlowChart`` is advanced the same way: name it instead of an
  agent, and its store with ``make_app(..., store="MODULE:ATTR")`` (``submit_chart``
  queues a chart run). Its store must be one every worker reaches (PostgreSQL across machines,
  SQLite on one machine).
- Messages are JSON (a run id); nothing else travels through the broker.
- A worker advancing a run holds a lease on it in the store, renewed by a heartbeat
  (``flowchart.store.leases``): a second worker given the same run while the lease is live does
  nothing, and a worker whose lease was taken over (it stalled past its expiry) cannot commit
  (fencing). Every worker process also sweeps the store in the background (``reclaim_every``
  seconds, 0.25 by default): a run whose lease expired — its worker died — is claimed for a
  handover (``leases.hand_over``: one sweeper wins, the dead holder stays fenced off) and its
  advance enqueued ahead of the queued runs (on Redis), so a dead worker's run is picked up about
  a lease's ttl (1.2 s) after the kill, with no beat or extra process to start.
  ``reclaim_expired(app)`` is that sweep, callable by hand. With ``acks_late`` and a prefetch of
  one task per process, a worker holds no run it has not started; a worker takes the lease
  before it reads the run, and a ``running`` run with no lease that has not moved for
  ``stranded_after`` seconds (60) — its message died with a worker in the instant between
  receiving and leasing — is handed over too. The broker's redelivery after its visibility
  timeout stays the last fallback.
- A run that FAILS in a stage is recorded ``failed`` with its resume point; with
  ``make_app(..., retry_failed=Retry(...))`` the worker retries it under that policy: it
  flips the run back to ``running`` (``store.retry``: once, whichever worker wins) and
  enqueues the advance after the policy's delay, which re-runs only the stage that
  failed. The attempts are counted from the record (the log's ``recovers`` commits), so
  the count survives worker restarts.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent._run import durable, queueing
from agent._run.loading import load_agent_or_chart, load_store

# the queueing side is agent._run.queueing (no Celery, no loading: Agent.submit uses it); the names are
# this module's too, where docs/scale.md and docs/durable.md use them
from agent._run.queueing import (
    TASK_NAME,
    answer_and_enqueue,
    default_app,
    enqueue,
    retry_and_enqueue,
    submit,
    submit_chart,
)
from agent.errors import AgentLoadError
from flowchart import FlowChart, Retry
from flowchart.store import CommitConflictError, RunStore, StoreError
from flowchart.store.leases import DEFAULT_TTL, HANDOVER_TTL, LeaseBusyError, expired, hand_over, held, stranded
from flowchart.store.runs import advance_chart


def worker_id() -> str:
    """This process's name as a lease holder (each worker process its own, after the fork)."""
    return f"{os.uname().nodename}:{os.getpid()}"


def reclaim_expired(app: Any, store: RunStore | None = None, *, long_stranded: bool = True) -> list[str]:
    """Claim and enqueue an advance of every ``running`` run whose lease expired — its worker died
    or stalled; on Redis ahead of the queue — and of every ``running`` run without a lease that
    has not moved for ``STRANDED_AFTER`` seconds (received by a worker that died before leasing
    it, or queued that long: a second message is harmless) (``flowchart.store.leases``); return
    their ids. Each run is claimed first (``hand_over``): of several workers sweeping at once, one
    enqueues it. Every worker runs this in the background (``make_app(reclaim_every=...)``); call
    it by hand where no worker runs. ``long_stranded=False`` leaves out the runs stranded for
    ``STRANDED_AFTER`` (the background sweep looks for those once a second, not at every sweep)."""
    target = store if store is not None else app_store(app)
    taken = []
    # a run delivered to a worker that died before leasing it: its message waits, unacknowledged
    # (as a lease: received a lease's ttl ago and not leased, it is treated as one that expired)
    dead = [*expired(target), *stranded(target, 0.0, among=delivered_before(app, time.time() - DEFAULT_TTL))]
    after = getattr(app.conf, "pyfootprint_stranded_after", None) or STRANDED_AFTER
    # a stranded run may just be waiting in a long queue: its claim waits as long again (and doubles)
    waiting = stranded(target, after) if long_stranded else []
    for run_id, wait in [*((r, HANDOVER_TTL) for r in dead), *((r, after) for r in waiting)]:
        try:
            claimed = hand_over(target, run_id, worker_id(), ttl=wait)
        except Exception as exc:  # another sweeper inserted the claim first, the store blinked
            log.debug("run %s: not handed over (%s)", run_id, exc)
            continue
        if claimed is not None:
            enqueue(app, run_id, first=run_id in dead)
            taken.append(run_id)
    return taken


_REDIS: dict[tuple[int, str], Any] = {}


def delivered_before(app: Any, moment: float) -> list[str]:
    """The run ids of the advances the broker delivered to a worker before ``moment`` (epoch
    seconds) and that are not acknowledged yet — on Redis, kombu's ``unacked`` hash, which holds
    only the messages workers hold (a few per worker process), not the queue. A run among them
    with no lease was received by a worker that died before leasing it (or one far behind).
    Another broker: ``[]``."""
    url = str(app.conf.broker_url or "")
    if not url.startswith(("redis://", "rediss://", "redis+socket://")):
        return []
    import base64
    import json

    options = app.conf.broker_transport_options or {}
    key = (os.getpid(), url)
    try:
        if key not in _REDIS:
            import redis

            _REDIS[key] = redis.Redis.from_url(url)
        client = _REDIS[key]
        tags = client.zrangebyscore(options.get("unacked_index_key", "unacked_index"), "-inf", moment)
        payloads = client.hmget(options.get("unacked_key", "unacked"), tags) if tags else []
    except Exception as exc:  # the broker unreachable for a moment: the next sweep asks again
        log.debug("lease sweep: cannot read the broker's unacknowledged messages: %s", exc)
        return []
    found = []
    for payload in payloads:
        try:
            message = json.loads(payload)[0]
            if message["headers"]["task"] != TASK_NAME:
                continue
            body = message["body"]
            if message["properties"].get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args = json.loads(body)[0]
            if isinstance(args, list) and args and isinstance(args[0], str):
                found.append(args[0])
        except (ValueError, TypeError, KeyError, IndexError):
            continue  # not a message of ours (or not one we can read): the broker's redelivery covers it
    return found


STRANDED_AFTER = 60.0
"""Seconds a ``running`` run with no lease waits (queued, or received by a worker that died before
leasing it) before a sweep hands it over: long, since a run waiting in a long queue looks alike."""

DEFAULT_RECLAIM_EVERY = 0.25
"""Seconds between a worker's background sweeps for runs whose lease expired."""


def _sweep_forever(app: Any, every: float) -> None:
    """A worker's background sweep (``reclaim_expired`` every ``every`` seconds, jittered so that
    the processes of many workers do not sweep in step); failures are logged and retried."""
    import random

    rng = random.Random(os.getpid())
    try:  # built now, so the first task this process takes does not wait for it
        app_store(app)
    except Exception as exc:
        log.debug("lease sweep: the store is not ready yet: %s", exc)
    looked = 0.0  # when this sweep last looked for runs stranded STRANDED_AFTER: once a second is enough
    while True:
        time.sleep(every * (0.5 + rng.random()))
        now = time.monotonic()
        long_stranded = now - looked >= 1.0
        try:
            found = reclaim_expired(app, long_stranded=long_stranded)
            if long_stranded:
                looked = now
        except Exception as exc:  # the store unreachable for a moment: the next sweep retries
            log.debug("lease sweep failed: %s", exc)
            continue
        for run_id in found:
            log.warning("run %s: its worker's lease expired; handed over to the next worker", run_id)


def start_sweeping(app: Any) -> threading.Thread | None:
    """Start this process's background sweep for ``app`` (once per process; ``None`` when
    ``make_app(reclaim_every=None)`` turned it off or it already runs)."""
    every = getattr(app.conf, "pyfootprint_reclaim_every", None)
    key = (os.getpid(), id(app))
    if every is None or key in _SWEEPING:
        return None
    thread = threading.Thread(target=_sweep_forever, args=(app, every), name="pyfootprint-lease-sweep", daemon=True)
    _SWEEPING[key] = thread
    thread.start()
    return thread


_SWEEPING: dict[tuple[int, int], threading.Thread] = {}


if TYPE_CHECKING:
    from agent._run.agent import Agent

DEFAULT_BROKER = "redis://127.0.0.1:6379/0"
log = logging.getLogger("agent.celery")

_AGENTS: dict[tuple[int, str], Any] = {}
_LOADING = threading.RLock()


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
    retry_failed: Retry | None = None,
    store: str | None = None,
    reclaim_every: float | None = DEFAULT_RECLAIM_EVERY,
    stranded_after: float = STRANDED_AFTER,
    **config: Any,
) -> Any:
    """A Celery app whose task ``advance_run`` advances runs of the agent ``agent`` names.

    ``broker`` defaults to ``$AGENT_BROKER_URL`` or local Redis. ``visibility_timeout``
    (seconds) is how long Redis waits before redelivering the task of a worker that
    vanished (a killed machine); keep it above your longest segment (a segment still
    running at the timeout is delivered again: harmless, the store keeps one commit, but
    its tools run twice). Workers sweep for abandoned tasks every quarter of it (1–10 s). ``config`` is
    passed to ``app.conf.update``. The newest app made in a process is the default
    for ``agent.submit``. ``retry_failed`` (a ``flowchart.Retry``) is the policy under which
    workers retry a run that failed in a stage (``None``: a failed run stays failed).
    ``reclaim_every`` (seconds) is how often each worker process sweeps the store for runs whose
    lease expired and hands them over (``reclaim_expired``); ``None`` turns the sweep off (then
    only the broker's redelivery, or your own ``reclaim_expired`` calls, recover a dead worker's
    runs). ``stranded_after`` (seconds) is how long a ``running`` run with no lease waits before
    the sweep hands it over (``leases.stranded``).
    """
    if not (isinstance(stranded_after, (int, float)) and stranded_after > 0):
        raise ValueError(f"make_app(stranded_after=...): expected seconds above 0, got {stranded_after!r}")
    if reclaim_every is not None and not (isinstance(reclaim_every, (int, float)) and reclaim_every > 0):
        raise ValueError(f"make_app(reclaim_every=...): expected seconds above 0 or None, got {reclaim_every!r}")
    if retry_failed is not None and not isinstance(retry_failed, Retry):
        raise TypeError(f"make_app(retry_failed=...): expected a flowchart.Retry, got {type(retry_failed).__name__}")
    celery = _celery()
    from celery.utils.log import get_task_logger

    task_log = get_task_logger(__name__)
    app = celery.Celery(name, broker=broker or os.environ.get("AGENT_BROKER_URL", DEFAULT_BROKER))
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],
        task_ignore_result=True,
        task_default_queue=queue,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "visibility_timeout": visibility_timeout,
            # sweep for abandoned tasks often enough that recovery ~ visibility timeout
            "unacked_restore_interval": max(1, min(10, int(visibility_timeout / 4))),
            "unacked_restore_throttle": 1,
        },
        worker_hijack_root_logger=False,
    )
    app.conf.update(config)
    app.conf.pyfootprint_agent = agent
    app.conf.pyfootprint_retry_failed = retry_failed
    app.conf.pyfootprint_store = store
    app.conf.pyfootprint_reclaim_every = reclaim_every
    app.conf.pyfootprint_stranded_after = stranded_after
    _sweep_in_workers(app)

    @app.task(name=TASK_NAME, bind=True, max_retries=20)
    def advance_run(task: Any, run_id: str) -> str:
        """Advance stored run ``run_id`` to its next pause or end (a no-op if it is not due)."""
        task_log.info("advance %s start", run_id)
        try:
            target = app_agent(app)
            status = advance(
                target,
                run_id,
                store=_chart_store(app, target),
                retry_failed=retry_failed,
                requeue=lambda delay: app.send_task(
                    TASK_NAME, args=[run_id], queue=app.conf.task_default_queue, countdown=delay
                ),
            )
            task_log.info("advance %s end %s", run_id, status)
            return status
        except _Retry as exc:
            raise task.retry(countdown=min(2**task.request.retries, 30), exc=exc.error) from None

    queueing.remember_app(app)
    return app


def _sweep_in_workers(app: Any) -> None:
    """Start the background sweep in every process that runs tasks: each prefork pool process after
    its fork (``worker_process_init``), or the worker itself for a pool that does not fork."""
    from celery import signals

    def in_pool_process(**_: Any) -> None:
        start_sweeping(app)

    def in_worker(sender: Any = None, **_: Any) -> None:
        pool = getattr(sender, "pool", None)
        if pool is not None and "prefork" not in type(pool).__module__:
            start_sweeping(app)

    signals.worker_process_init.connect(in_pool_process, weak=False)
    signals.worker_ready.connect(in_worker, weak=False)


def app_agent(app: Any) -> Any:
    """The agent (or plain ``FlowChart``) ``app`` advances, built once per process (after a
    worker's fork)."""
    spec = app.conf.pyfootprint_agent
    return _once((os.getpid(), spec), lambda: load_agent_or_chart(spec))


def _once(key: tuple[int, str], load: Callable[[], Any]) -> Any:
    """What ``load()`` makes, made once per process under the loading lock (the task and the
    background sweep may both be first); a module that cannot be loaded is a ``RuntimeError``."""
    with _LOADING:
        if key not in _AGENTS:
            try:
                _AGENTS[key] = load()
            except AgentLoadError as exc:
                raise RuntimeError(f"agent.celery: {exc}") from None
        return _AGENTS[key]


def _chart_store(app: Any, target: Any) -> RunStore | None:
    """The store of a chart app (``make_app(..., store=MODULE:ATTR)``), opened once per process."""
    if not isinstance(target, FlowChart):
        return None
    spec = app.conf.pyfootprint_store
    if not spec:
        raise RuntimeError(
            f"agent.celery: {app.conf.pyfootprint_agent} is a chart: pass make_app(..., store=MODULE:ATTR)"
        )
    store: RunStore = _once((os.getpid(), "store:" + spec), lambda: load_store(spec))
    return store


def app_store(app: Any) -> RunStore:
    """The store of the agent (or chart) ``app`` advances."""
    target = app_agent(app)
    chart_store = _chart_store(app, target)
    if chart_store is not None:
        return chart_store
    store = target.store
    if store is None:
        raise RuntimeError(f"the agent {app.conf.pyfootprint_agent} has no run store (Agent.create(store=...))")
    return store


class _Retry(Exception):
    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def advance(
    agent: Agent | FlowChart,
    run_id: str,
    *,
    store: RunStore | None = None,
    retry_failed: Retry | None = None,
    requeue: Callable[[float], Any] | None = None,
) -> str:
    """What ``advance_run`` does: advance the run if the store says it is due; return its status.

    A lost commit race (another worker committed this segment) is not an error: the
    run is already where it should be. A run failing in a stage is recorded ``failed``;
    under ``retry_failed`` it is made ``running`` again and ``requeue(delay)`` schedules
    the advance that resumes it (``retry_failed_run``). Anything that left the run
    unrecorded (the store unreachable) is retried with backoff. ``agent`` may be a plain
    ``FlowChart``, whose runs live in ``store``.
    """
    if isinstance(agent, FlowChart):
        if store is None:
            raise TypeError("advance(chart, run_id, store=...): a chart's runs need their store")
        chart, chart_store = agent, store
        step: Callable[[], Any] = lambda: advance_chart(chart, chart_store, run_id)  # noqa: E731
    else:
        store = agent.store
        target = agent
        step = lambda: durable.advance_now(target, run_id)  # noqa: E731
    assert store is not None
    try:
        # the lease first: no moment in which this worker has the run and the store does not know
        with held(store, run_id, worker_id()):  # one live worker per run; a stalled one is fenced off
            record = store.get(run_id)
            if record.next_step in ("wait", "finished"):
                return record.status
            step()
    except LeaseBusyError:
        log.info("run %s: another worker holds a live lease on it; nothing to do", run_id)
        return store.get(run_id).status
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
        if status == "failed" and retry_failed is not None and requeue is not None:
            delay = retry_failed_run(store, run_id, exc, retry_failed)
            if delay is not None:
                log.warning("run %s failed (%s); retrying in %.1f s", run_id, exc, delay)
                # claimed until its retry is due (and a handover's wait after): should this worker
                # die holding the delayed message, the sweep hands the run over then
                with contextlib.suppress(StoreError):
                    hand_over(store, run_id, worker_id(), ttl=delay + HANDOVER_TTL)
                requeue(delay)
                return "running"
        log.warning("run %s %s: %s", run_id, status, exc)
        return status
    return store.get(run_id).status


def retry_failed_run(store: RunStore, run_id: str, error: BaseException, policy: Retry) -> float | None:
    """Under ``policy``, mark the failed run ``running`` again and return the delay before its
    advance; ``None`` when the policy is spent, does not retry ``error``, the run has no
    resume point, or another worker retried it first."""
    record = store.get(run_id)
    failures = 1 + sum(1 for commit in record.commit_log if commit.recovers is not None)
    if failures >= policy.attempts or not policy.retries(error) or record.checkpoint is None:
        return None
    try:
        store.retry(run_id)
    except StoreError:
        return None  # another worker retried it (or it moved on): its advance is queued
    return policy.delay(failures, run_id)


__all__ = [
    "DEFAULT_RECLAIM_EVERY",
    "STRANDED_AFTER",
    "TASK_NAME",
    "advance",
    "answer_and_enqueue",
    "app_agent",
    "app_store",
    "default_app",
    "delivered_before",
    "enqueue",
    "make_app",
    "reclaim_expired",
    "retry_and_enqueue",
    "retry_failed_run",
    "start_sweeping",
    "submit",
    "submit_chart",
    "worker_id",
]
