"""W8 — fan-out over data: seed writes 1,000 items → ``Send`` one ``double`` task per item →
join sums the results (LangGraph). Results gather through an ``operator.add`` reducer, as
LangGraph's map-reduce guide does. Reported per item (µs/item), sync ``invoke`` and async
``ainvoke``.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from bench.harness import Record, Settings, emit, record

N = 1000
TOTAL = 2 * N * (N - 1) // 2


class State(TypedDict, total=False):
    items: list[int]
    doubled: Annotated[list[int], operator.add]
    total: int


class Item(TypedDict):
    item: int


def build(use_async: bool) -> Any:
    """seed → Send ×N → double → join."""
    g = StateGraph(State)
    g.add_node("seed", lambda s: {"items": list(range(N))})
    if use_async:

        async def double(s: Item) -> dict[str, list[int]]:
            return {"doubled": [s["item"] * 2]}

        g.add_node("double", double)
    else:
        g.add_node("double", lambda s: {"doubled": [s["item"] * 2]})
    g.add_node("join", lambda s: {"total": sum(s["doubled"])})
    g.add_edge(START, "seed")
    g.add_conditional_edges("seed", lambda s: [Send("double", {"item": i}) for i in s["items"]], ["double"])
    g.add_edge("double", "join")
    g.add_edge("join", END)
    return g.compile()


def main(quick: bool = False) -> list[Record]:
    """Emit the W8 rows: sync invoke and async ainvoke."""
    cfg = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    app = build(use_async=False)

    def run_sync() -> None:
        if app.invoke({}, {"recursion_limit": 10})["total"] != TOTAL:
            raise RuntimeError("W8 wrong result")

    emit(
        record(
            "langgraph",
            "langgraph",
            "W8",
            f"Send over {N} items (sync invoke)",
            cfg.bench(run_sync),
            per=N,
            unit="us/item",
        ),
        out,
    )
    aapp = build(use_async=True)

    async def run_async() -> None:
        if (await aapp.ainvoke({}, {"recursion_limit": 10}))["total"] != TOTAL:
            raise RuntimeError("W8 wrong result")

    emit(
        record(
            "langgraph",
            "langgraph",
            "W8",
            f"Send over {N} async items (ainvoke)",
            asyncio.run(cfg.abench(run_async)),
            per=N,
            unit="us/item",
        ),
        out,
    )
    return out


if __name__ == "__main__":
    main()
