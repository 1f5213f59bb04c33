"""A dead Celery worker's runs are picked up by the live workers' background lease sweep, with the
default settings: no beat, no extra process, no lowered visibility timeout (its default, 3600 s,
is what recovery took before). Real ``redis-server``, real PostgreSQL, real ``celery worker``
processes; the worker advancing a run is SIGKILLed (its whole process group) mid-tool."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from servers import fresh_pg_dsn, start_worker, stop_worker

from flowchart.store import PostgresStore

pytest.importorskip("celery", reason="the Celery tests need the [celery] extra")

from refund_agent import refund_agent

from agent.celery import make_app

HERE = Path(__file__).parent

#: far below the broker's default visibility timeout (3600 s), far above the ~2 s the sweep takes:
#: a deadline for the test on a loaded machine, not a measure of speed (bench/effects_sigkill.py is)
DEADLINE = 300.0


def _running_on(logdir: Path, names: list[str], run_id: str) -> str | None:
    """The worker whose log shows ``run_id``'s advance started (and not ended)."""
    for name in names:
        log = logdir / f"{name}.log"
        text = log.read_text(errors="replace") if log.exists() else ""
        if f"advance {run_id} start" in text and f"advance {run_id} end" not in text:
            return name
    return None


def test_a_sigkilled_workers_run_finishes_once_on_another_worker_with_the_default_settings(
    pg_dsn: str, redis_url: str, tmp_path: Path
) -> None:
    """Two workers with the default settings advance 4 slow runs; the worker in the middle of a
    refund is SIGKILLed. The survivor's background sweep finds the dead worker's expired lease,
    claims it and enqueues the run: all 4 runs end ``done`` within the test's deadline (before the
    sweep, the killed run waited for the broker's 3600 s visibility timeout), each with one
    segment and unique commits; the killed run's log names no commit twice."""
    import psycopg

    dsn = fresh_pg_dsn(pg_dsn)
    log = tmp_path / "refunds.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "REFUND_LOG": str(log),
        "REFUND_DELAY": "4",
    }
    env.pop("VISIBILITY_TIMEOUT", None)
    names = ["r0", "r1"]
    workers = dict(zip(names, (start_worker(name, env, tmp_path) for name in names), strict=True))
    try:
        app = make_app("refund_agent:refund_agent", broker=redis_url)
        store = PostgresStore(dsn)
        agent = refund_agent(store)
        ids = [agent.submit("refund order A-1 20", app=app) for _ in range(4)]
        victim: tuple[str, str] | None = None
        deadline = time.monotonic() + DEADLINE
        while victim is None:
            assert time.monotonic() < deadline, "no refund ever started"
            started = log.read_text().split() if log.exists() else []
            for key in started:
                run_id = key.split(":")[0]
                name = _running_on(tmp_path, names, run_id)
                if name is not None:
                    victim = (name, run_id)
                    break
            time.sleep(0.05)
        name, killed = victim
        stop_worker(workers[name], signal.SIGKILL)  # mid-refund: its lease stops being renewed
        while len(store.list(status="done")) < len(ids):
            assert time.monotonic() < deadline, (
                f"not all runs finished: {[(r.run_id, r.status) for r in store.list()]}; the killed run was {killed}"
            )
            time.sleep(0.2)
    finally:
        for proc in workers.values():
            stop_worker(proc, signal.SIGKILL)
    with psycopg.connect(dsn) as raw:
        segments = raw.execute("SELECT run_id, COUNT(*) FROM segments GROUP BY run_id").fetchall()
        commits = raw.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM commits").fetchone()
    assert sorted(n for _, n in segments) == [1, 1, 1, 1]
    assert commits is not None and commits[0] == commits[1]
    for record in store.list():
        assert record.status == "done" and record.output == "Done: refunded 20.00 on A-1"
    survivor = next(n for n in names if n != name)
    assert f"advance {killed} start" in (tmp_path / f"{survivor}.log").read_text()


def test_a_run_whose_message_died_with_its_worker_is_found_without_its_message(
    pg_dsn: str, redis_url: str, tmp_path: Path
) -> None:
    """A run recorded ``running`` whose message no worker will ever deliver — what a worker killed
    between receiving the message and leasing the run leaves until the broker's 3600 s visibility
    timeout — is ``stranded``: a live worker's sweep hands it over after ``stranded_after`` seconds
    without a move (5 here; 60 by default), and it finishes once."""
    from agent._run import durable

    dsn = fresh_pg_dsn(pg_dsn)
    log = tmp_path / "refunds.log"
    env = {**os.environ, "PYTHONPATH": str(HERE), "AGENT_BROKER_URL": redis_url, "AGENT_RUNS_DSN": dsn}
    env.update({"REFUND_LOG": str(log), "STRANDED_AFTER": "5"})
    env.pop("VISIBILITY_TIMEOUT", None)
    worker = start_worker("s0", env, tmp_path)
    try:
        store = PostgresStore(dsn)
        agent = refund_agent(store)
        run_id = durable.create(agent, durable.make_input("refund order A-1 20"))  # no message sent
        deadline = time.monotonic() + DEADLINE
        while store.get(run_id).status != "done":
            assert time.monotonic() < deadline, f"the stranded run was never picked up: {store.get(run_id).status}"
            time.sleep(0.2)
    finally:
        stop_worker(worker, signal.SIGKILL)
    assert log.read_text().split() == [f"{run_id}:call-1"]
    assert "handed over to the next worker" in (tmp_path / "s0.log").read_text()


def test_a_worker_killed_between_receiving_a_run_and_leasing_it_is_found_by_its_unacked_message(
    pg_dsn: str, redis_url: str, tmp_path: Path
) -> None:
    """A worker receives a run's message and is SIGKILLed before it takes the lease (the test's
    worker waits there). The run has no lease to expire, but its message stays in the broker's
    unacknowledged set: a live worker's sweep sees it delivered and not leased, hands it over,
    and the run finishes once — well before ``stranded_after`` (60 s) or the 3600 s visibility
    timeout would have found it."""
    dsn = fresh_pg_dsn(pg_dsn)
    log, mark = tmp_path / "refunds.log", tmp_path / "received"
    env = {**os.environ, "PYTHONPATH": str(HERE), "AGENT_BROKER_URL": redis_url, "AGENT_RUNS_DSN": dsn}
    env.update({"REFUND_LOG": str(log)})
    env.pop("VISIBILITY_TIMEOUT", None)
    env.pop("STRANDED_AFTER", None)
    victim = start_worker("g0", {**env, "SLEEP_BEFORE_LEASE": "600", "RECEIVED_MARK": str(mark)}, tmp_path)
    survivor = None
    try:
        app = make_app("refund_agent:refund_agent", broker=redis_url)
        store = PostgresStore(dsn)
        run_id = refund_agent(store).submit("refund order A-1 20", app=app)
        deadline = time.monotonic() + DEADLINE
        while not mark.exists():
            assert time.monotonic() < deadline, "the victim never received the run"
            time.sleep(0.05)
        survivor = start_worker("g1", env, tmp_path)
        stop_worker(victim, signal.SIGKILL)  # received, not leased
        killed = time.monotonic()
        while store.get(run_id).status != "done":
            assert time.monotonic() - killed < 45, f"the run was not found before stranded_after: {store.get(run_id)}"
            time.sleep(0.2)
    finally:
        stop_worker(victim, signal.SIGKILL)
        if survivor is not None:
            stop_worker(survivor, signal.SIGKILL)
    assert log.read_text().split() == [f"{run_id}:call-1"]
