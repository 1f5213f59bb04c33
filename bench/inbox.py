"""The approval inbox's figures: the first page of the list and approve → done, over real HTTP.

    .venv/bin/python -m bench.inbox [--runs 1000] [--decisions 100] [--approvers 4] [--pages 200]

Makes N paused runs of the demo's refund agent (``examples/support_agent.py``) in a fresh
SQLite store, starts ``agent serve`` on it in its own process (uvicorn on 127.0.0.1, the demo
agent resuming decided runs in the server's process), then measures with httpx from this one:

1. ``GET /api/runs?status=paused&limit=50`` — the first page of the list — ``--pages`` times
   (p50 / p95, milliseconds); targets: p95 <= 50 ms, the same at 1,000 and 10,000 runs (the
   store pages through its ``(status, updated_at)`` index, never the whole store);
2. ``POST /api/runs/{id}/decision`` approving ``--decisions`` runs with ``--approvers``
   threads deciding at once; each reply comes back when the run is resumed and done (p50 / p95,
   milliseconds); target p95 <= 1 s with 4 approvers;
3. the first page again once the approved runs (the newest) are done, and the store's part of
   the first page in this process (``store.summaries``, no HTTP) — the rows to set beside
   LangGraph's, which has no server.

Prints one JSON line per figure. The peer column — the same figures through LangGraph's
``get_state`` / ``Command(resume=...)`` on an equivalent graph — is
``bench/peers/langgraph/inbox.py`` (same options, same row shape); ``make bench`` runs both.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench.harness import latency_figure

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def make_runs(folder: Path, count: int) -> tuple[str, str, str]:
    """``count`` paused refunds in ``folder/runs.db``; a users file with alice, bob, carol, dana."""
    from agent.serve import add_user
    from examples import support_agent as demo
    from flowchart.store import SqliteStore

    store = SqliteStore(folder / "runs.db")
    agent = demo.build_agent(store)
    for _ in range(count):
        agent.run(demo.QUESTION)
    users = str(folder / "users.json")
    tokens = [add_user(users, name, "approver") for name in ("alice", "bob", "carol", "dana")]
    return str(folder / "runs.db"), users, json.dumps(tokens)


def first_page_in_process(db: str, pages: int) -> list[float]:
    """Milliseconds per ``store.summaries(status="paused", limit=50)`` in this process — the
    store's part of the first page (each summary carries the question the run waits on), to set
    beside LangGraph's in-process page."""
    from flowchart.store import SqliteStore
    from flowchart.store.summaries import summaries

    store = SqliteStore(db)
    summaries(store, "paused", limit=50)
    samples = []
    for _ in range(pages):
        t0 = time.perf_counter()
        page = summaries(store, "paused", limit=50)
        samples.append((time.perf_counter() - t0) * 1000)
        assert len(page) == 50 and page[0].question is not None
    return samples


def main() -> int:
    """Build the store, serve it, measure, print."""
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--decisions", type=int, default=100)
    parser.add_argument("--approvers", type=int, default=4)
    parser.add_argument("--pages", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        db, users, tokens_text = make_runs(folder, args.runs)
        tokens = json.loads(tokens_text)
        print(f"made {args.runs} paused runs in {time.perf_counter() - started:.1f}s", file=sys.stderr)
        in_process = first_page_in_process(db, args.pages)
        port = _port()
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        command = [
            str(REPO / ".venv" / "bin" / "agent"),
            "serve",
            "--store",
            db,
            "--users",
            users,
            "--port",
            str(port),
            "--agent",
            "examples.support_agent:build_agent",
            "--app-dir",
            str(REPO),
        ]
        server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if httpx.get(f"{url}/health").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"agent serve did not start: {server.stdout.read() if server.stdout else ''}")
                time.sleep(0.1)
            headers = {"authorization": f"Bearer {tokens[0]}"}
            with httpx.Client(base_url=url, headers=headers) as client:
                client.get("/api/runs?limit=50")  # the token's scrypt, once
                pages = []
                for _ in range(args.pages):
                    t0 = time.perf_counter()
                    reply = client.get("/api/runs", params={"status": "paused", "limit": 50})
                    pages.append((time.perf_counter() - t0) * 1000)
                    assert reply.status_code == 200 and len(reply.json()["runs"]) == 50
                todo = client.get("/api/runs", params={"status": "paused", "limit": args.decisions}).json()["runs"]
            lock = threading.Lock()
            latencies: list[float] = []
            failures: list[str] = []

            def approver(index: int) -> None:
                with httpx.Client(base_url=url, headers={"authorization": f"Bearer {tokens[index]}"}, timeout=60) as c:
                    c.get("/api/runs?limit=1")
                    for row in todo[index :: args.approvers]:
                        t0 = time.perf_counter()
                        reply = c.post(
                            f"/api/runs/{row['run_id']}/decision",
                            json={"request_id": row["request_id"], "approved": True},
                        )
                        took = (time.perf_counter() - t0) * 1000
                        with lock:
                            if reply.status_code != 200 or reply.json()["status"] != "done":
                                failures.append(reply.text)
                            latencies.append(took)

            threads = [threading.Thread(target=approver, args=(i,)) for i in range(args.approvers)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            after: list[float] = []  # the same page once the newest runs are done
            with httpx.Client(base_url=url, headers=headers) as client:
                for _ in range(args.pages):
                    t0 = time.perf_counter()
                    reply = client.get("/api/runs", params={"status": "paused", "limit": 50})
                    after.append((time.perf_counter() - t0) * 1000)
                    assert reply.status_code == 200 and len(reply.json()["runs"]) == min(50, args.runs - len(todo))
        finally:
            server.terminate()
            server.wait(10)
    figures = [
        latency_figure("pyfootprint", "inbox first page (limit 50)", args.runs, pages, 50),
        latency_figure(
            "pyfootprint",
            f"approve -> done ({args.approvers} concurrent approvers)",
            args.runs,
            latencies,
            1000,
            1,
            failures=len(failures),
        ),
        latency_figure(
            "pyfootprint", f"inbox first page (limit 50) after the {len(latencies)} approvals", args.runs, after, 50
        ),
        latency_figure(
            "pyfootprint",
            "first page in process: store.summaries(status='paused', limit=50), no HTTP",
            args.runs,
            in_process,
            50,
        ),
    ]
    for figure in figures:
        print(json.dumps(figure))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
