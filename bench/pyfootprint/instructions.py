"""Instructions per run of each workload a fast path claims to speed up, counted by valgrind.

usage: ``.venv/bin/python -m bench.pyfootprint.instructions [WORKLOAD ...]`` (needs ``valgrind``)

On a machine shared by several people a timed A/B of a 5 % difference is noise; an instruction
count is not (the same code, the same input and ``PYTHONHASHSEED=0`` give the same count to a
few parts in a million). For each workload a child process runs under
``valgrind --tool=cachegrind --cache-sim=no`` twice — consuming ``RUNS`` prepared runs, then
none, after the same warm-up and the same preparation — and the difference ÷ ``RUNS`` is what
one run costs. ``docs/performance.md`` ("Round seven: each fast path judged") reads it: a fast
path is ablated in a branch and kept only when this count (and the timed ``make bench`` row)
moves by ≥ 5 %. Not part of ``make bench`` (a minute or two per workload on two cores).

Workloads: ``w1`` (200 stages), ``w1n`` (the same with the narrative recorder), ``w1k`` (the
recorder attached but never read), ``w6`` (the
real Agent, scripted provider), ``w6r`` (the same agent on ``replayed`` of a recorded W6
run: issue 34's ≤ 1.2× ``w6``), ``w6q`` (the same, ``narrative=False``), ``w6c`` (the SPEC
chart on the bare engine), ``save`` / ``load`` (``Trace.save`` / ``Trace.load`` of a 3,000-commit
W7 run), ``w4k`` (W4 into a SQLite store opened with a key); ``e6*`` the W6 agent of
``effects_overhead``: ``e6`` plain, ``e6p`` priced (``pricing=`` naming its model), ``e6u``
the default (no ``pricing=``: the built-in table, the model unpriced), ``e6i`` an idempotent
tool (memory ledger), ``e6s`` / ``e6si`` on a SQLite store (a fresh file per run, as
``effects_overhead`` times them), read and idempotent tool; ``e6s1`` / ``e6si1`` the same on one
store every run shares (its connections made once, as a long-lived worker's are).
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

RUNS = {
    "w1": 10,
    "w1n": 10,
    "w1k": 10,
    "w6": 10,
    "w6r": 10,
    "w6q": 10,
    "w6c": 20,
    "save": 3,
    "load": 3,
    "w4k": 10,
    "w4": 10,
    "e6": 10,
    "e6p": 10,
    "e6u": 10,
    "e6i": 10,
    "e6s": 10,
    "e6si": 10,
    "e6s1": 10,
    "e6si1": 10,
}
KEY = b"k" * 32


def _prepare(workload: str, count: int) -> list[Callable[[], object]]:
    """``count`` zero-argument calls, each one run of ``workload`` (built before counting starts)."""
    if workload in ("w1", "w1n"):
        from bench.pyfootprint.w1_linear import build, run_once

        chart = build()
        return [lambda: run_once(chart, with_narrative=workload == "w1n") for _ in range(count)]
    if workload == "w1k":  # the narrative attached, never read: what keeping its calls costs
        from bench.pyfootprint.w1_linear import build
        from flowchart import narrative

        chart = build()
        return [lambda: chart.run(recorders=[narrative()]) for _ in range(count)]
    if workload in ("w6", "w6q"):
        from bench.pyfootprint.w6_agent import build_agent, run_agent

        pairs = [build_agent(with_narrative=workload == "w6") for _ in range(count)]
        return [lambda pair=pair: run_agent(*pair) for pair in pairs]
    if workload == "w6r":
        from bench.pyfootprint.replay import recorded_w6, replaying_agent

        record = recorded_w6()
        agents = [replaying_agent(record)[0] for _ in range(count)]
        return [lambda made=made: made.run("add numbers ten times") for made in agents]
    if workload == "w6c":
        from bench.pyfootprint.w6_agent import build_chart, run_chart

        spec_chart = build_chart()
        return [lambda: run_chart(spec_chart) for _ in range(count)]
    if workload in ("save", "load"):
        from bench.pyfootprint.w7_big_run import run
        from flowchart import Trace

        folder = tempfile.mkdtemp(prefix="pf-instr-")
        path = os.path.join(folder, "t.json")
        trace = Trace.from_result(run(3000))
        trace.save(path)
        if workload == "save":
            return [lambda: trace.save(path + ".again") for _ in range(count)]
        return [lambda: Trace.load(path) for _ in range(count)]
    if workload in ("w4", "w4k"):
        from bench.pyfootprint.w2_loop import build, run_loop
        from flowchart.store import SqliteStore

        folder = tempfile.mkdtemp(prefix="pf-instr-")
        store = SqliteStore(os.path.join(folder, "w4.db"), key=KEY if workload == "w4k" else None)
        loop_chart = build()
        return [lambda: run_loop(loop_chart, store=store) for _ in range(count)]
    if workload.startswith("e6"):  # bench.pyfootprint.effects_overhead's variants (issue 33's bars)
        from bench.pyfootprint.effects_overhead import build
        from bench.pyfootprint.w6_agent import run_agent
        from flowchart.store import SqliteStore

        folder = tempfile.mkdtemp(prefix="pf-instr-")
        effect = "idempotent" if workload in ("e6i", "e6si", "e6si1") else "read"
        stored = workload in ("e6s", "e6si", "e6s1", "e6si1")
        priced = {"e6p": True, "e6u": "table"}.get(workload, False)
        shared = SqliteStore(os.path.join(folder, "runs.db")) if workload.endswith("1") else None
        if shared is not None:  # one store for every run, warmed (its connections and ledger made)
            build(effect, shared, priced)[0].run("warm up")
        pairs = []
        for n in range(count):
            store = (shared or SqliteStore(os.path.join(folder, f"runs-{n}.db"))) if stored else None
            pairs.append(build(effect, store, priced))
        return [lambda pair=pair: run_agent(*pair) for pair in pairs]
    raise SystemExit(f"unknown workload {workload!r} (one of {', '.join(RUNS)})")


def _child(workload: str, runs: int) -> None:
    """Warm up, prepare ``RUNS`` runs, then consume ``runs`` of them (the parent diffs RUNS and 0)."""
    gc.disable()  # instructions, not collections: the timing bench keeps the collector on
    for call in _prepare(workload, 3):
        call()
    calls = _prepare(workload, RUNS[workload])
    for call in calls[:runs]:
        call()


def _instructions(workload: str, runs: int) -> int:
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    cmd += [sys.executable, "-m", "bench.pyfootprint.instructions", "--child", workload, str(runs)]
    env = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind failed for {workload!r}: {done.stderr[-800:]}")
    return int(found.group(1).replace(",", ""))


def per_run(workload: str) -> int:
    """Instructions one run of ``workload`` costs (``RUNS`` runs minus none, ÷ ``RUNS``)."""
    return (_instructions(workload, RUNS[workload]) - _instructions(workload, 0)) // RUNS[workload]


def main(argv: list[str]) -> None:
    """Print instructions per run for each workload named (all by default)."""
    if argv[:1] == ["--child"]:
        _child(argv[1], int(argv[2]))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("instructions needs valgrind (apt install valgrind)")
    names = argv or list(RUNS)
    # byte-compile every module here, not in a counted child (a child that compiled a module would
    # count that against its runs — even with PYTHONDONTWRITEBYTECODE set in this shell)
    env = {"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"}
    for name in names:
        cmd = [sys.executable, "-m", "bench.pyfootprint.instructions", "--child", name, "1"]
        subprocess.run(cmd, env=env, check=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        for name, count in zip(names, pool.map(per_run, names), strict=True):
            print(f"{name}\t{count}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
