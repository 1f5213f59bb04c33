"""The SIGKILL loop on Celery: refund runs advanced by real ``celery worker`` processes (PostgreSQL +
Redis, default settings), workers SIGKILLed at random points while they advance a run.

    nice -n 10 .venv/bin/python bench/effects_sigkill_celery.py [--runs 200] [--kills 100]
        [--workers 4] [--effect idempotent|checkable|unsafe|all]

Per effect, on a fresh schema: ``--workers`` workers (concurrency 1, ``make_app``'s defaults: no
beat, no extra process, the broker's 3600 s visibility timeout) advance ``--runs`` runs of the
refund agent of ``tests/store/effect_agent.py`` (``issue_refund(A-1001, 129.0)``: its effect is a
row keyed by its idempotency key in ``refunds``, and a row per raw call in ``raw_calls``; the tool
sleeps ``--delay`` s before and after the effect). Every 0.2..``--gap`` s one worker that is in
the middle of a run (its log says it started an advance it has not ended) is SIGKILLed — its whole
process group, a machine dying — at whatever point that run is (before, in or after the tool,
committing), and a replacement is started, until ``--kills`` kills. A paused ``unsafe`` run is a
reconciliation question: the driver answers it from the refunds table (a person looking at the
payment system) with ``answer_and_enqueue``.

Recovery of a kill: from the SIGKILL to another worker holding the killed run's lease (a token
above the dead one's, not a handover) or the run having moved on (done, paused); ``claimed``: to
a sweep having claimed it (a handover lease), the part that does not wait for a free worker. Checks, per
effect: every run done exactly once (segments and commits unique), 0 runs with two refunds, no
raw call of a ``checkable`` or ``unsafe`` key twice, every in-doubt ``unsafe`` call asked about
(no unsettled intent in a finished run). Prints one JSON line per effect.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
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
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from effect_agent import _effects_db, build  # noqa: E402
from servers import postgres_server, redis_server, worker_argv  # noqa: E402

from agent.celery import answer_and_enqueue, make_app  # noqa: E402
from flowchart.store.effects import ledger_of  # noqa: E402
from flowchart.store.leases import HANDOVER  # noqa: E402


def fresh_schema(dsn: str, name: str) -> str:
    """A DSN on a new empty schema ``name``."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    return f"{dsn}?options={urllib.parse.quote(f'-csearch_path={name}')}"


class Worker:
    """One ``celery worker`` process group (started without waiting for it to be ready)."""

    def __init__(self, name: str, env: dict[str, str], logdir: Path) -> None:
        self.name = name
        self.log = logdir / f"{name}.log"
        argv = worker_argv(name, self.log, app="effect_worker_app")
        self.proc = subprocess.Popen(
            argv, env=env, cwd=str(HERE), start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def ready(self) -> bool:
        return " ready." in self.text()

    def in_flight(self) -> list[str]:
        """Run ids this worker started advancing and has not ended."""
        started: Counter[str] = Counter()
        for line in self.text().splitlines():
            if " advance " in line:
                words = line.split(" advance ", 1)[1].split()
                if len(words) >= 2:
                    started[words[0]] += 1 if words[1] == "start" else -1
        return [run_id for run_id, n in started.items() if n > 0]

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (nearest rank) of ``values``, or None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, max(0, round(q * len(ordered)) - 1))], 3)


def one_effect(
    effect: str, base_dsn: str, redis_url: str, args: argparse.Namespace, rng: random.Random
) -> dict[str, Any]:
    """Run the loop for ``effect``; return its figures (after checking the laws)."""
    dsn = fresh_schema(base_dsn, f"sk_{effect}")
    tmp = Path(tempfile.mkdtemp(prefix=f"sigkill-celery-{effect}-"))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]),
        "AGENT_BROKER_URL": redis_url,
        "AGENT_RUNS_DSN": dsn,
        "EFFECT": effect,
        "EFFECT_DELAY": str(args.delay),
    }
    env.pop("TOOL_STARTED", None)
    env.pop("VISIBILITY_TIMEOUT", None)
    _effects_db(dsn).close()  # the payment system's tables, made once (4 workers' CREATE IF NOT EXISTS race)
    agent = build(dsn, effect)
    store = agent.store
    assert store is not None
    counter = 0

    def spawn() -> Worker:
        nonlocal counter
        counter += 1
        return Worker(f"{effect[:3]}{counter}", env, tmp)

    workers = [spawn() for _ in range(args.workers)]
    deadline = time.monotonic() + 300
    while not all(w.ready() for w in workers):
        if time.monotonic() > deadline:
            raise SystemExit(f"[{effect}] the workers did not start: see {tmp}")
        time.sleep(0.2)
    app = make_app("effect_worker_app:agent", broker=redis_url)
    db = psycopg.connect(dsn, autocommit=True)
    began = time.monotonic()
    ids = [agent.submit("Refund order A-1001", app=app) for _ in range(args.runs)]
    kills: list[dict[str, Any]] = []
    asked = 0
    answered: Counter[bool] = Counter()
    handled: set[str] = set()
    next_kill = time.monotonic() + rng.uniform(0.2, args.gap)
    stuck_note = ""
    try:
        while True:
            now = time.monotonic()
            statuses = dict(db.execute("SELECT run_id, status FROM runs").fetchall())
            leases = {r: (h, int(t)) for r, h, t in db.execute("SELECT run_id, holder, token FROM leases").fetchall()}
            for run_id, status in statuses.items():  # the reconciliation questions, answered by a person
                if status == "paused" and run_id not in handled:
                    record = store.get(run_id)
                    data = record.checkpoint.pause_data.get("data", {}) if record.checkpoint else {}
                    if "reconcile" not in data:
                        raise SystemExit(f"[{effect}] run {run_id} paused without a reconciliation question")
                    key = data["reconcile"]["key"]
                    happened = db.execute("SELECT 1 FROM refunds WHERE key = %s", (key,)).fetchone() is not None
                    answer_and_enqueue(app, store, run_id, {"happened": happened, "by": "bench"})
                    handled.add(run_id)
                    asked += 1
                    answered[happened] += 1
            for kill in kills:  # recovery: another worker leased the killed run, or it moved on
                if kill["recovered_s"] is None:
                    lease = leases.get(kill["run_id"])
                    moved = statuses.get(kill["run_id"]) != "running"
                    later = lease is not None and lease[1] > kill["token"]
                    if kill["claimed_s"] is None and (moved or later):  # a sweep claimed it (or a worker took it)
                        kill["claimed_s"] = now - kill["at"]
                    if moved or (later and lease is not None and not lease[0].startswith(HANDOVER)):
                        kill["recovered_s"] = now - kill["at"]
            if len(kills) < args.kills and now >= next_kill:
                flying = {w: (w.in_flight() if w.proc.poll() is None and w.ready() else []) for w in workers}
                busy = [w for w, runs in flying.items() if runs and statuses.get(runs[0]) == "running"]
                if busy and sum(1 for w in workers if w.ready()) > 1:
                    victim = rng.choice(busy)
                    run_id = flying[victim][0]
                    lease = leases.get(run_id)
                    victim.kill()
                    kills.append(
                        {
                            "at": time.monotonic(),
                            "run_id": run_id,
                            "token": lease[1] if lease else 0,
                            "holder": lease[0] if lease else None,
                            "claimed_s": None,
                            "recovered_s": None,
                        }
                    )
                    workers.remove(victim)
                    workers.append(spawn())
                    next_kill = time.monotonic() + rng.uniform(0.2, args.gap)
            done = sum(1 for s in statuses.values() if s == "done")
            if done == args.runs and all(k["recovered_s"] is not None for k in kills):
                break
            if now - began > args.timeout:
                waiting = [r for r, s in statuses.items() if s != "done"]
                stuck_note = f"timed out: {len(waiting)} runs not done: {waiting[:5]}"
                break
            time.sleep(0.05)
        ended = time.monotonic()
    finally:
        for worker in workers:
            worker.kill()
    failed = [r for r, s in statuses.items() if s == "failed"]
    segments = dict(db.execute("SELECT run_id, COUNT(*) FROM segments GROUP BY run_id").fetchall())
    total, distinct = db.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM commits").fetchone() or (0, 0)
    refunds = Counter(k for (k,) in db.execute("SELECT key FROM refunds"))
    raw = Counter(k for (k,) in db.execute("SELECT key FROM raw_calls"))
    run_of = dict(db.execute("SELECT key, run_id FROM effects").fetchall())  # each key's run, from the ledger
    refunds_per_run = Counter(run_of.get(k, "?") for k in refunds)
    db.close()
    unsettled = sum(1 for r in ids for e in ledger_of(store).entries(r) if e["receipt"] is None)
    recoveries = [k["recovered_s"] for k in kills if k["recovered_s"] is not None]
    claims = [k["claimed_s"] for k in kills if k["claimed_s"] is not None]
    out: dict[str, Any] = {
        "effect": effect,
        "workers": args.workers,
        "runs": args.runs,
        "kills": len(kills),
        "seconds": round(ended - began, 1),
        "done": sum(1 for r in ids if statuses.get(r) == "done"),
        "failed": len(failed),
        "segments_per_run": dict(Counter(segments.get(r, 0) for r in ids)),
        "commits_twice": total - distinct,
        "refunds": sum(refunds.values()),
        "runs_with_two_refunds": sum(1 for n in refunds_per_run.values() if n > 1),
        "runs_without_refund": sum(1 for r in ids if refunds_per_run.get(r, 0) == 0),
        "keys_called_twice": sum(1 for n in raw.values() if n > 1),
        "reconciliations_asked": asked,
        "answered_it_happened": answered[True],
        "answered_it_did_not": answered[False],
        "in_doubt_not_asked": unsettled,
        "recovery_p50_s": percentile(recoveries, 0.5),
        "recovery_p95_s": percentile(recoveries, 0.95),
        "recovery_max_s": percentile(recoveries, 1.0),
        "recovery_mean_s": round(statistics.fmean(recoveries), 3) if recoveries else None,
        "claimed_p50_s": percentile(claims, 0.5),
        "claimed_p95_s": percentile(claims, 0.95),
        "kills_never_recovered": sum(1 for k in kills if k["recovered_s"] is None),
        "recoveries_over_2s": sum(1 for r in recoveries if r > 2.0),
        "slow_kills": [  # the lease the killed run had at the kill (None: not leased yet) and its recovery
            {"recovered_s": round(k["recovered_s"], 2), "holder_at_kill": k["holder"]}
            for k in kills
            if k["recovered_s"] is not None and k["recovered_s"] > 2.0
        ],
    }
    if stuck_note:
        out["note"] = stuck_note
    shutil.rmtree(tmp, ignore_errors=True)
    return out


def check(out: dict[str, Any]) -> list[str]:
    """The laws the loop must show; the broken ones, named."""
    broken = []
    if out["done"] != out["runs"]:
        broken.append("not every run is done")
    if out["commits_twice"]:
        broken.append("a commit was written twice")
    if out["runs_with_two_refunds"]:
        broken.append("a run refunded twice")
    if out["effect"] in ("checkable", "unsafe") and out["keys_called_twice"]:
        broken.append("a checkable or unsafe call ran twice")
    if out["in_doubt_not_asked"]:
        broken.append("an in-doubt call was never settled or asked about")
    if out["effect"] != "unsafe" and out["runs_without_refund"]:
        broken.append("a run finished without its refund")
    return broken


def main() -> None:
    """Parse the arguments, start PostgreSQL and Redis, run the loop per effect."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--kills", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--effect", default="all", choices=["idempotent", "checkable", "unsafe", "all"])
    parser.add_argument("--delay", type=float, default=0.3, help="seconds the tool sleeps before and after")
    parser.add_argument("--gap", type=float, default=1.5, help="at most this many seconds between kills")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per effect before giving up")
    parser.add_argument("--seed", type=int, default=33)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    effects = ["idempotent", "checkable", "unsafe"] if args.effect == "all" else [args.effect]
    broken_any = False
    with postgres_server() as dsn, redis_server() as redis_url:
        for effect in effects:
            out = one_effect(effect, dsn, redis_url, args, rng)
            broken = check(out)
            out["laws_broken"] = broken
            broken_any = broken_any or bool(broken)
            print(json.dumps(out), flush=True)
    if broken_any:
        raise SystemExit("some laws were broken: see laws_broken above")


if __name__ == "__main__":
    main()
