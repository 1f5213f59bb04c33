"""C1000 — one long conversation on SQLite, turn by turn (LangGraph + ``SqliteSaver``).

usage: ``python -m bench.peers.langgraph.conversation [TURNS]`` (default 1,000)

The same conversation as ``bench.pyfootprint.conversation``: each turn is one
``graph.invoke({"messages": [user message]}, thread)`` on a checkpointed thread — the model
asks ``lookup`` once, the tool answers, the model answers with the result (four messages a
turn, plain dict messages appended with ``operator.add``, the whole history sent). Every
turn is timed end to end (the saver's load, the run, the saver's writes); rows are µs per
turn at turns 1, 10, 100 and 1,000 (the median of the turns around each, ``WINDOW``; a short
warm-up conversation runs first), and the database's bytes after the last turn.
"""

from __future__ import annotations

import operator
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from bench.harness import Record, emit, record

TURNS = 1000
MEASURED = (1, 10, 100, 1000)
WINDOW = 5  # turns measured around each measured turn (the turn itself and the ones before it)
WARMUP = 5  # turns of the warm-up conversation run before the measured one


class State(TypedDict, total=False):
    """Plain dict messages, appended."""

    messages: Annotated[list[dict[str, Any]], operator.add]


def build(saver: Any) -> Any:
    """model → (tools → model) → end, checkpointed by ``saver``."""

    def model(s: State) -> dict[str, Any]:
        messages = s["messages"]
        last = messages[-1]
        if last["role"] == "tool":
            return {"messages": [{"role": "assistant", "content": f"found {last['content']}"}]}
        call = {"id": f"t{len(messages)}", "name": "lookup", "args": {"q": last["content"]}}
        return {"messages": [{"role": "assistant", "content": "", "tool_calls": [call]}]}

    def tools(s: State) -> dict[str, Any]:
        call = s["messages"][-1]["tool_calls"][0]
        text = f"result for {call['args']['q']}"
        return {"messages": [{"role": "tool", "content": text, "tool_call_id": call["id"], "tool_name": "lookup"}]}

    g = StateGraph(State)
    g.add_node("model", model)
    g.add_node("tools", tools)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", lambda s: "tools" if s["messages"][-1].get("tool_calls") else END, ["tools", END])
    g.add_edge("tools", "model")
    return g.compile(checkpointer=saver)


def db_bytes(path: Path) -> int:
    """The database's size on disk (with its journal files)."""
    return sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal", "-shm") if os.path.exists(f"{path}{s}"))


def conversation(turns: int) -> tuple[list[float], list[float], int]:
    """One conversation of ``turns`` turns on a fresh file: seconds per turn, and the file's bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lg.sqlite"
        conn = sqlite3.connect(path, check_same_thread=False)
        graph = build(SqliteSaver(conn))
        thread = {"configurable": {"thread_id": "c"}}
        times: list[float] = []
        cpu: list[float] = []
        for turn in range(1, turns + 1):
            start, started = time.perf_counter(), time.process_time()
            out = graph.invoke({"messages": [{"role": "user", "content": f"question {turn}"}]}, thread)
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - started)
            if (
                out["messages"][-1]["content"] != f"found result for question {turn}"
                or len(out["messages"]) != 4 * turn
            ):
                raise RuntimeError(f"C1000 turn {turn}: wrong answer or history")
        conn.commit()
        size = db_bytes(path)
        conn.close()
    return times, cpu, size


def main(turns: int = TURNS) -> list[Record]:
    """Emit one row per measured turn, and the database's size."""
    out: list[Record] = []
    conversation(WARMUP)  # a short conversation first, on its own file: turn 1 is then a warm turn
    times, cpu, size = conversation(turns)
    for turn in (t for t in MEASURED if t <= turns):
        around = slice(max(turn - WINDOW, 0), turn)
        for label, samples in (("whole history", times), ("whole history, CPU time", cpu)):
            variant = f"{label}: turn {turn}"
            emit(record("langgraph", "langgraph", "C1000", variant, samples[around], unit="us/turn"), out)
    emit({"peer": "langgraph", "workload": "C1000", "variant": f"database after {turns} turns", "bytes": size}, out)
    return out


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else TURNS)
