"""Scale-out benchmark: N Celery workers advance M stored agent runs (PostgreSQL + Redis).

    .venv/bin/python bench/scale_celery.py [--workers 4] [--runs 200] [--visibility 10] [--leases on|off]

Starts a throwaway PostgreSQL and redis-server (tests/store/servers.py), then two phases
on fresh schemas, each with real ``celery worker`` processes (concurrency 1 each):

1. steady: submit M runs; each pauses once for a check-in and is approved as soon as it
   is seen paused (while others are still starting); measure runs/second to all done.
2. kill: the same, and when a third of the runs are done one worker is killed with
   SIGKILL (its whole process group: a machine dying). Its runs' leases expire
   (``flowchart.store.leases``) and the live workers' background sweep hands them over (with
   ``--reclaim`` s the driver sweeps too; 0 by default); the broker's redelivery after its
   visibility timeout is the fallback. Measure the time from the kill to all done, and how
   long the runs the dead worker held took to finish.

``--leases off`` runs the workers without leases and without their sweep (``worker_app.py``,
``BENCH_LEASES=off``): what leases and heartbeats cost, the steady phase's runs/s on vs off.

Both phases check the laws: every run done exactly once (two segments: pause, end), no
(run_id, seq) twice, and count refunds executed more than once (allowed: tools are
at-least-once, deduplicated by the idempotency key; only possible in the kill phase).
Prints a summary and one JSON line per phase.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "store"
sys.path.insert(0, str(HERE))

import psycopg  # noqa: E402
from refund_agent import refund_agent  # noqa: E402
from servers import postgres_server, redis_server, start_worker, stop_worker  # noqa: E402

from agent.celery import answer_and_enqueue, make_app, reclaim_expired  # noqa: E402
from flowchart.store import PostgresStore  # noqa: E402
from governance import check_in_approved  # noqa: E402


def fresh_schema(dsn: str, name: str) -> str:
    """A DSN on a new empty schema ``name``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{dsn}?options={urllib.parse.quote(f'-csearch_path={name}')}"


def in_flight(log: Path) -> set[str]:
    """Run ids the worker logged starting to advance and not finishing."""
    started: Counter[str] = Counter()
    for line in log.read_text(errors="replace").splitlines():
        if " advance " in line:
            words = line.split(" advance ", 1)[1].split()
            started[words[0]] += 1 if words[1] == "start" else -1
    return {run_id for run_id, n in started.items() if n > 0}


def phase(name: str, base_dsn: str, redis_url: str, args: argparse.Namespace, kill: bool) -> dict[str, Any]:
    """Run one phase; return its measurements."""
    dsn = fresh_schema(base_dsn, name)
    tmp = Path(tempfile.mkdtemp(prefix=f"pyfp-{name}-"))
    env = {
        **os.environ,
        "PYTHONPATH": str(HERE),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "REFUND_LOG": str(tmp / "refunds.log"),
        "VISIBILITY_TIMEOUT": str(args.visibility),
        "REFUND_DELAY": str(args.tool_delay),
        "BENCH_LEASES": args.leases,
    }
    workers = [start_worker(f"{name}{n}", env, tmp) for n in range(args.workers)]
    app = make_app("refund_agent:refund_agent", broker=redis_url)
    store = PostgresStore(dsn)
    agent = refund_agent(store)
    answered: set[str] = set()
    killed_at: float | None = None
    victim_runs: set[str] = set()
    victim_done_at: float | None = None
    counts = psycopg.connect(dsn, autocommit=True)
    began = time.monotonic()
    next_reclaim = began
    ids = [agent.submit("refund order A-1 150", app=app) for _ in range(args.runs)]
    try:
        while True:
            for record in store.list(status="paused"):
                if record.run_id not in answered:
                    answer_and_enqueue(
                        app, store, record.run_id, check_in_approved(request=record.question, by="bench")
                    )
                    answered.add(record.run_id)
            done, failed = counts.execute(
                "SELECT COUNT(*) FILTER (WHERE status = 'done'), COUNT(*) FILTER (WHERE status = 'failed') FROM runs"
            ).fetchone()
            if failed:
                raise SystemExit(f"[{name}] {failed} runs failed: see the worker logs in {tmp}")
            if kill and killed_at is None and done >= args.runs // 3:
                os.killpg(workers[0].pid, signal.SIGKILL)
                killed_at = time.monotonic()
                victim_runs = in_flight(tmp / f"{name}0.log")
                print(
                    f"[{name}] SIGKILL worker {name}0 with {done} runs done, {len(victim_runs)} in flight", flush=True
                )
            if victim_runs and victim_done_at is None:
                rows = counts.execute(
                    "SELECT COUNT(*) FROM runs WHERE status = 'done' AND run_id = ANY(%s)", (list(victim_runs),)
                )
                if rows.fetchone()[0] == len(victim_runs):
                    victim_done_at = time.monotonic()
            if done == args.runs:
                break
            if args.reclaim and time.monotonic() >= next_reclaim:  # the lease sweeper (agent.celery)
                reclaim_expired(app, store)
                next_reclaim = time.monotonic() + args.reclaim
            if time.monotonic() - began > args.timeout:
                raise SystemExit(f"[{name}] timed out with {done}/{args.runs} runs done")
            time.sleep(0.05)
        ended = time.monotonic()
    finally:
        for worker in workers:
            stop_worker(worker, signal.SIGKILL if worker is workers[0] and kill else signal.SIGTERM)
    counts.close()
    with psycopg.connect(dsn) as raw:
        segments = [n for (n,) in raw.execute("SELECT COUNT(*) FROM segments GROUP BY run_id")]
        total, distinct = raw.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM commits").fetchone() or (
            0,
            0,
        )
    refunds = Counter((tmp / "refunds.log").read_text().splitlines())
    shutil.rmtree(tmp, ignore_errors=True)
    assert sorted(segments) == [2] * args.runs, "a run finished more than once or not at all"
    assert total == distinct, "a step was committed twice"
    assert set(refunds) == {f"{r}:call-1" for r in ids}, "a refund is missing"
    out: dict[str, Any] = {
        "phase": name,
        "leases": args.leases,
        "workers": args.workers,
        "runs": args.runs,
        "seconds": round(ended - began, 2),
        "runs_per_s": round(args.runs / (ended - began), 1),
        "tool_delay_s": args.tool_delay,
        "commits": total,
        "refunds_executed_twice": sum(1 for n in refunds.values() if n > 1),
    }
    if killed_at is not None:
        out["kill_to_all_done_s"] = round(ended - killed_at, 2)
        out["visibility_timeout_s"] = args.visibility
        out["reclaim_every_s"] = args.reclaim
        out["runs_in_flight_at_kill"] = len(victim_runs)
        if victim_done_at is not None:
            out["recovery_s"] = round(victim_done_at - killed_at, 2)
    return out


def main() -> None:
    """Parse arguments, start the servers, run both phases, print the results."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--visibility", type=float, default=10.0, help="Redis visibility timeout (s)")
    parser.add_argument("--tool-delay", type=float, default=0.05, help="seconds each refund takes")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument(
        "--reclaim",
        type=float,
        default=0.0,
        help="seconds between the driver's own lease sweeps (agent.celery.reclaim_expired); 0: the workers' only",
    )
    parser.add_argument("--leases", default="on", choices=["on", "off"], help="off: no leases, no sweep")
    parser.add_argument("--phases", default="steady,kill", help="which phases to run, comma-separated")
    args = parser.parse_args()
    results = []
    with postgres_server() as dsn, redis_server() as redis_url:
        for name in args.phases.split(","):
            results.append(phase(f"{name}_{args.leases}", dsn, redis_url, args, kill=name == "kill"))
    for result in results:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
