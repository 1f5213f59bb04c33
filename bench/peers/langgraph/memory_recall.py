"""M100K beside pyfootprint — LangGraph's ``InMemoryStore.search`` and ``SqliteStore.search``
on the same 100,000 items (``bench.memory_items``): 1,000 users, and (as pyfootprint's second
variant) all in one namespace.

usage: ``bench/.cache/peers-venv/bin/python -m bench.peers.langgraph.memory_recall``

Each item is ``store.put(("acme", "u-N"), key, {"text": ...})``; each sample one
``store.search(namespace, query=..., limit=5)``. Without an embedding index (none is configured:
no model weights here) LangGraph's search does not rank by the query — it lists the namespace's
items — so these rows are the cost of a namespace search, not of a relevance ranking.
Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` like the workloads.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import Record, Settings, emit, record
from bench.memory_items import ITEMS, items, p95_ms, queries

USERS = 1_000


def fill(store: Any, count: int, users: int = USERS) -> None:
    """The items, in batches of put operations."""
    from langgraph.store.base import PutOp

    batch = []
    for n, (namespace, text) in enumerate(items(users, count)):
        batch.append(PutOp(namespace, f"m{n}", {"text": text}))
        if len(batch) == 5_000:
            store.batch(batch)
            batch.clear()
    if batch:
        store.batch(batch)


def measure(store: Any, budget_s: float, reps: int, users: int = USERS) -> list[float]:
    """Seconds per search."""
    samples: list[float] = []
    stream = queries(users)
    t0 = time.perf_counter()
    while len(samples) < reps or time.perf_counter() - t0 < budget_s:
        namespace, query = next(stream)
        start = time.perf_counter()
        store.search(namespace, query=query, limit=5)
        samples.append(time.perf_counter() - start)
        if len(samples) >= 20_000:
            break
    return samples


def main(quick: bool = False) -> list[Record]:
    """Emit one row per store."""
    from langgraph.store.memory import InMemoryStore
    from langgraph.store.sqlite import SqliteStore

    cfg = Settings.once() if quick else Settings.from_env()
    count = 2_000 if quick else ITEMS
    out: list[Record] = []
    for users, label in ((USERS, "1,000 users"), (1, "one namespace")):
        memory = InMemoryStore()
        fill(memory, count, users)
        samples = measure(memory, cfg.budget_s, 50 if quick else 500, users)
        rec = record("langgraph", "langgraph", "M100K", f"InMemoryStore.search, {label}", samples, unit="us/search")
        emit({**rec, "p95_ms": round(p95_ms(samples), 3)}, out)
        with tempfile.TemporaryDirectory() as tmp, SqliteStore.from_conn_string(str(Path(tmp) / "store.db")) as store:
            store.setup()
            fill(store, count, users)
            samples = measure(store, cfg.budget_s, 50 if quick else 500, users)
            rec = record("langgraph", "langgraph", "M100K", f"SqliteStore.search, {label}", samples, unit="us/search")
            emit({**rec, "p95_ms": round(p95_ms(samples), 3)}, out)
    note = "LangGraph search without an index lists the namespace; it does not rank"
    print(json.dumps({"note": note}), file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
