"""REPLAY — LangGraph's fork of a 50-node pipeline after one node's result is patched.

The pipeline: node 0 writes ``r0`` (a tool result); node i (1..49) calls the model with
``r[i // 2]`` and writes ``r{i}`` — each node reads one earlier result (a binary tree of
dependencies). Run once with a ``MemorySaver``; then fork from the checkpoint after node 10
with ``r10`` rewritten (``update_state(..., as_node="n10")``) and run on. LangGraph re-executes
every node after the fork point ("re-executes nodes — it doesn't just read from cache"):
this row counts its model calls (``model_calls``) beside pyfootprint's reuse-fork of the same
pipeline (``bench.pyfootprint.replay``). Run with the peers venv:
``python -m bench.peers.langgraph.replay_fork``.
"""

from __future__ import annotations

import time
from typing import Any, TypedDict

from langgraph.checkpoint.memory import MemorySaver
from langgraph.graph import END, START, StateGraph

from bench.harness import emit

NODES = 50
PATCHED = 10
CALLS = {"n": 0}


def model(text: str, i: int) -> str:
    """The counting model: a deterministic answer."""
    CALLS["n"] += 1
    return f"m{i}<{text[:12]}>"


def build() -> Any:
    """n0 → n1 → … → n49, each node one model call on an earlier node's result."""
    state = TypedDict("State", {f"r{i}": str for i in range(NODES)}, total=False)  # type: ignore[misc]
    g: StateGraph = StateGraph(state)

    def node(i: int) -> Any:
        if i == 0:
            return lambda s: {"r0": "root result"}
        return lambda s: {f"r{i}": model(s[f"r{i // 2}"], i)}

    for i in range(NODES):
        g.add_node(f"n{i}", node(i))
    g.add_edge(START, "n0")
    for i in range(NODES - 1):
        g.add_edge(f"n{i}", f"n{i + 1}")
    g.add_edge(f"n{NODES - 1}", END)
    return g.compile(checkpointer=MemorySaver())


def main() -> None:
    """Run, fork after node 10 with its result rewritten, count the fork's model calls."""
    graph = build()
    config = {"configurable": {"thread_id": "t"}}
    graph.invoke({}, config)
    parent_calls = CALLS["n"]
    after = next(s for s in graph.get_state_history(config) if s.next == (f"n{PATCHED + 1}",))
    CALLS["n"] = 0
    start = time.perf_counter()
    forked = graph.update_state(after.config, {f"r{PATCHED}": "rewritten"}, as_node=f"n{PATCHED}")
    graph.invoke(None, forked)
    took = time.perf_counter() - start
    emit(
        {
            "peer": "langgraph",
            "workload": "REPLAY",
            "variant": f"fork of a {NODES}-node pipeline after node {PATCHED}, its result patched",
            "model_calls": CALLS["n"],
            "parent_model_calls": parent_calls,
            "run_median_ms": took * 1e3,
        }
    )


if __name__ == "__main__":
    main()
