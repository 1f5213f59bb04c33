"""The cycle collector during a run: young generations only, thresholds given back after.

A run's record holds no cycle, so the full collections the default thresholds trigger walk
the whole growing commit log for nothing (the cost of a stage grew with the run: W1 at
30,000 stages). While a run is in progress the oldest generation's threshold is held out of
reach; generations 0 and 1 still run, so a cycle a stage makes and drops is still freed.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any

import pytest

from flowchart import flow_chart
from flowchart._engine.collector import HELD_THRESHOLD


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """Distinctive thresholds for the test, the process's own put back after it."""
    saved = gc.get_threshold()
    gc.set_threshold(600, 9, 8)
    try:
        yield gc.get_threshold()
    finally:
        gc.set_threshold(*saved)


def test_the_oldest_generation_is_held_during_a_run_and_given_back(thresholds: tuple[int, int, int]) -> None:
    """Inside a stage the third threshold is held; after the run all three are as they were."""
    seen: list[tuple[int, int, int]] = []
    chart = flow_chart("Look", lambda scope: seen.append(gc.get_threshold()), "look").build()
    chart.run()
    assert seen == [(600, 9, HELD_THRESHOLD)]
    assert gc.get_threshold() == thresholds


def test_a_run_inside_a_stage_does_not_give_them_back_early(thresholds: tuple[int, int, int]) -> None:
    """A nested run (a stage that runs another chart) ends first; the outer run still holds the threshold."""
    inner = flow_chart("Inner", lambda scope: None, "inner").build()
    seen: list[int] = []

    def outer(scope: Any) -> None:
        inner.run()
        seen.append(gc.get_threshold()[2])

    flow_chart("Outer", outer, "outer").build().run()
    assert seen == [HELD_THRESHOLD] and gc.get_threshold() == thresholds


def test_a_failing_run_gives_them_back_too(thresholds: tuple[int, int, int]) -> None:
    """A stage that raises ends the run; the thresholds are restored all the same."""

    def boom(scope: Any) -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match=r"^boom$"):
        flow_chart("Boom", boom, "boom").build().run()
    assert gc.get_threshold() == thresholds


class _Node:
    """A cycle-able object (lists cannot be weakly referenced)."""

    other: Any = None


def test_a_cycle_a_stage_drops_is_still_collected_during_the_run() -> None:
    """Young collections still run: a dropped cycle is freed before the stage ends."""
    freed: list[bool] = []

    def stage(scope: Any) -> None:
        a, b = _Node(), _Node()
        a.other, b.other = b, a
        ref = weakref.ref(a)
        del a, b
        junk = [[i] for i in range(200_000)]  # allocations enough for many young collections
        del junk
        freed.append(ref() is None)

    flow_chart("Cycle", stage, "cycle").build().run()
    assert freed == [True]
