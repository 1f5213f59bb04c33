"""W4 — the W2 loop with persistence after every step (pyfootprint).

Rows:

- *commit log (always on)*: W2 as it is, since every stage appends a commit; memory figures
  come from the first run in this process: persisted bytes = UTF-8 JSON of
  ``[c.to_dict() for c in result.commit_log]``, commit count, RSS, and the heap a finished
  run holds (tracemalloc delta on a second run, result still referenced);
- *commit log + JSON dump*: the same, with the log serialized inside the timed region;
- *SQLite run store*: ``chart.run(store=SqliteStore(path))``, only when
  ``flowchart.store.SqliteStore`` exists (a skip note otherwise). The store lands a run
  segment (its whole commit log) in one atomic write at the segment's end, not one write
  per step as LangGraph's savers do: the row says so. The run's rows are deleted after each
  sample when the store offers a ``delete``; otherwise the file grows across samples;
- *SQLite run store, key=*: the same store opened with a key (every run sealed whole; a
  write checks the seal and extends it, a read checks the whole run).
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

from bench.harness import Record, Settings, peak_rss_bytes, rss_bytes
from bench.pyfootprint.common import row, settings, skip
from bench.pyfootprint.w2_loop import ITERS, build, run_loop

SQLITE_PATH = os.environ.get("W4_SQLITE", os.path.join(tempfile.gettempdir(), "bench-pf-w4.db"))
STORE_ROW = "SQLite run store (file), one write per run segment"
KEYED_ROW = "SQLite run store (file, key=: sealed), one write per run segment"
KEY = b"k" * 32


def log_bytes(result: Any) -> int:
    """UTF-8 bytes of the JSON commit log of ``result``."""
    return len(json.dumps([c.to_dict() for c in result.commit_log]).encode())


def heap_held(run: Any) -> int:
    """Live heap added by one call of ``run`` while its result is still referenced."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    kept = run()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    del kept
    return held


def in_memory(cfg: Settings, out: list[Record]) -> None:
    """The commit-log rows."""
    chart = build()
    gc.collect()
    rss0 = rss_bytes()
    first = run_loop(chart)
    mem = {
        "commit_log_bytes": log_bytes(first),
        "commit_entries": len(first.commit_log),
        "rss_before_run_bytes": rss0,
        "peak_rss_bytes": peak_rss_bytes(),
    }
    del first
    mem["heap_held_bytes"] = heap_held(lambda: run_loop(chart))
    samples = cfg.bench(lambda: run_loop(chart), warmup=2, min_reps=8)
    row(out, "W4", "commit log (always on)", samples, per=ITERS, unit="us/iter", **mem)
    samples = cfg.bench(lambda: log_bytes(run_loop(chart)), warmup=2, min_reps=8)
    row(out, "W4", "commit log + JSON dump of the log", samples, per=ITERS, unit="us/iter")


def drop_files() -> None:
    """Remove the store file and its journal files."""
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(SQLITE_PATH + suffix).unlink(missing_ok=True)


def sqlite_store(cfg: Settings, out: list[Record], key: bytes | None = None) -> None:
    """The durable-store row (``key``: the sealed store's), or a skip note when there is no store yet."""
    try:
        from flowchart.store import SqliteStore
    except ImportError as exc:
        skip(out, "W4", STORE_ROW, f"flowchart.store.SqliteStore is not importable ({exc})")
        return
    drop_files()
    store = SqliteStore(SQLITE_PATH) if key is None else SqliteStore(SQLITE_PATH, key=key)
    chart = build()
    gc.collect()
    rss0 = rss_bytes()
    first = run_loop(chart, store=store)
    stored = store.get(first.run_id)
    mem = {
        "commit_log_bytes": log_bytes(first),
        "commit_entries": len(stored.commit_log) if stored is not None else 0,
        "sqlite_file_bytes": sum(
            os.path.getsize(SQLITE_PATH + s) for s in ("", "-wal") if os.path.exists(SQLITE_PATH + s)
        ),
        "rss_before_run_bytes": rss0,
        "peak_rss_bytes": peak_rss_bytes(),
    }
    del first
    mem["heap_held_bytes"] = heap_held(lambda: run_loop(chart, store=store))
    delete = getattr(store, "delete", None)
    last: dict[str, Any] = {"run_id": None}

    def run_once() -> None:
        last["run_id"] = run_loop(chart, store=store).run_id

    def after() -> None:
        if delete is not None:
            delete(last["run_id"])

    samples = cfg.bench(run_once, warmup=2, min_reps=8, after=after)
    extra = {} if delete is not None else {"note": "store has no delete(): it grows across samples"}
    row(out, "W4", STORE_ROW if key is None else KEYED_ROW, samples, per=ITERS, unit="us/iter", **mem, **extra)
    close = getattr(store, "close", None)
    if close is not None:
        close()
    drop_files()


def main(quick: bool = False) -> list[Record]:
    """Emit the W4 rows."""
    cfg = settings(quick)
    out: list[Record] = []
    in_memory(cfg, out)
    sqlite_store(cfg, out)
    sqlite_store(cfg, out, key=KEY)
    return out


if __name__ == "__main__":
    main()
