"""W1 — linear chain of 200 stages; every stage does ``counter = counter + 1`` (pyfootprint).

Rows: run; run + narrative recorder; build chart; run while state holds an untouched 100-item
list; and the growth check: µs per stage at 10, 100, 1,000, 10,000 and 30,000 stages (must stay
flat: the target is 30,000 at ≤ 1.2× 100).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bench.harness import Record
from bench.pyfootprint.common import row, settings, skip
from flowchart import flow_chart, narrative

N = 200
GROWTH = (10, 100, 1000, 10_000, 30_000)
BLOB = [{"role": "tool", "id": f"c{i}", "content": "x" * 20} for i in range(100)]


def stage(scope: Any) -> None:
    """One read and one write of ``counter``."""
    scope.counter = getattr(scope, "counter", 0) + 1


def first_with_blob(scope: Any) -> None:
    """``s0`` of the extra row: also writes the 100-item list no later stage touches."""
    scope.counter = 1
    scope.blob = BLOB


def build(n: int = N, first: Callable[[Any], None] = stage) -> Any:
    """Build the ``n``-stage chain ``s0 → … → s<n-1>``."""
    b = flow_chart("s0", first, "s0")
    for i in range(1, n):
        b = b.add_function(f"s{i}", stage, f"s{i}")
    return b.build()


def run_once(chart: Any, n: int = N, with_narrative: bool = False) -> None:
    """One run, checked: ``counter == n`` and ``n`` commits."""
    recorders = [narrative()] if with_narrative else []
    result = chart.run(recorders=recorders)
    if result.state["counter"] != n or len(result.commit_log) != n:
        raise RuntimeError("W1 wrong result")
    if with_narrative and not recorders[0].lines():
        raise RuntimeError("W1 narrative is empty")


def main(quick: bool = False) -> list[Record]:
    """Emit every W1 row."""
    cfg = settings(quick)
    out: list[Record] = []
    chart = build()
    row(out, "W1", "run", cfg.bench(lambda: run_once(chart)), per=N, unit="us/stage")
    samples = cfg.bench(lambda: run_once(chart, with_narrative=True))
    row(out, "W1", "run + narrative recorder", samples, per=N, unit="us/stage")
    row(out, "W1", "build chart (200 stages)", cfg.bench(build), unit="us/build")
    blob_chart = build(first=first_with_blob)
    samples = cfg.bench(lambda: run_once(blob_chart))
    row(out, "W1", "run, state holds untouched 100-item list", samples, per=N, unit="us/stage")
    for n in GROWTH[:2] if quick else GROWTH:
        variant = f"growth: {n:,} stages"
        try:
            big = build(n)
            samples = cfg.bench(lambda big=big, n=n: run_once(big, n), warmup=2, min_reps=8)
        except RecursionError as exc:  # an engine that recurses per stage cannot run long chains
            skip(out, "W1", variant, f"RecursionError: {exc}")
            continue
        row(out, "W1", variant, samples, per=n, unit="us/stage", stages=n)
    return out


if __name__ == "__main__":
    main()
