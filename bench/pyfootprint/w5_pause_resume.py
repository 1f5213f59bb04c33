"""W5 — pause/resume round trip: Seed → Approve (pausable) → Finish (pyfootprint).

One round trip, timed whole: run chart A until it pauses, ``checkpoint.to_json()``,
``Checkpoint.from_json``, resume on chart B (built separately, sharing no in-memory state
with A) with ``{"approved": True}``, run to the end. Seed counts its executions in a plain
Python list so the check can prove B continued from the pause instead of starting over.
"""

from __future__ import annotations

from typing import Any

from bench.harness import Record
from bench.pyfootprint.common import row, settings
from flowchart import Checkpoint, Pausable, flow_chart

SEED_RUNS: list[int] = []


def seed(scope: Any) -> None:
    """``counter ← 1``."""
    SEED_RUNS.append(1)
    scope.counter = 1


def ask(scope: Any) -> dict[str, str]:
    """First pass of Approve: pause with a question."""
    return {"question": "approve?"}


def answer(scope: Any, value: Any) -> None:
    """Resume of Approve: record the answer."""
    scope.asked = True
    scope.approved = value["approved"]


def finish(scope: Any) -> None:
    """``done ← (approved == true)``."""
    scope.done = getattr(scope, "approved", None) is True


def build() -> Any:
    """Seed → Approve (pausable) → Finish."""
    return (
        flow_chart("Seed", seed, "seed")
        .add_pausable_function("Approve", Pausable(execute=ask, resume=answer), "approve")
        .add_function("Finish", finish, "finish")
        .build()
    )


def round_trip(chart_a: Any, chart_b: Any) -> int:
    """One round trip, checked. Returns the checkpoint's size in UTF-8 bytes."""
    SEED_RUNS.clear()
    paused = chart_a.run()
    if not paused.paused or paused.checkpoint is None:
        raise RuntimeError("W5 did not pause")
    text = paused.checkpoint.to_json()
    done = chart_b.resume(Checkpoint.from_json(text), {"approved": True})
    state = done.state
    if state.get("done") is not True or state.get("counter") != 1 or len(SEED_RUNS) != 1:
        raise RuntimeError("W5 wrong result")
    return len(text.encode())


def main(quick: bool = False) -> list[Record]:
    """Emit the W5 row with the checkpoint size."""
    cfg = settings(quick)
    out: list[Record] = []
    chart_a, chart_b = build(), build()
    size = round_trip(chart_a, chart_b)
    samples = cfg.bench(lambda: round_trip(chart_a, chart_b))
    row(
        out,
        "W5",
        "JSON checkpoint → resume on a new chart",
        samples,
        unit="us/roundtrip",
        checkpoint_bytes=size,
    )
    return out


if __name__ == "__main__":
    main()
