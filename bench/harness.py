"""Timing harness shared by every Python peer (pyfootprint and LangGraph).

The rules are those of SPEC.md: warm up, then time one full run per sample until there are
at least ``min_reps`` samples **and** the time budget has passed (capped at ``max_reps``);
report the median, min and max converted to the workload's unit, one JSON line each.

Three budgets exist:

- the default: 5 warm-ups, >= 15 samples and >= 4 s (``BENCH_BUDGET_S`` overrides the 4 s);
- ``BENCH_QUICK=1``: a smoke run, 1 warm-up, >= 3 samples and 0.3 s;
- :meth:`Settings.once`: no warm-up and exactly one sample, for ``main(quick=True)`` in tests.

This module uses only the standard library, so the peers' venv can import it too.
"""

from __future__ import annotations

import gc
import json
import os
import platform
import resource
import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

Record = dict[str, Any]


@dataclass(frozen=True)
class Settings:
    """How long to measure: warm-ups, minimum samples, time budget, sample cap."""

    warmup: int = 5
    min_reps: int = 15
    budget_s: float = 4.0
    max_reps: int = 2000
    quick: bool = False

    @classmethod
    def from_env(cls) -> Settings:
        """Read ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` from the environment."""
        quick = os.environ.get("BENCH_QUICK") == "1"
        budget = float(os.environ.get("BENCH_BUDGET_S", "0.3" if quick else "4"))
        if quick:
            return cls(warmup=1, min_reps=3, budget_s=budget, quick=True)
        return cls(budget_s=budget)

    @classmethod
    def once(cls) -> Settings:
        """One sample, no warm-up: proves a workload still runs, measures nothing."""
        return cls(warmup=0, min_reps=1, budget_s=0.0, max_reps=1, quick=True)

    def bench(
        self,
        fn: Callable[[], object],
        *,
        warmup: int | None = None,
        min_reps: int | None = None,
        after: Callable[[], object] | None = None,
    ) -> list[float]:
        """Time ``fn`` repeatedly; ``after`` (untimed) runs after every call. Returns seconds."""
        n_warm = min(self.warmup, warmup if warmup is not None else self.warmup)
        floor = min(self.min_reps, min_reps if min_reps is not None else self.min_reps)
        for _ in range(n_warm):
            fn()
            if after is not None:
                after()
        samples: list[float] = []
        t0 = time.perf_counter()
        while len(samples) < self.max_reps and (len(samples) < floor or time.perf_counter() - t0 < self.budget_s):
            start = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - start)
            if after is not None:
                after()
        return samples

    async def abench(self, fn: Callable[[], Awaitable[object]]) -> list[float]:
        """Time an async callable inside one running event loop. Returns seconds."""
        for _ in range(self.warmup):
            await fn()
        samples: list[float] = []
        t0 = time.perf_counter()
        while len(samples) < self.max_reps and (
            len(samples) < self.min_reps or time.perf_counter() - t0 < self.budget_s
        ):
            start = time.perf_counter()
            await fn()
            samples.append(time.perf_counter() - start)
        return samples


def side_by_side(
    cfg: Settings, variants: dict[str, Callable[[], Callable[[], object]]], rounds_budget: float = 3.0
) -> dict[str, list[float]]:
    """Time several variants of one workload in one process, alternating: each round times
    every variant once, rotating which goes first, so all see the same machine.

    ``variants[name]()`` prepares one sample (untimed: a fresh agent, say) and returns what to
    time. The heap is collected before each sample (untimed), so each sample pays for the
    collections its own allocations trigger, not for garbage the previous variant left
    (``docs/performance.md``, "Round five: the stream counts its narrative"). Runs at least
    ``min_reps`` rounds and until ``rounds_budget`` × the budget has passed. Returns seconds.
    """
    names = list(variants)
    for _ in range(cfg.warmup):
        for name in names:
            variants[name]()()
    samples: dict[str, list[float]] = {name: [] for name in names}
    t0 = time.perf_counter()
    turn = 0
    while turn < cfg.max_reps and (turn < cfg.min_reps or time.perf_counter() - t0 < rounds_budget * cfg.budget_s):
        for name in names[turn % len(names) :] + names[: turn % len(names)]:
            fn = variants[name]()
            gc.collect()
            start = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - start)
        turn += 1
    return samples


def ratios(samples: dict[str, list[float]], base: str) -> dict[str, float]:
    """Each variant's median over ``base``'s median, to three places."""
    median = statistics.median(samples[base])
    return {name: round(statistics.median(xs) / median, 3) for name, xs in samples.items() if name != base}


def record(
    peer: str,
    dist: str,
    workload: str,
    variant: str,
    samples: list[float],
    *,
    per: int = 1,
    unit: str = "us/run",
    **extra: Any,
) -> Record:
    """One measurement as a SPEC.md result line: samples in seconds -> µs per unit."""
    us = [x * 1e6 / per for x in samples]
    return {
        "peer": peer,
        "version": version(dist),
        "runtime": f"python {platform.python_version()}",
        "workload": workload,
        "variant": variant,
        "unit": unit,
        "per": per,
        "n": len(us),
        "median": statistics.median(us),
        "min": min(us),
        "max": max(us),
        "run_median_ms": statistics.median(samples) * 1e3,
        **extra,
    }


def emit(rec: Record, out: list[Record] | None = None) -> Record:
    """Print one JSON line (flushed, so a crash later keeps it) and collect it in ``out``."""
    print(json.dumps(rec), flush=True)
    if out is not None:
        out.append(rec)
    return rec


def note(peer: str, workload: str, variant: str, text: str, out: list[Record] | None = None) -> None:
    """Print a skip note as a JSON line: the row exists in the table but has no number."""
    emit({"peer": peer, "workload": workload, "variant": variant, "skipped": text}, out)


def peak_rss_bytes() -> int:
    """Peak resident set size of this process (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def rss_bytes() -> int:
    """Current resident set size of this process."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def latency_figure(
    peer: str, figure: str, runs: int, samples_ms: list[float], target_ms: float, digits: int = 2, **extra: Any
) -> dict[str, Any]:
    """One latency row of the inbox figures (``bench/inbox.py`` and its LangGraph peer print the
    same shape): the sample count, the median and the 95th percentile (nearest rank) in ms."""
    ordered = sorted(samples_ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    row = {"peer": peer, "figure": figure, "runs": runs, "n": len(ordered)}
    row.update(p50_ms=round(statistics.median(ordered), digits), p95_ms=round(p95, digits), target_p95_ms=target_ms)
    row.update(extra)
    return row
