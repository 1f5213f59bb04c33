"""W3 — fan-out: seed → Send to 8 branch nodes (each writes b<i> = i) → join sums them (LangGraph).

Measured twice: sync nodes with ``invoke()`` (parallel sync tasks run on a thread pool) and
async nodes with ``ainvoke()`` (parallel tasks are asyncio tasks on one loop).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from bench.harness import Record, Settings, emit, record

K = 8
IDS = [f"b{i}" for i in range(K)]
TOTAL = K * (K - 1) // 2
State = TypedDict(  # type: ignore[misc]
    "State", {"counter": int, "total": int, **{b: int for b in IDS}}, total=False
)


def branch(i: int, use_async: bool) -> Callable[[Any], Any]:
    """Branch ``b<i>``: writes its own key."""
    if use_async:

        async def f(s: Any) -> dict[str, int]:
            return {f"b{i}": i}

        return f
    return lambda s: {f"b{i}": i}


def build(use_async: bool) -> Any:
    """Seed → Send ×8 → join (a barrier on all 8 branches)."""
    g = StateGraph(State)
    g.add_node("seed", lambda s: {"counter": 0})
    for i, b in enumerate(IDS):
        g.add_node(b, branch(i, use_async))
    g.add_node("join", lambda s: {"total": sum(s[b] for b in IDS)})
    g.add_edge(START, "seed")
    g.add_conditional_edges("seed", lambda s: [Send(b, s) for b in IDS], IDS)
    g.add_edge(IDS, "join")
    g.add_edge("join", END)
    return g.compile()


def main(quick: bool = False) -> list[Record]:
    """Emit the W3 rows: sync invoke and async ainvoke."""
    cfg = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    app = build(use_async=False)

    def run_sync() -> None:
        if app.invoke({})["total"] != TOTAL:
            raise RuntimeError("W3 wrong result")

    variant = "Send → 8 branches → join (sync invoke)"
    emit(record("langgraph", "langgraph", "W3", variant, cfg.bench(run_sync)), out)

    aapp = build(use_async=True)

    async def run_async() -> None:
        if (await aapp.ainvoke({}))["total"] != TOTAL:
            raise RuntimeError("W3 wrong result")

    variant = "Send → 8 branches → join (async ainvoke)"
    emit(record("langgraph", "langgraph", "W3", variant, asyncio.run(cfg.abench(run_async))), out)
    return out


if __name__ == "__main__":
    main()
