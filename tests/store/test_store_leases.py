"""Leases: one live worker per run, a dead worker's run taken over in seconds, a stalled one fenced.

Real worker processes (``lease_worker.py``) on SQLite (and PostgreSQL for the in-process laws):
SIGKILL stands for a worker dying, SIGSTOP/SIGCONT for one stalling past its lease.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lease_worker import refund_agent, slow_chart, store_of
from servers import fresh_pg_dsn
from traced_store import TracedStore

from flowchart.store.leases import DEFAULT_TTL, LeaseBusyError, LeaseLostError, acquire, expired, held, renew

HERE = Path(__file__).parent


def spawn(*argv: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE), str(HERE.parent.parent)])}
    return subprocess.Popen(
        [sys.executable, str(HERE / "lease_worker.py"), *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for(path: Path, proc: subprocess.Popen[str], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(f"the worker ended early: {proc.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError("the worker never got going")
        time.sleep(0.02)


@pytest.fixture
def where(tmp_path: Path) -> Iterator[str]:
    yield str(tmp_path / "runs.db")


def test_a_live_lease_is_never_shared_and_a_dead_holder_is_taken_over_within_its_ttl(
    where: str, tmp_path: Path
) -> None:
    """While a worker holds the lease (its heartbeat renewing it well past the ttl) nobody else
    gets it; once the worker is SIGKILLed, another takes it over within the ttl (≤ 2 s), with the
    next fencing token."""
    ready = tmp_path / "ready"
    holder = spawn("hold", where, "run-1", str(ready))
    try:
        wait_for(ready, holder)
        store = store_of(where)
        time.sleep(DEFAULT_TTL * 1.5)  # past one ttl: only the heartbeat keeps it
        with pytest.raises(LeaseBusyError, match=r"run 'run-1' is leased to 'holder-\d+'"):
            acquire(store, "run-1", "me")
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        killed = time.monotonic()
        while True:
            try:
                lease = acquire(store, "run-1", "me")
                break
            except LeaseBusyError:
                time.sleep(0.05)
        recovery = time.monotonic() - killed
        assert lease.token == 2
        assert recovery <= 2.0, recovery
    finally:
        if holder.poll() is None:
            holder.kill()


def test_a_stalled_worker_whose_lease_was_taken_over_cannot_commit(where: str, tmp_path: Path) -> None:
    """A worker stalls (SIGSTOP) in the middle of a segment past its lease; another takes the lease;
    the stalled one, woken, finishes its stage, and its commit is refused by the fence: the run's
    record is untouched."""
    ready = tmp_path / "ready"
    store = store_of(where)
    chart = slow_chart(str(ready))
    store.create("run-2", kind="chart", chart_fingerprint=chart.fingerprint, input={}, chart_spec=chart.spec)
    worker = spawn("advance", where, "run-2", str(ready))
    try:
        wait_for(ready, worker)
        worker.send_signal(signal.SIGSTOP)
        time.sleep(DEFAULT_TTL + 0.5)
        taken = acquire(store, "run-2", "rescuer", ttl=60)
        assert taken.token == 2
        assert expired(store) == []  # live again: the rescuer holds it
        worker.send_signal(signal.SIGCONT)
        out, err = worker.communicate(timeout=60)
        assert out.startswith("lease lost: run 'run-2': this worker's lease (token 1) was taken over by 'rescuer'"), err
        record = store.get("run-2")
        assert record.status == "running" and record.next_seq == 0
    finally:
        if worker.poll() is None:
            worker.kill()


def test_a_dead_agent_worker_is_found_and_its_run_finished_by_another(where: str, tmp_path: Path) -> None:
    """A worker advancing an agent run through ``agent.celery.advance`` is SIGKILLed inside the tool;
    within the lease's ttl the run is listed by ``expired`` (what ``reclaim_expired`` enqueues), and
    another worker's ``advance`` finishes it."""
    from agent._run import durable
    from agent.celery import advance

    ready = tmp_path / "ready"
    agent = refund_agent(where, str(ready))
    run_id = durable.create(agent, durable.make_input("refund it"))
    worker = spawn("agent", where, run_id, str(ready))
    try:
        wait_for(ready, worker)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        killed = time.monotonic()
        while expired(agent.store) != [run_id]:
            assert time.monotonic() - killed < 5, "the dead worker's run was never listed"
            time.sleep(0.05)
        found = time.monotonic() - killed
        assert found <= 2.0, found
        os.environ["REFUND_SLEEP"] = "0"
        try:
            assert advance(refund_agent(where, str(ready)), run_id) == "done"
        finally:
            del os.environ["REFUND_SLEEP"]
    finally:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_the_lease_laws_in_one_process(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """Same holder renews; another holder is refused while live; a taken-over lease does not renew
    and fences its commit; ``held`` releases at the end. On SQLite and a real PostgreSQL."""
    where = str(tmp_path / "runs.db") if backend == "sqlite" else fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    store = store_of(where)
    chart = slow_chart(str(tmp_path / "ready"))
    store.create("run-3", kind="chart", chart_fingerprint=chart.fingerprint, input={}, chart_spec=chart.spec)
    first = acquire(store, "run-3", "a", ttl=0.2)
    assert acquire(store, "run-3", "a", ttl=0.2).token == first.token  # the same holder: the same lease
    with pytest.raises(LeaseBusyError):
        acquire(store, "run-3", "b")
    time.sleep(0.3)
    second = acquire(store, "run-3", "b", ttl=30)
    assert second.token == first.token + 1
    assert renew(store, first) is False and renew(store, second) is True
    with pytest.raises(ValueError, match="ttl must be above 0"):
        acquire(store, "run-3", "c", ttl=0)
    from flowchart.store.leases import release

    release(store, second)
    from flowchart.store.runs import advance_chart

    os.environ["SLOW_SECONDS"] = "0"
    try:
        with pytest.raises(LeaseLostError, match="was taken over by 'd'"), held(store, "run-3", "c", ttl=0.3):
            time.sleep(0.1)
            stalled = time.monotonic() + 0.6  # the heartbeat thread keeps it; a take-over needs it gone
            while time.monotonic() < stalled:
                try:
                    acquire(store, "run-3", "d", ttl=30)
                    break
                except LeaseBusyError:
                    with store._tx() as cur:  # type: ignore[attr-defined]  # the holder stalls: its lease runs out
                        store._run(cur, "UPDATE leases SET expires_at = 0 WHERE run_id = ?", ("run-3",))  # type: ignore[attr-defined]
            advance_chart(chart, store, "run-3")
    finally:
        del os.environ["SLOW_SECONDS"]
    assert store.get("run-3").next_seq == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_an_expired_run_is_handed_over_once_and_taken_by_the_next_worker(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """``hand_over`` claims a dead holder's run for the next worker: of two sweepers one wins (the
    other gets ``None``), the token moves on so the dead holder's commits stay fenced, any worker
    then takes the handover over at once (next token), and a handover nobody took is listed by
    ``expired`` again after its ttl, and handed over with twice the wait. A live lease is never
    handed over. A ``running`` run with no lease at all is ``stranded`` once it has not moved for
    the given seconds (a worker died between receiving it and leasing it)."""
    from flowchart.store.leases import HANDOVER, hand_over, stranded

    where = str(tmp_path / "runs.db") if backend == "sqlite" else fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    store = store_of(where)
    chart = slow_chart(str(tmp_path / "ready"))
    store.create("run-4", kind="chart", chart_fingerprint=chart.fingerprint, input={}, chart_spec=chart.spec)
    assert stranded(store, 60) == [] and stranded(store, 0) == ["run-4"]
    dead = acquire(store, "run-4", "dead", ttl=0.1)
    assert stranded(store, 0) == []  # leased: not stranded
    assert hand_over(store, "run-4", "sweeper-1") is None  # still live: its worker may be alive
    time.sleep(0.15)
    assert expired(store) == ["run-4"]
    claimed = hand_over(store, "run-4", "sweeper-1", ttl=0.2)
    assert claimed is not None and (claimed.holder, claimed.token) == (HANDOVER + "0:sweeper-1", dead.token + 1)
    assert hand_over(store, "run-4", "sweeper-2") is None  # the race's loser
    assert expired(store) == [] and renew(store, dead) is False
    time.sleep(0.25)
    assert expired(store) == ["run-4"]  # nobody took it: listed again
    again = hand_over(store, "run-4", "sweeper-2", ttl=30)
    assert again is not None and (again.holder, again.token, again.ttl) == (
        HANDOVER + "1:sweeper-2",
        claimed.token + 1,
        60,
    )
    taken = acquire(store, "run-4", "next-worker")  # a live handover is taken over at once
    assert taken.token == again.token + 1
    with pytest.raises(LeaseBusyError):
        acquire(store, "run-4", "another")
    with pytest.raises(ValueError, match="a handover's ttl must be above 0 seconds, got -1"):
        hand_over(store, "run-4", "sweeper-3", ttl=-1)


def test_make_app_refuses_a_sweep_period_that_is_not_seconds_above_zero() -> None:
    """``make_app(reclaim_every=...)`` takes seconds above 0 or ``None`` (no sweep), and says so."""
    pytest.importorskip("celery")
    from agent.celery import make_app

    with pytest.raises(ValueError, match=r"make_app\(reclaim_every=\.\.\.\): expected seconds above 0 or None, got 0"):
        make_app("refund_agent:refund_agent", broker="memory://", reclaim_every=0)
    assert (
        make_app("refund_agent:refund_agent", broker="memory://", reclaim_every=None).conf.pyfootprint_reclaim_every
        is None
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_one_heartbeat_thread_renews_every_lease_the_process_holds(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Three leases held at once (ttl 0.3 s) stay live for three ttls: one thread of the process,
    ``lease-heartbeat``, renews them all (not a thread started and joined per lease); once their
    blocks end they are given up, and another holder takes each at once."""
    import threading

    where = str(tmp_path / "runs.db") if backend == "sqlite" else fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
    store = store_of(where)
    runs = ["beat-1", "beat-2", "beat-3"]
    with held(store, runs[0], "me", ttl=0.3), held(store, runs[1], "me", ttl=0.3), held(store, runs[2], "me", ttl=0.3):
        time.sleep(0.9)
        for run_id in runs:
            with pytest.raises(LeaseBusyError, match=f"run '{run_id}' is leased to 'me'"):
                acquire(store, run_id, "other")
        beating = [t.name for t in threading.enumerate() if t.name.startswith("lease")]
        assert beating == ["lease-heartbeat"]
    assert [acquire(store, run_id, "other").holder for run_id in runs] == ["other"] * 3


def test_a_lease_is_taken_renewed_and_given_up_in_one_statement_each(tmp_path: Path) -> None:
    """``acquire``, ``renew`` and ``release`` each send the store one statement (its own
    transaction): a segment's lease costs two round trips, not seven (issue 33: leases ≤ 5 % of
    Celery throughput). The statements SQLite ran are traced."""
    from flowchart.store.leases import release

    store = TracedStore(tmp_path / "runs.db")
    seen = store.statements
    seen.clear()
    lease = acquire(store, "one", "me")
    assert [s.split()[0] for s in seen] == ["INSERT"]
    seen.clear()
    assert renew(store, lease) is True
    assert [s.split()[0] for s in seen] == ["UPDATE"]
    seen.clear()
    release(store, lease)
    assert [s.split()[0] for s in seen] == ["DELETE"]


def test_a_sweep_may_leave_the_long_stranded_runs_to_a_later_one(tmp_path: Path) -> None:
    """``reclaim_expired(..., long_stranded=False)`` (the background sweep between its once-a-second
    looks) hands over the runs whose lease expired but not a run stranded for ``stranded_after``;
    the next full sweep hands that one over."""
    pytest.importorskip("celery")
    from agent.celery import make_app, reclaim_expired

    store = store_of(str(tmp_path / "runs.db"))
    chart = slow_chart(str(tmp_path / "ready"))
    for run_id in ("dead-holder", "stranded"):
        store.create(run_id, kind="chart", chart_fingerprint=chart.fingerprint, input={}, chart_spec=chart.spec)
    acquire(store, "dead-holder", "dead", ttl=0.05)
    app = make_app("refund_agent:refund_agent", broker="memory://", reclaim_every=None, stranded_after=0.01)
    time.sleep(0.1)
    assert reclaim_expired(app, store, long_stranded=False) == ["dead-holder"]
    assert reclaim_expired(app, store) == ["stranded"]


def test_a_forked_child_starts_its_own_heartbeat(tmp_path: Path) -> None:
    """A process forked while its parent holds a lease — at the very moment the parent's heartbeat
    holds its lock — holds its own lease at once: the child's heartbeat starts afresh (a fresh
    lock, none of the parent's leases) and renews the child's lease past its ttl."""
    import multiprocessing

    from flowchart.store import leases

    where = str(tmp_path / "runs.db")
    store = store_of(where)
    with held(store, "parent-run", "parent", ttl=0.3):
        context = multiprocessing.get_context("fork")
        child = context.Process(target=_hold_in_child, args=(where,))
        with leases._HEARTBEAT._wake:  # the fork lands while the heartbeat's lock is held
            child.start()
        child.join(20)
        if child.exitcode is None:
            child.kill()
    assert child.exitcode == 0, "the child never held its lease (its heartbeat's lock was the parent's, held)"


def _hold_in_child(where: str) -> None:
    import threading

    store = store_of(where)
    with held(store, "child-run", "child", ttl=0.3):
        time.sleep(0.9)
        try:
            acquire(store, "child-run", "other")
        except LeaseBusyError:
            pass
        else:
            os._exit(2)  # the child's lease lapsed: nobody renewed it
        if [t.name for t in threading.enumerate() if t.name.startswith("lease")] != ["lease-heartbeat"]:
            os._exit(3)
    os._exit(0)
