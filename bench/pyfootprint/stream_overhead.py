"""Streaming overhead: the W6 agent run streamed versus the same run without streaming.

usage: ``.venv/bin/python -m bench.pyfootprint.stream_overhead``

One process, side by side: each sample times ``agent.run(...)`` and then
``for event in agent.stream(...)`` (every event consumed, ``to_dict()`` not called) on
two freshly built W6 agents (``bench.pyfootprint.w6_agent``: the ``add`` tool, a
scripted provider, 10 tool rounds), alternating which goes first, so both see the same
machine. The cycle collector stays on (what a stream keeps alive costs collections in an
application too), and the heap is collected before each sample (outside the timing), so each
sample pays for the collections its own allocations trigger: without that, a collection one
variant's allocations made due landed in whichever variant ran next, and the medians moved
with the rotation rather than with the code (``docs/performance.md``, "Round five: the stream
counts its narrative"). Rows: the plain run, the stream of every kind, the ``messages`` mode alone,
and a JSON line with the ratios (median stream ÷ median run; the issue's bar is ≤ 1.3).
Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` like the workloads.
"""

from __future__ import annotations

import gc
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.harness import Record
from bench.pyfootprint.common import row, settings
from bench.pyfootprint.w6_agent import ANSWER, TOOL_TURNS, build_agent, run_agent

MESSAGE = "add numbers ten times"


def stream_agent(agent: Any, provider: Any, modes: Any = None) -> int:
    """Consume one streamed W6 run, checked like ``run_agent``; returns the event count."""
    count = 0
    last = None
    for event in agent.stream(MESSAGE, modes=modes):
        count += 1
        last = event
    if last is None or last.kind != "final" or last.result != ANSWER or len(provider.requests) != TOOL_TURNS + 1:
        raise RuntimeError(f"W6 stream wrong result: {last!r}")
    return count


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main(quick: bool = False) -> list[Record]:
    """Emit the rows and the ratio line."""
    cfg = settings(quick)
    runners: dict[str, Callable[[Any, Any], object]] = {
        "run": run_agent,
        "stream": stream_agent,
        "stream messages": lambda agent, provider: stream_agent(agent, provider, modes=["messages"]),
    }
    samples: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    for _ in range(cfg.warmup):
        for name in names:
            _timed(lambda name=name: runners[name](*build_agent()))  # type: ignore[misc]
    t0 = time.perf_counter()
    turn = 0
    while len(samples["run"]) < cfg.max_reps and (
        len(samples["run"]) < cfg.min_reps or time.perf_counter() - t0 < 3 * cfg.budget_s
    ):
        order = names[turn % len(names) :] + names[: turn % len(names)]  # rotate who goes first
        for name in order:
            pair = build_agent()
            gc.collect()  # each sample pays for the collections its own allocations trigger
            samples[name].append(_timed(lambda name=name, pair=pair: runners[name](*pair)))  # type: ignore[misc]
        turn += 1
    out: list[Record] = []
    events = stream_agent(*build_agent())
    labels = {
        "run": "real Agent, agent.run",
        "stream": "real Agent, agent.stream (every kind)",
        "stream messages": "real Agent, agent.stream(modes=['messages'])",
    }
    for name in names:
        extra = {"events": events} if name == "stream" else {}
        row(out, "W6-stream", labels[name], samples[name], per=TOOL_TURNS, unit="us/iter", **extra)
    base = statistics.median(samples["run"])
    ratios = {name: round(statistics.median(samples[name]) / base, 3) for name in names if name != "run"}
    print(json.dumps({"peer": "pyfootprint", "workload": "W6-stream", "ratios": ratios, "bar": 1.3}), flush=True)
    return out


if __name__ == "__main__":
    main()
