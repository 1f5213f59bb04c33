"""W7 — a big run read back (LangGraph): a 30,000-step thread on SqliteSaver, then its history.

The peer of pyfootprint's W7 ``store.get`` and ``replay`` rows, on the same shape: produce →
work → check ⟲ produce (a conditional edge on check) until ``N / 3`` passes are done; produce
appends the pass number to a list that grows for the whole run (an ``operator.add`` reducer)
and writes a 1 KB string; work and check each write a 1 KB string. One node is one super-step
and one checkpoint, so 30,000 steps are 30,000 checkpoints (plus the input's and the start's).
SqliteSaver stores each checkpoint whole, the growing list included.

Rows, each in µs per step; the reads in a fresh process doing only that
(``python -m bench.peers.langgraph.w7_big_run --op NAME DB``), with its peak RSS (``VmHWM``):

- ``run, SqliteSaver (file)``: the thread written (this process, default durability);
- ``get_state_history, SqliteSaver (file)``: every snapshot of the thread, iterated to the end
  (LangGraph lists, and so deserialises, every checkpoint before yielding the first);
- ``get_state, SqliteSaver (file)``: the last snapshot only.

usage: ``python -m bench.peers.langgraph.w7_big_run [--quick]`` (``--quick``: 300 steps).
"""

from __future__ import annotations

import json
import operator
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

from bench.harness import Record, emit, record

N = 30_000
STAGES = 3
PAD = "x" * 1000
THREAD = "w7"


class State(TypedDict, total=False):
    """The run's state: the pass count, the growing list and three 1 KB strings."""

    passes: int
    items: Annotated[list[int], operator.add]
    blob: str
    note: str
    last: str


def produce(s: State) -> dict[str, Any]:
    """Append the pass number to the growing list; write this step's 1 KB string."""
    n = s.get("passes", 0) + 1
    return {"passes": n, "items": [n], "blob": f"{n:08d}{PAD}"}


def work(s: State) -> dict[str, Any]:
    """Read the list's length; write a 1 KB string."""
    return {"note": f"{len(s['items']):08d}{PAD}"}


def check(s: State) -> dict[str, Any]:
    """Write a 1 KB string (the edge after it decides whether to loop)."""
    return {"last": f"{s['passes']:08d}{PAD}"}


def build(passes: int, checkpointer: Any) -> Any:
    """produce → work → check ⟲ produce, ``passes`` times."""
    g = StateGraph(State)
    g.add_node("produce", produce)
    g.add_node("work", work)
    g.add_node("check", check)
    g.add_edge(START, "produce")
    g.add_edge("produce", "work")
    g.add_edge("work", "check")
    g.add_conditional_edges("check", lambda s: "produce" if s["passes"] < passes else END, ["produce", END])
    return g.compile(checkpointer=checkpointer)


def config(steps: int) -> Any:
    """The thread's invoke config."""
    return {"recursion_limit": steps + 10, "configurable": {"thread_id": THREAD}}


def _saver(db: str) -> Any:
    return SqliteSaver(sqlite3.connect(db, check_same_thread=False))


def _high_water_mark() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def _operation(name: str, db: str, steps: int) -> dict[str, Any]:
    """One read of the thread in this (fresh) process: wall and CPU seconds, what it saw."""
    app = build(steps // STAGES, _saver(db))
    cfg = config(steps)
    start, cpu = time.perf_counter(), time.process_time()
    if name == "get_state_history":
        history = app.get_state_history(cfg)
        values = next(history).values  # newest first: the final state, to check it
        seen = 1 + sum(1 for _ in history)
    elif name == "get_state":
        seen, values = 1, app.get_state(cfg).values
    else:
        raise SystemExit(f"unknown operation {name!r}")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if values["passes"] != steps // STAGES or len(values["items"]) != steps // STAGES:
        raise RuntimeError(f"W7 wrong state read back: {values['passes']} passes")
    return {"seconds": seconds, "cpu_seconds": cpu, "snapshots": seen, "peak_rss": _high_water_mark()}


def _child(name: str, db: str, steps: int) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.peers.langgraph.w7_big_run", "--op", name, db, str(steps)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[3],
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(steps: int, out: list[Record], tag: str = "") -> None:
    """Write the thread, then read it back in fresh processes; one row each."""
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "w7.sqlite")
        saver = _saver(db)
        app = build(steps // STAGES, saver)
        start, cpu = time.perf_counter(), time.process_time()
        final = app.invoke({}, config(steps))
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        if final["passes"] != steps // STAGES or len(final["items"]) != steps // STAGES:
            raise RuntimeError("W7 wrong result")
        saver.conn.close()
        size = sum(os.path.getsize(db + s) for s in ("", "-wal") if os.path.exists(db + s))
        emit(
            record(
                "langgraph",
                "langgraph",
                "W7",
                f"run, SqliteSaver (file){tag}",
                [seconds],
                per=steps,
                unit="us/step",
                steps=steps,
                seconds=round(seconds, 3),
                cpu_seconds=round(cpu, 3),
                peak_rss=_high_water_mark(),
                sqlite_file_bytes=size,
            ),
            out,
        )
        for name in ("get_state_history", "get_state"):
            got = _child(name, db, steps)
            emit(
                record(
                    "langgraph",
                    "langgraph",
                    "W7",
                    f"{name}, SqliteSaver (file){tag}",
                    [got["seconds"]],
                    per=steps,
                    unit="us/step",
                    steps=steps,
                    seconds=round(got["seconds"], 3),
                    cpu_seconds=round(got["cpu_seconds"], 3),
                    snapshots=got["snapshots"],
                    peak_rss=got["peak_rss"],
                    sqlite_file_bytes=size,
                ),
                out,
            )


def main(quick: bool = False) -> list[Record]:
    """Emit the W7 LangGraph rows (``quick``: 300 steps, to prove it runs)."""
    out: list[Record] = []
    measure(300 if quick else N, out, " (300 steps)" if quick else "")
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--op"]:
        print(json.dumps(_operation(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        main(quick="--quick" in sys.argv[1:])
