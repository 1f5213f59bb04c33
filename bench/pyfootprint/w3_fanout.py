"""W3 — fan-out: Seed → Select (selector picks all 8 branches) → b0…b7 in parallel → Join.

Branch ``b<i>`` writes ``b<i> ← i``; parallel children write under ``runs/<branch id>/``, so
Join reads ``scope.runs["b3"]["b3"]``. Rows: sync ``chart.run`` with sync branches, and
``await chart.arun`` with ``async def`` branches (LangGraph's two modes).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bench.harness import Record
from bench.pyfootprint.common import row, settings
from flowchart import flow_chart

K = 8
IDS = [f"b{i}" for i in range(K)]
TOTAL = K * (K - 1) // 2


def seed(scope: Any) -> None:
    """``counter ← 0``."""
    scope.counter = 0


def select_all(scope: Any) -> list[str]:
    """The selector: every branch."""
    return IDS


def join(scope: Any) -> None:
    """``total ← Σ b<i>``, read from where the engine keeps branch outputs."""
    runs = scope.runs
    scope.total = sum(runs[b][b] for b in IDS)


def branch(i: int, use_async: bool) -> Callable[[Any], Any]:
    """Branch ``b<i>``: writes its own key."""
    key = f"b{i}"
    if use_async:

        async def write_async(scope: Any) -> None:
            scope[key] = i

        return write_async

    def write(scope: Any) -> None:
        scope[key] = i

    return write


def build(use_async: bool = False) -> Any:
    """Seed → Select → 8 branches → Join."""
    b = flow_chart("Seed", seed, "seed").add_selector_function("Select", select_all, "select")
    for i, bid in enumerate(IDS):
        b = b.add_function_branch(bid, f"Branch{i}", branch(i, use_async))
    return b.end().add_function("Join", join, "join").build()


def check(result: Any) -> None:
    """``total == 28``."""
    if result.state["total"] != TOTAL:
        raise RuntimeError("W3 wrong result")


def main(quick: bool = False) -> list[Record]:
    """Emit the W3 rows: sync run, async arun."""
    cfg = settings(quick)
    out: list[Record] = []
    chart = build()
    samples = cfg.bench(lambda: check(chart.run()))
    row(out, "W3", "selector → 8 branches → join", samples, unit="us/run")
    achart = build(use_async=True)

    async def run_async() -> None:
        check(await achart.arun())

    samples = asyncio.run(cfg.abench(run_async))
    row(out, "W3", "selector → 8 async branches → join (arun)", samples, unit="us/run")
    return out


if __name__ == "__main__":
    main()
