"""W2 — decider loop: Seed → Check (decider) → Work → back to Check, 1,000 times, then Done.

One iteration = one Check decision + one Work stage. The extra row is the decider-free loop
(one stage with ``loop_to`` and ``ctx.stop()``), like footprintjs's ``loopTo`` + ``$break``.
"""

from __future__ import annotations

from typing import Any

from bench.harness import Record
from bench.pyfootprint.common import row, settings
from flowchart import flow_chart

ITERS = 1000
MAX_ITERATIONS = 10 * ITERS  # the engine's loop guard (visits per stage) must not stop W2


def seed(scope: Any) -> None:
    """``counter ← 0``."""
    scope.counter = 0


def check(scope: Any) -> str:
    """The decider: loop while ``counter < 1000``."""
    return "work" if scope.counter < ITERS else "done"


def work(scope: Any) -> None:
    """``counter ← counter + 1``."""
    scope.counter = scope.counter + 1


def done(scope: Any) -> None:
    """``finished ← true``."""
    scope.finished = True


def work_until(scope: Any, ctx: Any) -> None:
    """Decider-free loop body: count, and stop the loop at 1,000."""
    scope.counter = scope.counter + 1
    if scope.counter >= ITERS:
        ctx.stop()


def build() -> Any:
    """The W2 chart: a decider whose ``work`` branch loops back to it."""
    return (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Check", check, "check")
        .add_function_branch("work", "Work", work, loop_to="check")
        .add_function_branch("done", "Done", done)
        .set_default("done")
        .end()
        .build()
    )


def build_stop_loop() -> Any:
    """One stage looping onto itself until ``ctx.stop()``."""
    return flow_chart("Seed", seed, "seed").add_function("Work", work_until, "work").loop_to("work").build()


def run_loop(chart: Any, **run_kw: Any) -> Any:
    """One run, checked: ``counter == 1000`` and ``finished``."""
    result = chart.run(max_iterations=MAX_ITERATIONS, **run_kw)
    if result.state["counter"] != ITERS or result.state.get("finished") is not True:
        raise RuntimeError("W2 wrong result")
    return result


def run_stop_loop(chart: Any) -> Any:
    """One run of the decider-free loop, checked: ``counter == 1000``."""
    result = chart.run(max_iterations=MAX_ITERATIONS)
    if result.state["counter"] != ITERS:
        raise RuntimeError("W2 wrong result")
    return result


def main(quick: bool = False) -> list[Record]:
    """Emit the W2 rows."""
    cfg = settings(quick)
    out: list[Record] = []
    chart = build()
    per_iter = round(len(run_loop(chart).commit_log) / ITERS, 2)
    samples = cfg.bench(lambda: run_loop(chart))
    row(
        out,
        "W2",
        "decider loop",
        samples,
        per=ITERS,
        unit="us/iter",
        stage_commits_per_iter=per_iter,
    )
    stop_chart = build_stop_loop()
    per_iter = round(len(run_stop_loop(stop_chart).commit_log) / ITERS, 2)
    samples = cfg.bench(lambda: run_stop_loop(stop_chart))
    row(
        out,
        "W2",
        "loop_to + ctx.stop() (no decider)",
        samples,
        per=ITERS,
        unit="us/iter",
        stage_commits_per_iter=per_iter,
    )
    return out


if __name__ == "__main__":
    main()
