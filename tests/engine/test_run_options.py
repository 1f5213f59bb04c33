"""``RunOptions``: one checked value for a run's options, built by every entry point."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from engine_charts import exact

from flowchart import CancelToken, Redaction, flow_chart
from flowchart._core.options import RunOptions
from flowchart.store import MemoryStore


def tiny():
    """seed (n = 1) → done."""

    def seed(scope):
        scope.n = 1

    return flow_chart("Seed", seed, "seed").add_function("Done", lambda s: None, "done").build()


def test_defaults_are_the_public_entry_points_defaults() -> None:
    """An empty RunOptions is what ``chart.run()`` with no keywords runs with."""
    options = RunOptions()
    assert (options.env, options.recorders, options.max_iterations, options.timeout) == (None, (), 1000, None)
    assert (options.redaction, options.cancel, options.store, options.run_id) == (None, None, None, None)


def test_options_are_frozen_and_slotted() -> None:
    """The value cannot be changed after it was checked; ``but`` makes a checked copy."""
    options = RunOptions(max_iterations=3)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        options.max_iterations = 0  # type: ignore[misc]
    assert not hasattr(options, "__dict__")
    assert options.but(timeout=2.0) == RunOptions(max_iterations=3, timeout=2.0)
    with pytest.raises(ValueError, match=exact("max_iterations must be a positive integer, got 0")):
        options.but(max_iterations=0)


def test_recorders_are_read_once_into_a_tuple() -> None:
    """A generator of recorders is consumed when the options are made (a run can read them twice)."""
    first, second = object(), object()
    assert RunOptions(recorders=iter([first, second])).recorders == (first, second)


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ({"max_iterations": 0}, ValueError, "max_iterations must be a positive integer, got 0"),
        ({"max_iterations": True}, ValueError, "max_iterations must be a positive integer, got True"),
        ({"max_iterations": 2.5}, ValueError, "max_iterations must be a positive integer, got 2.5"),
        ({"timeout": 0}, ValueError, "timeout must be a positive number of seconds, got 0"),
        ({"timeout": "5"}, ValueError, "timeout must be a positive number of seconds, got '5'"),
        ({"cancel": True}, TypeError, "cancel must be a flowchart.CancelToken, got bool"),
        ({"env": ["a"]}, TypeError, "env must be a dict or None, got list"),
        ({"redaction": {"keys": ["pin"]}}, TypeError, "redaction must be a flowchart.Redaction or None, got dict"),
        ({"recorders": 3}, TypeError, "recorders must be a list of recorders, got int"),
        ({"recorders": "narrative"}, TypeError, "recorders must be a list of recorders, got str"),
        ({"run_id": ""}, TypeError, "run_id must be a non-empty string or None, got ''"),
        ({"store": "runs.db"}, TypeError, r"store must be a run store \(flowchart.store.RunStore\), got str"),
    ],
)
def test_a_bad_option_is_refused_naming_it(given: dict[str, Any], error: type[Exception], message: str) -> None:
    """Each option is checked once, when the value is made, with an error naming it and what it takes."""
    with pytest.raises(error, match=f"^{message}$"):
        RunOptions(**given)


def test_a_bad_option_to_a_stored_run_writes_nothing() -> None:
    """``chart.run(store=..., max_iterations=0)`` is refused before the store is touched."""
    store = MemoryStore()
    with pytest.raises(ValueError, match=exact("max_iterations must be a positive integer, got 0")):
        tiny().run(store=store, run_id="r1", max_iterations=0)
    assert store.list() == []


def test_every_entry_point_checks_its_options() -> None:
    """run, resume, resume_run and stream refuse the same bad option with the same message."""
    chart = tiny()
    message = exact("timeout must be a positive number of seconds, got -1")
    with pytest.raises(ValueError, match=message):
        chart.run(timeout=-1)
    with pytest.raises(ValueError, match=message):
        chart.resume(None, timeout=-1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        chart.resume_run("r", store=MemoryStore(), timeout=-1)
    with pytest.raises(ValueError, match=message):
        chart.stream(timeout=-1)


def test_options_reach_the_run() -> None:
    """env, redaction and cancel given to ``run`` are what the stages and the result see."""
    seen: list[Any] = []

    def seed(scope, ctx):
        seen.append(dict(ctx.env))
        scope.pin = "1234"

    chart = flow_chart("Seed", seed, "seed").build()
    result = chart.run(env={"k": 1}, redaction=Redaction(keys={"pin"}), cancel=CancelToken())
    assert seen == [{"k": 1}]
    assert result.commit_log[0].trace[0].value == "REDACTED"
