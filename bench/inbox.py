"""The approval inbox's figures: the first page of the list and approve → done, over real HTTP.

    .venv/bin/python bench/inbox.py [--runs 1000] [--decisions 100] [--approvers 4] [--pages 200]

Makes N paused runs of the demo's refund agent (``examples/support_agent.py``) in a fresh
SQLite store, starts ``agent serve`` on it in its own process (uvicorn on 127.0.0.1, the demo
agent resuming decided runs in the server's process), then measures with httpx from this one:

1. ``GET /api/runs?status=paused&limit=50`` — the first page of the list — ``--pages`` times
   (p50 / p95, milliseconds); targets: p95 <= 50 ms, the same at 1,000 and 10,000 runs (the
   store pages through its ``(status, updated_at)`` index, never the whole store);
2. ``POST /api/runs/{id}/decision`` approving ``--decisions`` runs with ``--approvers``
   threads deciding at once; each reply comes back when the run is resumed and done (p50 / p95,
   milliseconds); target p95 <= 1 s with 4 approvers.

Prints one JSON line per figure. LangGraph's ``get_state`` / ``Command(resume=...)`` peer
column is not measured here (not built yet).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


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
        finally:
            server.terminate()
            server.wait(10)
    figures = [
        {
            "figure": "inbox first page (limit 50)",
            "runs": args.runs,
            "n": len(pages),
            "p50_ms": round(statistics.median(pages), 2),
            "p95_ms": round(_p(pages, 0.95), 2),
            "target_p95_ms": 50,
        },
        {
            "figure": f"approve -> done ({args.approvers} concurrent approvers)",
            "runs": args.runs,
            "n": len(latencies),
            "p50_ms": round(statistics.median(latencies), 1),
            "p95_ms": round(_p(latencies, 0.95), 1),
            "target_p95_ms": 1000,
            "failures": len(failures),
        },
    ]
    for figure in figures:
        print(json.dumps(figure))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
