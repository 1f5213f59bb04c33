"""Without a store, the error a failed run raises carries the run as far as it got."""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import failed_run, flow_chart, narrative


def _ok(scope: Any) -> None:
    scope.a = 1


def _bad(scope: Any) -> None:
    scope.b = 2
    raise KeyError("zz")


def test_the_error_is_unchanged_and_carries_the_commits_and_narrative() -> None:
    """The stage's own error propagates (same object, same message); ``failed_run`` gives the
    commits made before the failure — the failing stage's partial commit too — and the narrative."""
    chart = flow_chart("A", _ok, "a").add_function("Bad", _bad, "bad").build()
    with pytest.raises(KeyError, match=r"^'zz'$") as caught:
        chart.run(recorders=[narrative()])
    found = failed_run(caught.value)
    assert found is not None
    partial, failure = found
    assert [c.runtime_stage_id for c in partial.commit_log] == ["a#0", "bad#1"]
    assert partial.state == {"a": 1, "b": 2} and partial.failure == failure
    assert partial.recorders[0].lines()[-1].startswith("[Error]: An error occurred at Bad: KeyError")
    assert failure.format() == "KeyError: 'zz' (stage bad#1)"


def test_a_failure_inside_a_subflow_names_the_inner_stage() -> None:
    """The failing stage is the innermost one, by its full runtime id (``mount/stage#N``)."""
    inner = flow_chart("In", _ok, "in").add_function("Bad", _bad, "bad").build()
    chart = flow_chart("A", _ok, "a").add_subflow_chart_next("sf", inner, mount_name="Sub").build()
    with pytest.raises(KeyError) as caught:
        chart.run()
    found = failed_run(caught.value)
    assert found is not None
    assert (found[1].stage_id, found[1].runtime_stage_id) == ("sf/bad", "sf/bad#3")
    assert [c.runtime_stage_id for c in found[0].commit_log] == ["a#0", "sf#1"]


def test_an_error_raised_outside_any_run_carries_nothing() -> None:
    """``failed_run`` is ``None`` for an error no run raised."""
    assert failed_run(ValueError("elsewhere")) is None
