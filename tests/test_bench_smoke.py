"""Each benchmark workload still runs (once, at tiny size): benchmarks are never timed here."""

from __future__ import annotations

import importlib

import pytest

WORKLOADS = [
    "w1_linear", "w2_loop", "w3_fanout", "w4_loop_checkpoint", "w5_pause_resume", "w6_agent", "stream_overhead",
    "w7_big_run", "conversation",
]  # fmt: skip


@pytest.mark.parametrize("module", WORKLOADS)
def test_bench_workload_runs_and_passes_its_correctness_checks(module: str) -> None:
    """``main(quick=True)`` runs every row of the workload once and returns its records."""
    records = importlib.import_module(f"bench.pyfootprint.{module}").main(quick=True)
    assert records
