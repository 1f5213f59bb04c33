"""The approval inbox's peer column: the same two figures through LangGraph's own API.

    bench/.cache/peers-venv/bin/python -m bench.peers.langgraph.inbox [--runs 1000] [--decisions 100]
        [--approvers 4] [--pages 200]

An equivalent graph to the demo's refund agent (``examples/support_agent.py``): ``lookup`` reads
the order, ``refund`` is the tool node — it ``interrupt()``s with what it waits for (the tool,
its arguments and the question), and on ``Command(resume={"approved": True, "by": ...})`` issues
the refund — then ``answer`` writes the reply. N threads are run to the interrupt in a fresh
``SqliteSaver`` file (WAL, as ``setup()`` leaves it). Then, in this one process (no HTTP, no
authentication, no JSON encoding: the peer has no server, so these are library calls beside
pyfootprint's HTTP round trips):

1. the first page — 50 paused threads with what each waits for, ``--pages`` times (p50 / p95,
   milliseconds). LangGraph keeps no index of paused threads, so the page is built from its
   public API: ``saver.list(None)`` walks every thread's checkpoints newest first (the saver's
   ``ORDER BY checkpoint_id DESC``, deserializing each checkpoint and reading its pending writes);
   the first checkpoint met per thread is its latest, and the thread is paused when that
   checkpoint holds an ``__interrupt__`` pending write. The walk stops at 50 paused threads;
   then ``graph.get_state(config)`` for each of the 50 gives the interrupt's value (what the
   thread waits for);
2. approve → done — ``graph.invoke(Command(resume=...), config)`` on ``--decisions`` paused
   threads, ``--approvers`` Python threads deciding at once on one compiled graph and one
   ``SqliteSaver`` (its connection is shared and guarded by the saver's lock, the documented
   ``check_same_thread=False`` use); each sample ends when the thread has run to ``END``
   (p50 / p95, milliseconds);
3. the first page again, once the approved threads (the newest) are done: the walk now passes
   over their checkpoints before it meets 50 paused threads.

Prints one JSON line per figure, the row shape of ``bench/inbox.py`` with ``"peer": "langgraph"``.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from bench.harness import latency_figure

ORDERS = {"A-1001": {"order_id": "A-1001", "item": "Noise-cancelling headphones", "amount": 129.0}}
QUESTION = "Hi, I was charged twice for order A-1001. Please refund the extra charge."


class State(TypedDict, total=False):
    """One refund conversation."""

    question: str
    order: dict[str, Any]
    refund: str
    answer: str


def lookup(state: State) -> dict[str, Any]:
    """The order the question names."""
    return {"order": ORDERS["A-1001"]}


def refund(state: State) -> dict[str, Any]:
    """The tool node: amounts over 100 wait for a person; on resume the refund runs (or not)."""
    order = state["order"]
    args = {"order_id": order["order_id"], "amount": order["amount"]}
    decision = interrupt({"tool": "issue_refund", "args": args, "question": "Approve this refund?"})
    if not decision.get("approved"):
        return {"refund": "declined by " + str(decision.get("by"))}
    return {"refund": f"refunded {args['amount']:.2f} on {args['order_id']}"}


def answer(state: State) -> dict[str, Any]:
    """The reply to the customer."""
    return {"answer": f"Done: {state['refund']}."}


def build(saver: Any) -> Any:
    """lookup → refund (interrupts) → answer, checkpointed by ``saver``."""
    g = StateGraph(State)
    g.add_node("lookup", lookup)
    g.add_node("refund", refund)
    g.add_node("answer", answer)
    g.add_edge(START, "lookup")
    g.add_edge("lookup", "refund")
    g.add_edge("refund", "answer")
    g.add_edge("answer", END)
    return g.compile(checkpointer=saver)


def cfg(thread: str) -> Any:
    """Invoke config for one thread."""
    return {"configurable": {"thread_id": thread}}


def first_page(graph: Any, saver: Any, size: int = 50) -> list[dict[str, Any]]:
    """The newest ``size`` paused threads with what each waits for (see the module docstring)."""
    seen: set[str] = set()
    paused: list[str] = []
    walk = saver.list(None)
    try:
        for tup in walk:
            thread = tup.config["configurable"]["thread_id"]
            if thread in seen:
                continue
            seen.add(thread)
            if any(channel == "__interrupt__" for _, channel, _ in tup.pending_writes or ()):
                paused.append(thread)
                if len(paused) == size:
                    break
    finally:
        walk.close()  # releases the saver's cursor and lock before get_state
    rows = []
    for thread in paused:
        state = graph.get_state(cfg(thread))
        waits = [i.value for task in state.tasks for i in task.interrupts]
        rows.append({"thread_id": thread, "next": list(state.next), "waits_for": waits[0]})
    return rows


def main() -> int:
    """Make the paused threads, measure, print."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--approvers", type=int, default=4)
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        conn = sqlite3.connect(str(Path(tmp) / "threads.db"), check_same_thread=False)
        saver = SqliteSaver(conn)
        saver.setup()
        graph = build(saver)
        started = time.perf_counter()
        for _ in range(args.runs):
            out = graph.invoke({"question": QUESTION}, cfg(uuid.uuid4().hex))
            if "__interrupt__" not in out:
                raise SystemExit("the refund graph did not pause")
        print(f"made {args.runs} paused threads in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        first_page(graph, saver)  # warm, as bench/inbox.py's first request
        pages: list[float] = []
        for _ in range(args.pages):
            t0 = time.perf_counter()
            rows = first_page(graph, saver)
            pages.append((time.perf_counter() - t0) * 1000)
            if len(rows) != 50 or rows[0]["waits_for"]["tool"] != "issue_refund":
                raise SystemExit(f"wrong first page: {len(rows)} rows")
        todo = [row["thread_id"] for row in first_page(graph, saver, args.decisions)]
        lock = threading.Lock()
        latencies: list[float] = []
        failures: list[str] = []

        def approver(index: int) -> None:
            for thread in todo[index :: args.approvers]:
                t0 = time.perf_counter()
                out = graph.invoke(Command(resume={"approved": True, "by": f"approver-{index}"}), cfg(thread))
                took = (time.perf_counter() - t0) * 1000
                with lock:
                    if out.get("answer") != "Done: refunded 129.00 on A-1001.":
                        failures.append(repr(out))
                    latencies.append(took)

        threads = [threading.Thread(target=approver, args=(i,)) for i in range(args.approvers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after: list[float] = []  # the same page once the newest threads are done: the walk grows
        for _ in range(args.pages):
            t0 = time.perf_counter()
            first_page(graph, saver)
            after.append((time.perf_counter() - t0) * 1000)
        conn.close()
    figures = [
        latency_figure("langgraph", "inbox first page (limit 50)", args.runs, pages, 50),
        latency_figure(
            "langgraph",
            f"approve -> done ({args.approvers} concurrent approvers)",
            args.runs,
            latencies,
            1000,
            1,
            failures=len(failures),
        ),
        latency_figure(
            "langgraph", f"inbox first page (limit 50) after the {len(latencies)} approvals", args.runs, after, 50
        ),
    ]
    for figure in figures:
        print(json.dumps(figure))
    if failures:
        print(failures[0], file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
