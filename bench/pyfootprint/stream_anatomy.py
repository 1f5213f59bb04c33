"""Where a streamed W6 run's extra cost goes, counted in machine instructions.

usage: ``.venv/bin/python -m bench.pyfootprint.stream_anatomy`` (needs ``valgrind``)

Timing a 40 µs difference on a busy two-core machine moves by several per cent from run to
run; an instruction count does not (the same chart, the same input and ``PYTHONHASHSEED=0``
give the same count). For each variant — the plain ``agent.run``, the stream of every kind,
no kind (only ``final``), and each kind alone — this runs a child process under
``valgrind --tool=cachegrind --cache-sim=no`` twice, once consuming 20 W6 runs and once none
(both after the same warm-up and the same 20 agents built), and reports the difference ÷ 20:
the instructions one run of that variant costs. Not part of ``make bench`` (two minutes on
two cores); ``docs/performance.md`` ("Round six: what a streamed event costs") reads it.
"""

from __future__ import annotations

import gc
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

RUNS = 20
KINDS = ("stage", "commit", "narrative", "decision", "emit", "model_call", "tool_call", "tool_result")
VARIANTS: dict[str, Any] = {
    "stream, every kind": None,
    "stream, no kind": [],
    **{f"stream, {kind} only": [kind] for kind in KINDS},
}


def _child(variant: str, runs: int) -> None:
    """Warm up, build ``RUNS`` agents, then consume ``runs`` of them (the parent diffs 20 and 0)."""
    from bench.pyfootprint.stream_overhead import stream_agent
    from bench.pyfootprint.w6_agent import build_agent, run_agent

    consume: Callable[[Any, Any], object]
    if variant == "run":
        consume = run_agent
    else:
        modes = VARIANTS[variant]
        consume = lambda agent, provider: stream_agent(agent, provider, modes=modes)  # noqa: E731
    gc.disable()  # instructions, not collections: the timing bench keeps the collector on
    for _ in range(5):
        consume(*build_agent())
    pairs = [build_agent() for _ in range(RUNS)]
    for agent, provider in pairs[:runs]:
        consume(agent, provider)


def _instructions(variant: str, runs: int) -> int:
    cmd = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    cmd += [sys.executable, "-m", "bench.pyfootprint.stream_anatomy", "--child", variant, str(runs)]
    done = subprocess.run(cmd, capture_output=True, text=True, env={"PYTHONHASHSEED": "0", "PATH": "/usr/bin:/bin"})
    found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"valgrind failed for {variant!r}: {done.stderr[-500:]}")
    return int(found.group(1).replace(",", ""))


def per_run(variant: str) -> int:
    """Instructions one run of ``variant`` costs (20 runs minus none, ÷ 20)."""
    return (_instructions(variant, RUNS) - _instructions(variant, 0)) // RUNS


def main() -> None:
    """Print instructions per run for each variant, and each over the plain run."""
    if shutil.which("valgrind") is None:
        raise SystemExit("stream_anatomy needs valgrind (apt install valgrind)")
    # import (and so byte-compile) everything a child runs, here: a child that compiled a module
    # would count that against the runs it consumed
    for variant in ("run", *VARIANTS):
        _child(variant, 1)
    gc.enable()
    names = ["run", *VARIANTS]
    with ThreadPoolExecutor(max_workers=2) as pool:
        counts = dict(zip(names, pool.map(per_run, names), strict=True))
    base = counts["run"]
    for name in names:
        print(f"{name:28s} {counts[name] / 1e6:6.2f} M instructions/run  {counts[name] / base:.3f}× the run")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        _child(sys.argv[2], int(sys.argv[3]))
    else:
        main()
