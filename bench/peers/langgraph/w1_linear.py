"""W1 — linear chain of 200 nodes; every node does ``counter = counter + 1`` (LangGraph)."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from bench.harness import Record, Settings, emit, record

N = 200
CONFIG: Any = {"recursion_limit": N + 10}
BLOB = [{"role": "tool", "id": f"c{i}", "content": "x" * 20} for i in range(100)]


class State(TypedDict, total=False):
    """Run state: the counter, plus the untouched list of the extra row."""

    counter: int
    blob: list[dict[str, str]]


def stage(s: State) -> dict[str, int]:
    """One read and one write of ``counter``."""
    return {"counter": s.get("counter", 0) + 1}


def first_with_blob(s: State) -> dict[str, Any]:
    """``s0`` of the extra row: also writes the 100-item list nobody reads again."""
    return {"counter": 1, "blob": BLOB}


def build(first: Any = stage) -> Any:
    """Build and compile the 200-node chain."""
    g = StateGraph(State)
    g.add_node("s0", first)
    for i in range(1, N):
        g.add_node(f"s{i}", stage)
    g.add_edge(START, "s0")
    for i in range(N - 1):
        g.add_edge(f"s{i}", f"s{i + 1}")
    g.add_edge(f"s{N - 1}", END)
    return g.compile()


def run_once(app: Any) -> None:
    """One run from ``s0`` to the end, checked."""
    if app.invoke({}, CONFIG)["counter"] != N:
        raise RuntimeError("W1 wrong result")


def main(quick: bool = False) -> list[Record]:
    """Emit the W1 rows: run, build chart, run with an untouched 100-item list."""
    cfg = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    app = build()
    rows = [
        ("run", cfg.bench(lambda: run_once(app)), N, "us/stage"),
        ("build chart (200 stages)", cfg.bench(build), 1, "us/build"),
    ]
    for variant, samples, per, unit in rows:
        emit(record("langgraph", "langgraph", "W1", variant, samples, per=per, unit=unit), out)
    blob_app = build(first_with_blob)
    samples = cfg.bench(lambda: run_once(blob_app))
    variant = "run, state holds untouched 100-item list"
    emit(record("langgraph", "langgraph", "W1", variant, samples, per=N, unit="us/stage"), out)
    return out


if __name__ == "__main__":
    main()
