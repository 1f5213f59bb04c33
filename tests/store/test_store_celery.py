"""Celery workers advancing stored runs: real ``redis-server``, real PostgreSQL, real
``celery worker`` processes. The store, not the queue, is the truth."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from refund_agent import REFUNDS, refund_agent
from servers import fresh_pg_dsn, start_worker, stop_worker

from flowchart.store import PostgresStore, RunStore

pytest.importorskip("celery", reason="the Celery tests need the [celery] extra")

from agent._run import durable
from agent.celery import advance, answer_and_enqueue, enqueue, make_app
from governance import check_in_approved

HERE = Path(__file__).parent


def test_advance_does_what_the_record_says(store: RunStore) -> None:
    """A duplicate delivery of a waiting or finished run is a no-op; a recorded answer whose
    enqueue was lost is applied by the next advance; the refund runs once."""
    REFUNDS.clear()
    agent = refund_agent(store)
    run_id = durable.create(agent, durable.make_input("refund order A-1 150"))
    assert advance(agent, run_id) == "paused"
    assert advance(agent, run_id) == "paused"  # delivered twice: the run waits for a person
    question = store.get(run_id).question
    durable.answer_in(store, run_id, check_in_approved(request=question, by="ops"))
    assert advance(agent, run_id) == "done"
    assert advance(agent, run_id) == "done"
    assert [f"{run_id}:call-1"] == REFUNDS
    assert store.get(run_id).output == "Done: refunded 150.00 on A-1"


def test_a_queued_turn_is_its_conversations_next_turn(store: RunStore) -> None:
    """``conversations.queue`` (what ``agent.submit(conversation=)`` enqueues) plans and claims
    the next turn in the store; the worker's ``advance`` runs it as that turn, so turn 2's
    model reads turn 1's tool result. A turn queued while the previous one is still queued
    (or running) is refused with nothing stored."""
    from agent import ConversationBusyError
    from agent._run import conversations

    REFUNDS.clear()
    agent = refund_agent(store)
    cid, policy = conversations.turn_options(agent, "c-queued", None, None) or ("", None)
    first = conversations.queue(agent, durable.make_input("refund order A-1 50"), cid, policy)
    with pytest.raises(ConversationBusyError, match="c-queued"):
        conversations.queue(agent, durable.make_input("and then?"), cid, policy)
    assert [r.run_id for r in store.list(conversation=cid)] == [first]
    assert advance(agent, first) == "done"
    second = conversations.queue(agent, durable.make_input("what did you do?"), cid, policy)
    assert advance(agent, second) == "done"
    record = store.get(second)
    assert (record.conversation_id, record.turn) == (cid, 2)
    assert record.output == "Done: refunded 50.00 on A-1"  # read from turn 1's tool result
    assert [f"{first}:call-1"] == REFUNDS


def test_submit_with_a_conversation_runs_its_turns_on_a_worker(pg_dsn: str, redis_url: str, tmp_path: Path) -> None:
    """``agent.submit(message, conversation=...)`` on a real worker: turn 1 refunds, turn 2
    (submitted after it finished) answers from turn 1's tool result; a turn submitted while
    the previous is still queued or running is refused before anything is enqueued."""
    from agent import ConversationBusyError

    dsn = fresh_pg_dsn(pg_dsn)
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "REFUND_LOG": str(tmp_path / "refunds.log"),
        "REFUND_DELAY": "1",
    }
    worker = start_worker("conv", env, tmp_path)
    try:
        app = make_app("refund_agent:refund_agent", broker=redis_url)
        store = PostgresStore(dsn)
        agent = refund_agent(store)
        first = agent.submit("refund order A-1 50", app=app, conversation="c-7")
        with pytest.raises(ConversationBusyError, match="c-7"):
            agent.submit("and then?", app=app, conversation="c-7")
        _wait(lambda: store.get(first).status == "done", 60, "turn 1 to finish")
        second = agent.submit("what did you do?", app=app, conversation="c-7")
        _wait(lambda: store.get(second).status == "done", 60, "turn 2 to finish")
    finally:
        stop_worker(worker)
    assert [(r.turn, r.status) for r in store.list(conversation="c-7")] == [(2, "done"), (1, "done")]
    assert store.get(second).output == "Done: refunded 50.00 on A-1"
    assert (tmp_path / "refunds.log").read_text().split() == [f"{first}:call-1"]


def _wait_while_progressing(progress: Callable[[], tuple[bool, object]], what: str, *, stall: float = 180.0) -> None:
    """Poll ``progress()`` — ``(finished, how far)`` — until finished. Load-proof and bounded:
    the clock restarts whenever ``how far`` changes, and gives up after ``stall`` seconds with
    no progress at all (a stuck worker), or after ten stalls' worth in total."""
    start = last_move = time.monotonic()
    seen: object = None
    while True:
        finished, how_far = progress()
        if finished:
            return
        now = time.monotonic()
        if how_far != seen:
            seen, last_move = how_far, now
        if now - last_move > stall or now - start > 10 * stall:
            raise AssertionError(f"no progress for {now - last_move:.0f} s waiting for {what}; got to {how_far}")
        time.sleep(0.2)


def _wait(condition: Callable[[], object], seconds: float, what: str) -> None:
    """Poll ``condition`` until it holds: bounded, and generous under load (three times
    ``seconds``, at least 180 s) since nothing here measures how fast the workers are."""
    _wait_while_progressing(lambda: (bool(condition()), None), what, stall=max(3 * seconds, 180.0))


def test_two_workers_finish_forty_runs_exactly_once(pg_dsn: str, redis_url: str, tmp_path: Path) -> None:
    """2 workers advance 40 queued runs, each pausing once and answered while others still start;
    ten runs are also delivered twice. Every run finishes once, no step commits twice, and every
    refund is keyed by its run. A run delivered once refunds once; a run delivered twice may run
    its refund twice, with the same idempotency key, when its stale delivery races the resume on
    the other worker (stage bodies are at-least-once: the loser's commit is refused and its work
    discarded, as the module law of ``agent.celery`` says)."""
    import psycopg

    dsn = fresh_pg_dsn(pg_dsn)
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "REFUND_LOG": str(tmp_path / "refunds.log"),
    }
    workers = [start_worker(f"w{n}", env, tmp_path) for n in range(2)]
    try:
        app = make_app("refund_agent:refund_agent", broker=redis_url)
        store = PostgresStore(dsn)
        agent = refund_agent(store)
        ids = [agent.submit("refund order A-1 150", app=app) for _ in range(40)]
        for run_id in ids[:10]:
            enqueue(app, run_id)  # a duplicate delivery
        answered: set[str] = set()

        def answer_the_paused() -> tuple[bool, object]:
            for record in store.list(status="paused"):
                if record.run_id not in answered:
                    decision = check_in_approved(request=record.question, by="ops")
                    answer_and_enqueue(app, store, record.run_id, decision)
                    answered.add(record.run_id)
            done = len(store.list(status="done"))
            return done == len(ids), f"{len(answered)} answered, {done} of {len(ids)} done"

        _wait_while_progressing(answer_the_paused, "40 runs to finish")
    finally:
        for worker in workers:
            stop_worker(worker)
    with psycopg.connect(dsn) as raw:
        segments = raw.execute("SELECT run_id, COUNT(*) FROM segments GROUP BY run_id").fetchall()
        commits = raw.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM commits").fetchone()
    assert sorted(n for _, n in segments) == [2] * 40  # one pause, one end: each segment once
    assert commits is not None and commits[0] == commits[1]
    for record in store.list():
        assert record.status == "done" and record.output == "Done: refunded 150.00 on A-1"
        assert [c.idx for c in record.commit_log] == list(range(len(record.commit_log)))
    refunds = (tmp_path / "refunds.log").read_text().splitlines()
    assert set(refunds) == {f"{run_id}:call-1" for run_id in ids}
    assert all(refunds.count(f"{run_id}:call-1") == 1 for run_id in ids[10:])
    assert all(refunds.count(f"{run_id}:call-1") in (1, 2) for run_id in ids[:10])


def test_a_worker_killed_mid_stage_leaves_runs_that_finish_once(pg_dsn: str, redis_url: str, tmp_path: Path) -> None:
    """A worker is killed (SIGKILL, whole process group) while a slow tool runs; another worker
    picks the task up after the visibility timeout and advances the run from the store. Every
    run finishes exactly once (one segment, unique commits); only the killed stage's tool body
    may have run twice (at-least-once, same idempotency key)."""
    import signal

    import psycopg

    dsn = fresh_pg_dsn(pg_dsn)
    log = tmp_path / "refunds.log"
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "REFUND_LOG": str(log),
        "REFUND_DELAY": "2",
        "VISIBILITY_TIMEOUT": "2",
    }
    first = start_worker("k0", env, tmp_path)
    second = None
    try:
        app = make_app("refund_agent:refund_agent", broker=redis_url, visibility_timeout=2)
        store = PostgresStore(dsn)
        agent = refund_agent(store)
        ids = [agent.submit("refund order A-1 20", app=app) for _ in range(3)]
        _wait(lambda: log.exists() and log.read_text().strip(), 60, "a refund to start")
        stop_worker(first, signal.SIGKILL)  # mid-stage: the refund is sleeping
        killed = log.read_text().split()[0]
        second = start_worker("k1", env, tmp_path)
        _wait(lambda: len(store.list(status="done")) == len(ids), 120, "3 runs to finish")
    finally:
        stop_worker(first, signal.SIGKILL)
        if second is not None:
            stop_worker(second)
    with psycopg.connect(dsn) as raw:
        segments = raw.execute("SELECT run_id, COUNT(*) FROM segments GROUP BY run_id").fetchall()
        commits = raw.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM commits").fetchone()
    assert sorted(n for _, n in segments) == [1, 1, 1]
    assert commits is not None and commits[0] == commits[1]
    for record in store.list():
        assert record.status == "done" and record.output == "Done: refunded 20.00 on A-1"
    refunds = log.read_text().split()
    assert set(refunds) == {f"{run_id}:call-1" for run_id in ids}
    assert refunds.count(killed) in (1, 2) and all(refunds.count(k) == 1 for k in set(refunds) - {killed})


def test_workers_advance_plain_charts_retry_a_failure_and_survive_a_kill(
    pg_dsn: str, redis_url: str, tmp_path: Path
) -> None:
    """Chart runs (no agent) on real workers: run 0 fails once in Flaky and the workers retry it
    under ``retry_failed``; the worker running a slow stage is killed and the other finishes the
    run from the store. Every run ends ``done`` once, Start commits once per run, and the
    retried run's log names the execution it recovered."""
    import signal

    import chart_flows
    import psycopg

    from agent.celery import submit_chart

    dsn = fresh_pg_dsn(pg_dsn)
    log, flaky = tmp_path / "chart.log", tmp_path / "flaky"
    flaky.write_text("1")
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "CHART_LOG": str(log),
        "CHART_FLAKY": str(flaky),
        "CHART_DELAY": "2",
        "VISIBILITY_TIMEOUT": "2",
    }
    first = start_worker("c0", env, tmp_path, app="chart_worker_app")
    second = None
    try:
        app = make_app("chart_flows:chart", broker=redis_url, store="unused:store", visibility_timeout=2)
        store = PostgresStore(dsn)
        ids = [submit_chart(chart_flows.chart, store, {"n": n}, app=app) for n in range(3)]
        _wait(lambda: log.exists() and log.read_text().strip(), 60, "a slow stage to start")
        stop_worker(first, signal.SIGKILL)
        second = start_worker("c1", env, tmp_path, app="chart_worker_app")
        _wait(lambda: len(store.list(status="done")) == len(ids), 120, "3 chart runs to finish")
    finally:
        stop_worker(first, signal.SIGKILL)
        if second is not None:
            stop_worker(second)
    with psycopg.connect(dsn) as raw:
        commits = raw.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM commits").fetchone()
    assert commits is not None and commits[0] == commits[1]
    for n, run_id in enumerate(ids):
        record = store.get(run_id)
        assert record.status == "done"
        stages = [c.stage_id for c in record.commit_log]
        assert stages.count("start") == 1
        assert [c.recovers for c in record.commit_log if c.recovers] == (["flaky#2"] if n == 0 else [])
