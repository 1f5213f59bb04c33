"""The SIGKILL loop: refund runs whose worker process is killed at random points, then finished.

    .venv/bin/python bench/effects_sigkill.py [--runs 30] [--effect idempotent|checkable|unsafe|all]

Each run of the refund agent (``tests/store/effect_agent.py``: ``issue_refund(A-1001, 129.0)``,
whose effect is a row keyed by its idempotency key in ``refunds`` and one more row in
``raw_calls``; the tool sleeps ``--delay`` s before and after the effect) is started in a worker
process that is SIGKILLed after a random 0..``--window`` s — before, during or after the tool —
and then advanced by fresh processes (each killed again with probability ``--again``) until the
store says it is done or paused. A paused ``unsafe`` run is a reconciliation question: the driver
answers it from the refunds table (a person looking at the payment system). On one SQLite file.

Checks and prints, per effect: kills, runs done, effects per key (must be 1 where it happened),
raw executions per key (``checkable``/``unsafe``: never 2), reconciliation questions asked, and
in-doubt unsafe calls that were NOT asked (must be 0). One JSON line per effect.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tests" / "store"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from effect_agent import _effects_db, build  # noqa: E402

from flowchart.store.effects import ledger_of  # noqa: E402

STARTED = Path(tempfile.mkdtemp(prefix="sigkill-")) / "tool-started"


def spawn(args: list[str], delay: float) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(HERE), str(ROOT)]),
        "EFFECT_DELAY": str(delay),
        "TOOL_STARTED": str(STARTED),
    }
    STARTED.unlink(missing_ok=True)
    return subprocess.Popen(
        [sys.executable, str(HERE / "effect_agent.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def killed_after(proc: subprocess.Popen[str], seconds: float, in_tool: float | None = None) -> bool:
    """SIGKILL ``proc`` after ``seconds`` — or, with ``in_tool``, that long after its tool began
    (so the kills land around the effect too) — and return True when it was still running."""
    if in_tool is not None:
        deadline = time.monotonic() + 30
        while not STARTED.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        seconds = in_tool
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


def one_effect(effect: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"sigkill-{effect}-"))
    where = str(folder / "runs.db")
    agent = build(where, effect)
    store = agent.store
    assert store is not None
    from agent._run import durable

    kills = asked = unasked = 0
    answered: Counter[bool] = Counter()
    recover_s: list[float] = []
    run_ids = []
    for _ in range(args.runs):
        run_id = durable.create(agent, durable.make_input("Refund order A-1001"))
        run_ids.append(run_id)
        proc = spawn(["advance", where, effect, run_id], args.delay)
        # half the kills at a random moment of the whole process, half around the tool's effect
        in_tool = rng.uniform(0, 2.5 * args.delay) if rng.random() < 0.5 else None
        if killed_after(proc, rng.uniform(0, args.window), in_tool):
            kills += 1
        while True:
            record = store.get(run_id)
            if record.status in ("done", "failed"):
                break
            if record.status == "paused":
                entries = ledger_of(store).entries(run_id)
                in_doubt = any(e["receipt"] is None for e in entries)
                data = record.checkpoint.pause_data.get("data", {}) if record.checkpoint else {}
                if "reconcile" in data:
                    asked += 1
                    key = data["reconcile"]["key"]
                    db = _effects_db(where)  # the payment system, as a person would look it up
                    happened = db.execute("SELECT 1 FROM refunds WHERE key = ?", (key,)).fetchone() is not None
                    db.close()
                    answered[happened] += 1
                    began = time.monotonic()
                    # the driver's one agent (one store object per process: a second SqliteStore opened
                    # here would read the file's header through a plain descriptor, and closing it drops
                    # this process's POSIX locks on the database — see the report)
                    agent.resume_run(run_id, {"happened": happened, "by": "bench"})
                    recover_s.append(time.monotonic() - began)
                    continue
                if in_doubt:
                    unasked += 1
                raise SystemExit(f"run {run_id} paused without a reconciliation question: {record.checkpoint}")
            proc = spawn(["advance", where, effect, run_id], args.delay)
            if rng.random() < args.again and killed_after(proc, rng.uniform(0, args.window)):
                kills += 1
            else:
                proc.wait()
        # an intent left without a receipt for an unsafe tool that nobody was asked about
        if effect == "unsafe":
            unasked += sum(1 for e in ledger_of(store).entries(run_id) if e["receipt"] is None)
    db = _effects_db(where)
    refunds = Counter(k for (k,) in db.execute("SELECT key FROM refunds"))
    raw = Counter(k for (k,) in db.execute("SELECT key FROM raw_calls"))
    db.close()
    statuses = Counter(store.get(r).status for r in run_ids)
    out = {
        "effect": effect,
        "runs": args.runs,
        "kills": kills,
        "done": statuses.get("done", 0),
        "refunds": sum(refunds.values()),
        "keys_with_two_refunds": sum(1 for n in refunds.values() if n > 1),
        "keys_run_twice": sum(1 for n in raw.values() if n > 1),
        "reconciliations_asked": asked,
        "answered_it_happened": answered[True],
        "answered_it_did_not": answered[False],
        "in_doubt_not_asked": unasked,
    }
    if effect in ("checkable", "unsafe"):
        assert out["keys_run_twice"] == 0, out
    assert out["keys_with_two_refunds"] == 0 and out["in_doubt_not_asked"] == 0, out
    assert out["done"] == args.runs, out
    return out


def main() -> None:
    """Parse the arguments, run the loop per effect, print one JSON line each."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--effect", default="all", choices=["idempotent", "checkable", "unsafe", "all"])
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the tool sleeps before and after")
    parser.add_argument("--window", type=float, default=2.0, help="kill after a random 0..WINDOW seconds")
    parser.add_argument("--again", type=float, default=0.3, help="probability a re-advance is killed too")
    parser.add_argument("--seed", type=int, default=33)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    effects = ["idempotent", "checkable", "unsafe"] if args.effect == "all" else [args.effect]
    for effect in effects:
        print(json.dumps(one_effect(effect, args, rng)), flush=True)


if __name__ == "__main__":
    main()
