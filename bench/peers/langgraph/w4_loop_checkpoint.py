"""W4 — the W2 loop with a checkpoint saved after every super-step (LangGraph).

usage: ``python -m bench.peers.langgraph.w4_loop_checkpoint [memory|sqlite|sqlite-sync]``
(default: all three, each in its own process via run.sh so peak RSS is per saver).
Memory figures come from the first run, before the timing loop: serialized payload bytes held
by the saver for that thread, checkpoint count, RSS, and the Python heap held afterwards
(tracemalloc, on a second run). ``memory``/``sqlite`` use the default durability ("async");
``sqlite-sync`` passes ``durability="sync"``.
"""

from __future__ import annotations

import gc
import os
import sqlite3
import sys
import tempfile
import tracemalloc
import uuid
from pathlib import Path
from typing import Any

from langgraph.checkpoint.memory import MemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver

from bench.harness import Record, Settings, emit, peak_rss_bytes, record, rss_bytes
from bench.peers.langgraph.w2_loop import ITERS, build, run_loop

SQLITE_PATH = os.environ.get("W4_SQLITE", os.path.join(tempfile.gettempdir(), "bench-lg-w4.sqlite"))
LABEL = {
    "memory": "MemorySaver",
    "sqlite": "SqliteSaver (file)",
    "sqlite-sync": "SqliteSaver (file), durability=sync",
}
PAYLOAD_SQL = (
    "SELECT (SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
    " WHERE thread_id = ?) + (SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes"
    " WHERE thread_id = ?)"
)


def nbytes(x: Any) -> int:
    """Total length of the serialized payloads inside a saver's nested storage."""
    if isinstance(x, bytes | bytearray):
        return len(x)
    if isinstance(x, dict):
        return sum(nbytes(v) for v in x.values())
    if isinstance(x, tuple | list):
        return sum(nbytes(v) for v in x)
    return 0


def make_saver(kind: str) -> Any:
    """A MemorySaver, or a SqliteSaver on a fresh file."""
    if kind == "memory":
        return MemorySaver()
    for suffix in ("", "-wal", "-shm"):
        Path(SQLITE_PATH + suffix).unlink(missing_ok=True)
    return SqliteSaver(sqlite3.connect(SQLITE_PATH, check_same_thread=False))


def checkpoint_bytes(saver: Any, thread: str) -> int:
    """Bytes of checkpoint, metadata, blob and write payloads the saver holds for ``thread``."""
    if isinstance(saver, MemorySaver):
        return (
            nbytes(saver.storage.get(thread, {}))
            + nbytes({k: v for k, v in saver.writes.items() if k[0] == thread})
            + nbytes({k: v for k, v in saver.blobs.items() if k[0] == thread})
        )
    return int(saver.conn.execute(PAYLOAD_SQL, (thread, thread)).fetchone()[0])


def cfg(thread: str) -> Any:
    """Invoke config for one thread."""
    return {"recursion_limit": ITERS + 10, "configurable": {"thread_id": thread}}


def measure(kind: str, settings: Settings, out: list[Record]) -> None:
    """Memory figures on the first run, then the timing loop; emits one row."""
    saver = make_saver(kind)
    app = build(checkpointer=saver)
    kw = {"durability": "sync"} if kind == "sqlite-sync" else {}
    gc.collect()
    rss0 = rss_bytes()
    run_loop(app, cfg("mem-1"), **kw)
    mem: dict[str, int] = {
        "checkpoint_bytes": checkpoint_bytes(saver, "mem-1"),
        "checkpoints": sum(1 for _ in saver.list({"configurable": {"thread_id": "mem-1"}})),
        "rss_before_run_bytes": rss0,
        "peak_rss_bytes": peak_rss_bytes(),
    }
    if kind.startswith("sqlite"):
        mem["sqlite_file_bytes"] = sum(
            os.path.getsize(SQLITE_PATH + s) for s in ("", "-wal") if os.path.exists(SQLITE_PATH + s)
        )
    saver.delete_thread("mem-1")
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    run_loop(app, cfg("mem-2"), **kw)
    gc.collect()
    mem["heap_held_bytes"] = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    saver.delete_thread("mem-2")

    thread = {"id": ""}

    def run_once() -> None:
        thread["id"] = uuid.uuid4().hex
        run_loop(app, cfg(thread["id"]), **kw)

    samples = settings.bench(run_once, warmup=2, min_reps=8, after=lambda: saver.delete_thread(thread["id"]))
    rec = record("langgraph", "langgraph", "W4", LABEL[kind], samples, per=ITERS, unit="us/iter", **mem)
    emit(rec, out)
    if kind.startswith("sqlite"):
        saver.conn.close()
        for suffix in ("", "-wal", "-shm"):
            Path(SQLITE_PATH + suffix).unlink(missing_ok=True)


def main(quick: bool = False, kinds: tuple[str, ...] = tuple(LABEL)) -> list[Record]:
    """Emit one W4 row per saver kind."""
    settings = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    for kind in kinds:
        measure(kind, settings, out)
    return out


if __name__ == "__main__":
    main(kinds=tuple(sys.argv[1:]) or tuple(LABEL))
