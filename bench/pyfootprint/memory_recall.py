"""M100K — recall from 100,000 memory items in SQLite (target: ≤ 5 ms p95 per search).

usage: ``.venv/bin/python -m bench.pyfootprint.memory_recall``

One SQLite file (a temporary directory) holds 100,000 items: sentences of 8–16 words drawn
from a 5,000-word vocabulary (Zipf-like, seeded: the same items every run). Variants: the
items spread over 1,000 users (100 each: a tenant's memory) and all in one namespace (the
worst case: every match is a candidate; reported, not held to the target — with the
Zipf-like words most queries match tens of thousands of items, each scored). Each sample
is one ``search(namespace, query, k=5)`` of a 4-word query drawn from the vocabulary;
rows are µs per search (the report prints the median; this script also prints p95 and
checks it against the target). The in-process
``InMemoryMemory`` is measured on the per-user variant beside it.
Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` like the workloads.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent.memory import InMemoryMemory, SqliteMemory
from bench.harness import Record
from bench.pyfootprint.common import row, settings

ITEMS = 100_000
TARGET_P95_MS = 5.0


def vocabulary(rng: random.Random, size: int = 5_000) -> list[str]:
    """``size`` distinct made-up words."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(letters) for _ in range(rng.randint(3, 9))))
    return sorted(words)


def sentence(rng: random.Random, words: list[str]) -> str:
    """8–16 words, the low ranks far more common (Zipf-like)."""
    return " ".join(words[min(int(rng.paretovariate(1.1)) - 1, len(words) - 1)] for _ in range(rng.randint(8, 16)))


def fill(memory: Any, users: int, rng: random.Random, words: list[str], items: int = ITEMS) -> list[tuple[str, ...]]:
    """``items`` items over ``users`` namespaces; the namespaces."""
    spaces = [("acme", f"u-{n}") for n in range(users)]
    batch = []
    for n in range(items):
        batch.append((spaces[n % users], f"{sentence(rng, words)} #{n}"))
        if len(batch) == 5_000:
            memory.put_many(batch)
            batch.clear()
    if batch:
        memory.put_many(batch)
    return spaces


def measure(memory: Any, spaces: list[tuple[str, ...]], words: list[str], budget_s: float, reps: int) -> list[float]:
    """Seconds per search, over at least ``reps`` searches or ``budget_s`` seconds."""
    rng = random.Random(7)
    samples: list[float] = []
    t0 = time.perf_counter()
    while len(samples) < reps or time.perf_counter() - t0 < budget_s:
        namespace = rng.choice(spaces)
        query = " ".join(rng.choice(words[:2_000]) for _ in range(4))
        start = time.perf_counter()
        memory.search(namespace, query, k=5)
        samples.append(time.perf_counter() - start)
        if len(samples) >= 20_000:
            break
    return samples


def p95_ms(samples: list[float]) -> float:
    """The 95th percentile in milliseconds."""
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


def main(quick: bool = False) -> list[Record]:
    """Emit one row per variant; print p95 against the target on stderr; exit 1 when missed."""
    cfg = settings(quick)
    rng = random.Random(42)
    words = vocabulary(rng)
    out: list[Record] = []
    missed = []
    items = 2_000 if quick else ITEMS  # a smoke run (tests) fills a small memory
    with tempfile.TemporaryDirectory() as tmp:
        for label, users, held in (
            ("100,000 items, 1,000 users", 1_000, True),
            ("100,000 items, one namespace", 1, False),
        ):
            memory = SqliteMemory(Path(tmp) / f"memory-{users}.db")
            spaces = fill(memory, users, random.Random(1), words, items)
            samples = measure(memory, spaces, words, cfg.budget_s, 50 if quick else 500)
            p95 = p95_ms(samples)
            row(out, "M100K", f"SqliteMemory.search, {label}", samples, unit="us/search", p95_ms=round(p95, 3))
            print(json.dumps({"variant": f"SqliteMemory, {label}", "p95_ms": round(p95, 3)}), file=sys.stderr)
            if held and p95 > TARGET_P95_MS:
                missed.append(f"{label}: p95 {p95:.2f} ms > {TARGET_P95_MS} ms")
            memory.close()
        in_process = InMemoryMemory()
        spaces = fill(in_process, 1_000, random.Random(1), words, items)
        samples = measure(in_process, spaces, words, cfg.budget_s, 50 if quick else 500)
        row(out, "M100K", "InMemoryMemory.search, 100,000 items, 1,000 users", samples, unit="us/search")
    if missed and not quick:
        print("M100K missed its target: " + "; ".join(missed), file=sys.stderr)
        sys.exit(1)
    return out


if __name__ == "__main__":
    main()
