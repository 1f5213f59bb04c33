"""W8 — fan-out over data: Seed writes 1,000 items → a map runs one child per item → Join.

Each child returns ``item * 2``; the map gathers the results into ``doubled`` in item order
and Join sums them. Reported per item (µs/item). Rows: sync ``chart.run`` with a sync child
(children one after another), and ``await chart.arun`` with an ``async def`` child
(concurrency 64). LangGraph's peer is ``Send`` to one node per item (bench/peers/langgraph).
"""

from __future__ import annotations

import asyncio
from typing import Any

from bench.harness import Record
from bench.pyfootprint.common import row, settings
from flowchart import flow_chart

N = 1000
TOTAL = 2 * N * (N - 1) // 2


def seed(scope: Any) -> None:
    """``items ← [0, 1, …, N-1]``."""
    scope.items = list(range(N))


def join(scope: Any) -> None:
    """``total ← Σ doubled``."""
    scope.total = sum(scope.doubled)


def child(scope: Any, ctx: Any) -> int:
    """One item: its double."""
    return int(ctx.item) * 2


async def achild(scope: Any, ctx: Any) -> int:
    """One item, async: its double."""
    return int(ctx.item) * 2


def build(use_async: bool = False) -> Any:
    """Seed → map over items (into ``doubled``) → Join."""
    return (
        flow_chart("Seed", seed, "seed")
        .add_map(
            "Double", achild if use_async else child, "double", items=lambda s: s.items, into="doubled", concurrency=64
        )
        .add_function("Join", join, "join")
        .build()
    )


def check(result: Any) -> None:
    """``total == Σ 2i`` and one commit per child plus seed, map and join."""
    if result.state["total"] != TOTAL or len(result.commit_log) != N + 3:
        raise RuntimeError("W8 wrong result")


def main(quick: bool = False) -> list[Record]:
    """Emit the W8 rows: sync run, async arun."""
    cfg = settings(quick)
    out: list[Record] = []
    chart = build()
    samples = cfg.bench(lambda: check(chart.run()))
    row(out, "W8", f"map over {N} items (sync run)", samples, per=N, unit="us/item")
    achart = build(use_async=True)

    async def run_async() -> None:
        check(await achart.arun())

    samples = asyncio.run(cfg.abench(run_async))
    row(out, "W8", f"map over {N} async items, concurrency 64 (arun)", samples, per=N, unit="us/item")
    return out


if __name__ == "__main__":
    main()
