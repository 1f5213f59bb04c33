"""W5 — pause/resume round trip: seed → approve (interrupt) → finish (LangGraph).

Variant "JSON checkpoint": graph A (MemorySaver A) runs until the interrupt; the latest checkpoint
tuple (checkpoint + metadata + pending writes, each serialized by the saver's own serde, base64
inside one JSON document) is exported as a JSON string, imported into MemorySaver B, and graph B
(compiled separately, bound to B) resumes with ``Command(resume=...)``. Each round trip uses a
new thread. Variant "shared SQLite file": A and B have separate SqliteSaver connections to one
file; B resumes the thread A paused (size = payload bytes stored for the thread at the pause).
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import tempfile
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.memory import MemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from bench.harness import Record, Settings, emit, record
from bench.peers.langgraph.w4_loop_checkpoint import PAYLOAD_SQL

SQLITE_PATH = os.environ.get("W5_SQLITE", os.path.join(tempfile.gettempdir(), "bench-lg-w5.sqlite"))


class State(TypedDict, total=False):
    """Run state of the approval chart."""

    counter: int
    asked: bool
    approved: bool
    done: bool


def approve(s: State) -> dict[str, bool]:
    """Pauses on the first pass; on resume the node re-runs and gets the answer."""
    answer = interrupt({"question": "approve?"})
    return {"asked": True, "approved": answer["approved"]}


def build(saver: Any) -> Any:
    """seed → approve → finish, bound to ``saver``."""
    g = StateGraph(State)
    g.add_node("seed", lambda s: {"counter": 1})
    g.add_node("approve", approve)
    g.add_node("finish", lambda s: {"done": s.get("approved") is True})
    g.add_edge(START, "seed")
    g.add_edge("seed", "approve")
    g.add_edge("approve", "finish")
    g.add_edge("finish", END)
    return g.compile(checkpointer=saver)


def cfg(thread: str) -> Any:
    """Invoke config for one thread."""
    return {"configurable": {"thread_id": thread}}


def export_json(saver: Any, thread: str) -> str:
    """The latest checkpoint tuple of ``thread`` as one JSON string."""
    tup = saver.get_tuple(cfg(thread))

    def pack(v: Any) -> list[str]:
        kind, data = saver.serde.dumps_typed(v)
        return [kind, base64.b64encode(data).decode("ascii")]

    return json.dumps(
        {
            "checkpoint": pack(tup.checkpoint),
            "metadata": pack(tup.metadata),
            "pending_writes": [[t, ch, pack(v)] for t, ch, v in tup.pending_writes],
        }
    )


def import_json(saver: Any, thread: str, text: str) -> None:
    """Put a checkpoint tuple exported by :func:`export_json` into ``saver``."""
    doc = json.loads(text)

    def unpack(p: list[str]) -> Any:
        return saver.serde.loads_typed((p[0], base64.b64decode(p[1])))

    checkpoint = unpack(doc["checkpoint"])
    config = saver.put(
        {"configurable": {"thread_id": thread, "checkpoint_ns": ""}},
        checkpoint,
        unpack(doc["metadata"]),
        checkpoint["channel_versions"],
    )
    by_task: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for task, channel, value in doc["pending_writes"]:
        by_task[task].append((channel, unpack(value)))
    for task, writes in by_task.items():
        saver.put_writes(config, writes, task)


def check(out: Any) -> None:
    """``done == true`` and ``counter == 1``."""
    if out.get("done") is not True or out.get("counter") != 1:
        raise RuntimeError("W5 wrong result")


def json_variant(settings: Settings, out: list[Record]) -> None:
    """Round trip through a JSON string into a new graph + saver."""
    saver_a, saver_b = MemorySaver(), MemorySaver()
    app_a, app_b = build(saver_a), build(saver_b)
    last = {"thread": "", "bytes": 0}

    def round_trip() -> None:
        thread = last["thread"] = uuid.uuid4().hex
        if "__interrupt__" not in app_a.invoke({}, cfg(thread)):
            raise RuntimeError("W5 did not pause")
        text = export_json(saver_a, thread)
        last["bytes"] = len(text.encode())
        import_json(saver_b, thread, text)
        check(app_b.invoke(Command(resume={"approved": True}), cfg(thread)))

    def drop() -> None:
        saver_a.delete_thread(last["thread"])
        saver_b.delete_thread(last["thread"])

    samples = settings.bench(round_trip, after=drop)
    variant = "JSON checkpoint → new graph + saver"
    emit(
        record(
            "langgraph",
            "langgraph",
            "W5",
            variant,
            samples,
            unit="us/roundtrip",
            checkpoint_bytes=last["bytes"],
        ),
        out,
    )


def sqlite_variant(settings: Settings, out: list[Record]) -> None:
    """Durable hand-off through one SQLite file, two connections."""
    for suffix in ("", "-wal", "-shm"):
        Path(SQLITE_PATH + suffix).unlink(missing_ok=True)
    sql_a = SqliteSaver(sqlite3.connect(SQLITE_PATH, check_same_thread=False))
    sql_a.setup()
    sql_b = SqliteSaver(sqlite3.connect(SQLITE_PATH, check_same_thread=False))
    app_a, app_b = build(sql_a), build(sql_b)
    last: dict[str, Any] = {"thread": "", "bytes": 0}

    def round_trip(measure: bool = False) -> None:
        thread = last["thread"] = uuid.uuid4().hex
        if "__interrupt__" not in app_a.invoke({}, cfg(thread)):
            raise RuntimeError("W5 did not pause")
        if measure:
            last["bytes"] = sql_a.conn.execute(PAYLOAD_SQL, (thread, thread)).fetchone()[0]
        check(app_b.invoke(Command(resume={"approved": True}), cfg(thread)))

    round_trip(measure=True)
    samples = settings.bench(round_trip, after=lambda: sql_a.delete_thread(last["thread"]))
    variant = "shared SQLite file → new graph + connection"
    emit(
        record(
            "langgraph",
            "langgraph",
            "W5",
            variant,
            samples,
            unit="us/roundtrip",
            checkpoint_bytes=last["bytes"],
        ),
        out,
    )
    sql_a.conn.close()
    sql_b.conn.close()
    for suffix in ("", "-wal", "-shm"):
        Path(SQLITE_PATH + suffix).unlink(missing_ok=True)


def main(quick: bool = False) -> list[Record]:
    """Emit the W5 rows: JSON checkpoint, shared SQLite file."""
    settings = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    json_variant(settings, out)
    sqlite_variant(settings, out)
    return out


if __name__ == "__main__":
    main()
