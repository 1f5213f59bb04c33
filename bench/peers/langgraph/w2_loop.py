"""W2 — loop: seed → work ⟲ (conditional edge: counter < 1000 → work, else → done) (LangGraph).

LangGraph's idiomatic decider is a routing function on the edge (no extra super-step), so one
iteration is one ``work`` super-step whose outgoing edge runs the decision.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from bench.harness import Record, Settings, emit, record

ITERS = 1000
CONFIG: Any = {"recursion_limit": ITERS + 10}


class State(TypedDict, total=False):
    """Run state of the loop."""

    counter: int
    finished: bool


def check(s: State) -> str:
    """The decider: loop while ``counter < 1000``."""
    return "work" if s["counter"] < ITERS else "done"


def seed(s: State) -> dict[str, int]:
    """``counter ← 0``."""
    return {"counter": 0}


def work(s: State) -> dict[str, int]:
    """``counter ← counter + 1``."""
    return {"counter": s["counter"] + 1}


def done(s: State) -> dict[str, bool]:
    """``finished ← true``."""
    return {"finished": True}


def build(checkpointer: Any = None) -> Any:
    """The conditional-edge loop, optionally with a checkpointer (W4)."""
    g = StateGraph(State)
    g.add_node("seed", seed)
    g.add_node("work", work)
    g.add_node("done", done)
    g.add_edge(START, "seed")
    g.add_conditional_edges("seed", check, ["work", "done"])
    g.add_conditional_edges("work", check, ["work", "done"])
    g.add_edge("done", END)
    return g.compile(checkpointer=checkpointer)


def build_node_decider() -> Any:
    """Extra shape: the decider is its own node returning ``Command(goto=...)``: 2 super-steps."""
    g = StateGraph(State)
    g.add_node("seed", seed)
    g.add_node("check", lambda s: Command(goto=check(s)), destinations=("work", "done"))
    g.add_node("work", work)
    g.add_node("done", done)
    g.add_edge(START, "seed")
    g.add_edge("seed", "check")
    g.add_edge("work", "check")
    g.add_edge("done", END)
    return g.compile()


def run_loop(app: Any, config: Any = CONFIG, **invoke_kw: Any) -> None:
    """One run, checked."""
    out = app.invoke({}, config, **invoke_kw)
    if out["counter"] != ITERS or out.get("finished") is not True:
        raise RuntimeError("W2 wrong result")


def main(quick: bool = False) -> list[Record]:
    """Emit the W2 rows: conditional-edge loop, decider as its own node."""
    cfg = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    app = build()
    samples = cfg.bench(lambda: run_loop(app))
    rec = record(
        "langgraph",
        "langgraph",
        "W2",
        "conditional-edge loop",
        samples,
        per=ITERS,
        unit="us/iter",
        steps_per_iter=1,
    )
    emit(rec, out)
    app2 = build_node_decider()
    cfg2: Any = {"recursion_limit": 2 * ITERS + 10}
    samples = cfg.bench(lambda: run_loop(app2, cfg2))
    variant = "decider as its own node (Command goto)"
    emit(
        record(
            "langgraph",
            "langgraph",
            "W2",
            variant,
            samples,
            per=ITERS,
            unit="us/iter",
            steps_per_iter=2,
        ),
        out,
    )
    return out


if __name__ == "__main__":
    main()
