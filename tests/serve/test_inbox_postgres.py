"""The inbox on a real PostgreSQL run store: approve through the API, two approvers racing on one
pause (the database's answer-once decides), and a decision handed to a real Celery worker."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_server import Setup

from agent import Paused
from agent.serve import inbox_app
from examples import support_agent as demo

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "store"))

from servers import ServerUnavailable, fresh_pg_dsn, postgres_server


@pytest.fixture(scope="module")
def pg_server() -> Iterator[str]:
    """A PostgreSQL server for this module (skips when it cannot start here)."""
    pytest.importorskip("psycopg", reason="needs psycopg (extra [postgres])")
    try:
        with postgres_server() as dsn:
            yield dsn
    except ServerUnavailable as exc:
        pytest.skip(f"PostgreSQL cannot start here: {exc}")


def test_approving_and_racing_on_postgres(pg_server: str, setup: Setup, serve: Any) -> None:
    """Two paused refunds on PostgreSQL: alice approves one (done, refunded once, named); on the
    other alice and bob race — one 200, one 409 naming the winner."""
    from flowchart.store import PostgresStore

    dsn = fresh_pg_dsn(pg_server)
    store = PostgresStore(dsn)
    first, second = (demo.build_agent(store).run(demo.QUESTION) for _ in range(2))
    assert isinstance(first, Paused) and isinstance(second, Paused)
    assert first.check_in is not None and second.check_in is not None
    url = serve(inbox_app(store, demo.build_agent(PostgresStore(dsn)), users=setup.users, state=setup.folder / "s.db"))
    body = {"request_id": first.check_in.id, "approved": True}
    reply = httpx.post(f"{url}/api/runs/{first.run_id}/decision", headers=setup.headers("alice"), json=body)
    assert reply.status_code == 200 and reply.json()["status"] == "done"
    assert reply.json()["decision"]["by"] == "alice"
    replies: dict[str, httpx.Response] = {}
    barrier = threading.Barrier(2)

    def go(who: str) -> None:
        barrier.wait()
        replies[who] = httpx.post(
            f"{url}/api/runs/{second.run_id}/decision",
            headers=setup.headers(who),
            json={"request_id": second.check_in.id, "approved": True},  # type: ignore[union-attr]
            timeout=30,
        )

    threads = [threading.Thread(target=go, args=(who,)) for who in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.status_code for r in replies.values()) == [200, 409]
    winner = next(who for who, r in replies.items() if r.status_code == 200)
    loser = next(r for r in replies.values() if r.status_code == 409)
    assert f"already decided by {winner} at " in loser.json()["error"]
    history = PostgresStore(dsn).get(second.run_id).record.shown().final_state["history"]
    assert [m["content"] for m in history if m.get("tool_name") == "issue_refund"] == ["refunded 129.00 on A-1001"]


def test_a_decision_is_handed_to_celery_workers(pg_server: str, setup: Setup, serve: Any, tmp_path: Path) -> None:
    """With ``queue=`` (a Celery app) and no agent in the server, an approval is recorded, the run
    enqueued, and a real ``celery worker`` (Redis broker, PostgreSQL store) finishes it: one refund."""
    import os
    import time

    pytest.importorskip("celery", reason="needs the [celery] extra")
    from refund_agent import refund_agent
    from servers import redis_server, start_worker, stop_worker

    from agent.celery import make_app
    from flowchart.store import PostgresStore

    dsn = fresh_pg_dsn(pg_server)
    store = PostgresStore(dsn)
    paused = refund_agent(store).run("refund order A-1 150")
    assert isinstance(paused, Paused) and paused.check_in is not None
    store_dir = str(Path(__file__).resolve().parents[1] / "store")
    try:
        redis_context = redis_server()
        redis_url = redis_context.__enter__()
    except ServerUnavailable as exc:
        pytest.skip(f"Redis cannot start here: {exc}")
    log = tmp_path / "refunds.log"
    env = {**os.environ, "PYTHONPATH": store_dir, "AGENT_BROKER_URL": redis_url, "AGENT_RUNS_DSN": dsn}
    env["REFUND_LOG"] = str(log)
    worker = start_worker("inbox", env, tmp_path)
    try:
        app = make_app("refund_agent:refund_agent", broker=redis_url)
        url = serve(inbox_app(store, None, users=setup.users, state=tmp_path / "s.db", queue=app))
        body = {"request_id": paused.check_in.id, "approved": True}
        out = httpx.post(f"{url}/api/runs/{paused.run_id}/decision", headers=setup.headers("bob"), json=body).json()
        assert out["resumed"] == "queued" and out["decision"]["by"] == "bob"
        deadline = time.monotonic() + 120
        while PostgresStore(dsn).get(paused.run_id).status != "done":
            assert time.monotonic() < deadline, "the worker did not finish the run"
            time.sleep(0.2)
    finally:
        stop_worker(worker)
        redis_context.__exit__(None, None, None)
    assert log.read_text().split() == [f"{paused.run_id}:call-1"]
