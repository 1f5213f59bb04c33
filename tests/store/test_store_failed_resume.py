"""A stored failed run resumes where it failed, in another process (another store handle), once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from flowchart import flow_chart, replay
from flowchart.store import RunStore, StoreError

DOWN = {"on": True}
CALLS: list[str] = []


def _stage(name: str, fails: bool = False) -> Any:
    def body(scope: Any) -> None:
        CALLS.append(name)
        scope[name] = 1
        if fails and DOWN["on"]:
            raise ConnectionError("provider down")

    return body


def _chart() -> Any:
    return (
        flow_chart("A", _stage("a"), "a")
        .add_function("B", _stage("b", fails=True), "b")
        .add_function("C", _stage("c"), "c")
        .build()
    )


def test_a_failed_stored_run_resumes_at_the_failed_stage_in_another_process(
    make_store: Callable[[], RunStore],
) -> None:
    """Failed at B: stored ``failed`` with its commits and a resume point; ``resume_run`` from another
    store handle re-runs B only (A does not run again), and the run is ``done`` with one log."""
    DOWN["on"], CALLS[:] = True, []
    with pytest.raises(ConnectionError, match=r"^provider down$"):
        _chart().run(store=make_store(), run_id="r1")
    other = make_store()
    record = other.get("r1")
    assert record.status == "failed" and record.checkpoint is not None
    assert record.checkpoint.recovery is not None and record.checkpoint.recovery.runtime_stage_id == "b#1"
    DOWN["on"] = False
    result = _chart().resume_run("r1", store=other)
    assert CALLS == ["a", "b", "b", "c"]
    done = other.get("r1")
    assert done.status == "done"
    assert [c.runtime_stage_id for c in done.commit_log] == ["a#0", "b#1", "b#2", "c#3"]
    assert done.commit_log[2].recovers == "b#1"
    assert replay(done.commit_log) == result.state == {"a": 1, "b": 1, "c": 1}


def test_a_failed_run_is_retried_once_and_takes_no_answer(make_store: Callable[[], RunStore]) -> None:
    """``store.retry`` flips failed to running once; a second retry and an answer are refused."""
    DOWN["on"] = True
    store = make_store()
    with pytest.raises(ConnectionError):
        _chart().run(store=store, run_id="r2")
    with pytest.raises(TypeError, match=r"the run failed, it is not paused"):
        _chart().resume_run("r2", {"answer": 1}, store=store)
    store.retry("r2")
    with pytest.raises(StoreError, match=r"^run 'r2' is running, not failed: only a failed run can be retried$"):
        make_store().retry("r2")


def test_a_run_that_failed_without_a_resume_point_cannot_be_retried(make_store: Callable[[], RunStore]) -> None:
    """Two fork children failed: the stored run has no checkpoint, and retry says so."""
    DOWN["on"] = True
    chart = (
        flow_chart("A", _stage("a"), "a")
        .add_list_of_function([("x", "X", _stage("x", True)), ("y", "Y", _stage("y", True))], fail_fast=True)
        .build()
    )
    store = make_store()
    with pytest.raises(ConnectionError):
        chart.run(store=store, run_id="r3")
    with pytest.raises(StoreError, match=r"^run 'r3' failed without a resume point"):
        store.retry("r3")


def test_a_worker_advances_a_plain_chart_run_and_retries_its_failure(make_store: Callable[[], RunStore]) -> None:
    """``agent.celery.advance`` on a ``FlowChart`` (the worker's body for chart apps): a queued chart
    run fails at B, is retried under the policy and re-queued, and the next advance finishes it
    without running A again."""
    from agent.celery import advance
    from flowchart import Retry

    DOWN["on"], CALLS[:] = True, []
    store = make_store()
    store.create("q1", kind="chart", chart_fingerprint=_chart().fingerprint, input={}, chart_spec=_chart().spec)
    queued: list[float] = []
    policy = Retry(attempts=2, backoff=5)
    assert advance(_chart(), "q1", store=store, retry_failed=policy, requeue=queued.append) == "running"
    DOWN["on"] = False
    assert advance(_chart(), "q1", store=make_store(), retry_failed=policy, requeue=queued.append) == "done"
    assert queued == [5.0] and CALLS == ["a", "b", "b", "c"]
    assert replay(store.get("q1").commit_log) == {"a": 1, "b": 1, "c": 1}
