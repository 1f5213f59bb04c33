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
