"""C1000 — one 1,000-turn conversation on SQLite: µs per turn at turns 1, 10, 100 and 1,000.

usage: ``.venv/bin/python -m bench.pyfootprint.conversation_long [TURNS]`` (default 1,000)

The conversation of C50 (``bench.pyfootprint.conversation``: a tool call and an answer a
turn, four messages, the whole history sent, each turn checked against what the model was
sent), run for 1,000 turns on one fresh SQLite store, every turn timed end to end (wall time,
and this process's CPU time: the machine's other load does not count). Rows:
the median of the ``WINDOW`` turns up to each measured turn (after a short warm-up
conversation on another file), and the database's bytes after the last turn — the same
rows as LangGraph's ``bench.peers.langgraph.conversation``.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Record, emit
from bench.pyfootprint.common import row
from bench.pyfootprint.conversation import PER_TURN, build
from flowchart.store import SqliteStore

TURNS = 1000
MEASURED = (1, 10, 100, 1000)
WINDOW = 5
WARMUP = 5  # turns of the warm-up conversation run before the measured one


def conversation(turns: int) -> tuple[list[float], list[float], int]:
    """One conversation of ``turns`` turns on a fresh store: seconds per turn, and the file's bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.db"
        store = SqliteStore(path)
        agent, provider = build(store, None)
        times: list[float] = []
        cpu: list[float] = []
        for turn in range(1, turns + 1):
            start, started = time.perf_counter(), time.process_time()
            answer = agent.run(f"question {turn}", conversation="c")
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - started)
            if answer != f"found result for question {turn}" or provider.sent[-1] != (turn - 1) * PER_TURN + 1:
                raise RuntimeError(f"C1000 turn {turn}: wrong answer {answer!r} or history {provider.sent[-1]}")
        store.close()
        size = sum(os.path.getsize(f"{path}{s}") for s in ("", "-wal", "-shm") if os.path.exists(f"{path}{s}"))
    return times, cpu, size


def main(turns: int = TURNS, quick: bool = False) -> list[Record]:
    """Emit one row per measured turn, and the database's size (``quick``: 12 turns, for tests)."""
    turns = 12 if quick else turns
    out: list[Record] = []
    conversation(WARMUP)  # a short conversation first, on its own file: turn 1 is then a warm turn
    times, cpu, size = conversation(turns)
    for turn in (t for t in MEASURED if t <= turns):
        around = slice(max(turn - WINDOW, 0), turn)
        row(out, "C1000", f"whole history: turn {turn}", times[around], unit="us/turn", turn=turn)
        row(out, "C1000", f"whole history, CPU time: turn {turn}", cpu[around], unit="us/turn", turn=turn)
    emit({"peer": "pyfootprint", "workload": "C1000", "variant": f"database after {turns} turns", "bytes": size}, out)
    return out


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else TURNS)
