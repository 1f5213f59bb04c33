"""Queueing runs for Celery workers: record a run in the store, then send ``advance_run(run_id)``.

Law: the store, not the queue, is the truth — a run is recorded (created, answered or marked
for retry) before its advance is sent, so a lost or repeated message never loses or repeats a
step. This module needs no Celery import and no agent loading: ``Agent.submit`` queues through
it, and the workers' side (``agent.celery``) registers the app it makes (``remember_app``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent._run import conversations, durable
from flowchart import FlowChart
from flowchart.lowlevel import validated_input
from flowchart.store import RunStore
from flowchart.store.runs import new_run_id

if TYPE_CHECKING:
    from agent._run.agent import Agent

TASK_NAME = "pyfootprint.advance_run"
_DEFAULT_APP: list[Any] = []


def remember_app(app: Any) -> None:
    """``app`` is the newest app of this process (``make_app`` calls this): submits default to it."""
    _DEFAULT_APP[:] = [app]


def default_app() -> Any:
    """The newest app ``make_app`` made in this process (``agent.submit``'s default)."""
    if not _DEFAULT_APP:
        raise RuntimeError("no Celery app: make one with agent.celery.make_app(...) or pass app=")
    return _DEFAULT_APP[0]


QUEUED_PRIORITY = 3
"""On Redis, the priority step of an ordinary advance; a handed-over run's (a dead worker's, taken
over) is 0, served first (kombu's Redis transport serves lower steps first)."""


def enqueue(app: Any, run_id: str, *, first: bool = False) -> None:
    """Send ``advance_run(run_id)`` to the workers (``first``: a dead worker's run handed over, on
    Redis ahead of the queued runs, so its recovery does not wait behind the whole queue)."""
    options: dict[str, Any] = {}
    if str(app.conf.broker_url or "").startswith(("redis://", "rediss://", "redis+socket://")):
        options["priority"] = 0 if first else QUEUED_PRIORITY
    app.send_task(TASK_NAME, args=[run_id], queue=app.conf.task_default_queue, **options)


def submit_chart(
    chart: FlowChart, store: RunStore, input: Any = None, *, app: Any = None, run_id: str | None = None
) -> str:
    """Record a queued run of the plain ``chart`` on ``input`` in ``store`` and enqueue it; return its run id
    (the app's workers must name the same chart and store: ``make_app("m:chart", store="m:store")``)."""
    run_id = run_id or new_run_id()
    store.create(
        run_id, kind="chart", chart_fingerprint=chart.fingerprint, input=validated_input(input), chart_spec=chart.spec
    )
    enqueue(app or default_app(), run_id)
    return run_id


def submit(
    agent: Agent,
    message: str,
    identity: Any = None,
    *,
    app: Any = None,
    run_id: str | None = None,
    conversation: str | None = None,
    conversation_window: int | None = None,
    conversation_chars: int | None = None,
) -> str:
    """Record a queued run of ``agent`` on ``message`` and enqueue it; return its run id.

    With ``conversation=`` the run is that conversation's next turn (planned and claimed
    here, in the store, before it is enqueued: see ``conversations.queue``); a worker runs
    it like any other queued run.
    """
    run_input = durable.make_input(message, identity)
    turn = conversations.turn_options(agent, conversation, conversation_window, conversation_chars)
    if turn is None:
        run_id = durable.create(agent, run_input, run_id)
    else:
        run_id = conversations.queue(agent, run_input, *turn, run_id=run_id)
    enqueue(app or default_app(), run_id)
    return run_id


def retry_and_enqueue(app: Any, store: RunStore, run_id: str) -> None:
    """Mark the failed run ``running`` again (once, ``store.retry``) and enqueue the advance
    that re-runs the stage that failed."""
    durable.retry_failed(store, run_id)
    enqueue(app, run_id)


def answer_and_enqueue(app: Any, store: RunStore, run_id: str, decision: Any) -> None:
    """Record ``decision`` for the run's pause (once, checked as ``resume_run`` checks it)
    and enqueue the advance that applies it."""
    durable.answer_in(store, run_id, decision)
    enqueue(app, run_id)


__all__ = [
    "TASK_NAME",
    "answer_and_enqueue",
    "default_app",
    "enqueue",
    "remember_app",
    "retry_and_enqueue",
    "submit",
    "submit_chart",
]
