"""Each benchmark workload still runs (once, at tiny size): benchmarks are never timed here."""

from __future__ import annotations

import importlib

import pytest

WORKLOADS = [
    "w1_linear",
    "w2_loop",
    "w3_fanout",
    "w4_loop_checkpoint",
    "w5_pause_resume",
    "w6_agent",
    "stream_overhead",
    "effects_overhead",
    "w7_big_run",
    "w8_map",
    "conversation",
    "memory_recall",
    "composition",
    "conversation_long",
    "replay",
]


@pytest.mark.parametrize("module", WORKLOADS)
def test_bench_workload_runs_and_passes_its_correctness_checks(module: str) -> None:
    """``main(quick=True)`` runs every row of the workload once and returns its records."""
    records = importlib.import_module(f"bench.pyfootprint.{module}").main(quick=True)
    assert records


def test_side_by_side_prepares_each_sample_untimed_and_rotates_who_goes_first() -> None:
    """``side_by_side`` prepares a fresh sample before timing it, times every variant once a
    round with the first place rotating, and ``ratios`` divides each median by the base's."""
    from bench.harness import Settings, ratios, side_by_side

    order: list[str] = []

    def variant(name: str) -> object:
        def prepare() -> object:
            order.append("prepare " + name)
            return lambda: order.append("run " + name)

        return prepare

    cfg = Settings(warmup=0, min_reps=3, budget_s=0.0)
    samples = side_by_side(cfg, {"a": variant("a"), "b": variant("b")})
    assert [len(samples["a"]), len(samples["b"])] == [3, 3]
    assert order == [
        "prepare a",
        "run a",
        "prepare b",
        "run b",
        "prepare b",
        "run b",
        "prepare a",
        "run a",
        "prepare a",
        "run a",
        "prepare b",
        "run b",
    ]
    assert ratios({"base": [1.0, 2.0, 3.0], "x": [3.0, 4.0, 5.0]}, "base") == {"x": 2.0}


def test_the_langgraph_inbox_peer_prints_the_rows_of_bench_inbox() -> None:
    """The inbox's peer column (``bench.peers.langgraph.inbox``, in the peers venv — skipped when
    ``make bench`` has not made it) runs at a tiny size and prints bench/inbox.py's row shape and
    figures: the first page, approve → done with no failure, the page after the approvals."""
    import json
    import os
    import subprocess
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    peers = Path(os.environ.get("PEERS_VENV", repo / "bench" / ".cache" / "peers-venv")) / "bin" / "python"
    if not peers.exists():
        pytest.skip(f"no LangGraph peers venv at {peers.parent.parent} (make bench makes it)")
    command = [str(peers), "-m", "bench.peers.langgraph.inbox", "--runs", "55", "--decisions", "8", "--pages", "3"]
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["figure"] for r in rows] == [
        "inbox first page (limit 50)",
        "approve -> done (4 concurrent approvers)",
        "inbox first page (limit 50) after the 8 approvals",
    ]
    keys = {"peer", "figure", "runs", "n", "p50_ms", "p95_ms", "target_p95_ms"}
    assert all(set(r) >= keys and r["peer"] == "langgraph" for r in rows)
    assert [r["n"] for r in rows] == [3, 8, 3] and rows[1]["failures"] == 0
