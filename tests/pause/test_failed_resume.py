"""A failed run resumes where it failed: the failed stage re-runs from the state before its
partial commit, and no stage that committed runs again."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import (
    Checkpoint,
    CheckpointError,
    ForkError,
    RunError,
    failed_checkpoint,
    failed_run,
    flow_chart,
    narrative,
    replay,
)

CALLS: Counter[str] = Counter()
BROKEN: set[str] = set()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    CALLS.clear()
    BROKEN.clear()


def stage(name: str, write: dict[str, Any] | None = None) -> Any:
    """A stage body that counts its calls, writes ``write`` and ``dirty``, and raises while broken."""

    def body(scope: Any) -> None:
        CALLS[name] += 1
        for key, value in (write or {}).items():
            scope[key] = value
        scope[f"{name}_dirty"] = True
        if name in BROKEN:
            raise ConnectionError(f"{name} is down")
        del scope[f"{name}_dirty"]

    return body


def fail_then_resume(chart: Any, broken: str, **run: Any) -> tuple[Any, Any, Exception]:
    """Run ``chart`` with ``broken`` failing, then resume the failure (from JSON) with it fixed."""
    BROKEN.add(broken)
    with pytest.raises(Exception) as caught:
        chart.run(**run)
    error = caught.value
    checkpoint = Checkpoint.from_json(error.checkpoint.to_json())  # type: ignore[attr-defined]
    found = failed_run(error)
    assert found is not None
    BROKEN.clear()
    before = Counter(CALLS)
    resumed = chart.resume(checkpoint)
    return found[0], resumed, before


def test_a_stage_failing_inside_a_loop_resumes_on_that_pass() -> None:
    """Work fails on its third pass; the resume re-runs that pass only and finishes the loop; the
    two logs fold to the final state; the re-run commit names the execution it replaces."""

    def work(scope: Any) -> None:
        CALLS["work"] += 1
        scope.count = scope.count + 1
        scope.temp = "dirty"
        if scope.count == 3 and "work" in BROKEN:
            raise ValueError("boom at 3")
        del scope.temp

    chart = (
        flow_chart("Seed", lambda s: setattr(s, "count", 0), "seed")
        .add_function("Work", work, "work")
        .add_decider_function("Check", lambda s: "again" if s.count < 4 else "done", "check")
        .add_function_branch("again", "Again", lambda s: None, loop_to="work")
        .add_function_branch("done", "Done", lambda s: setattr(s, "finished", True))
        .end()
        .build()
    )
    BROKEN.add("work")
    with pytest.raises(ValueError, match=r"^boom at 3$") as caught:
        chart.run()
    checkpoint = caught.value.checkpoint  # type: ignore[attr-defined]
    assert (checkpoint.recovery.runtime_stage_id, checkpoint.recovery.restore, checkpoint.recovery.discard) == (
        "work#7",
        {"count": 2},
        ["temp"],
    )
    failed = failed_run(caught.value)
    assert failed is not None
    BROKEN.clear()
    rec = narrative()
    resumed = chart.resume(Checkpoint.from_json(checkpoint.to_json()), recorders=[rec])
    assert resumed.state == chart.run().state == {"count": 4, "finished": True}
    whole = [*failed[0].commit_log, *resumed.commit_log]
    assert replay(whole) == resumed.state
    assert resumed.commit_log[0].recovers == "work#7"
    assert resumed.commit_log[0].to_dict()["trace"] == [{"path": ["temp"], "verb": "delete"}]
    assert rec.lines()[0] == (
        "Execution resumed at Work after it failed with ValueError: boom at 3; its partial writes were discarded."
    )


def test_a_decider_branch_resumes_at_the_branch_and_continues_after_the_decider() -> None:
    """The chosen branch failed: only it re-runs, then the decider's next stage; no earlier stage runs again."""
    chart = (
        flow_chart("Seed", stage("seed", {"plan": "b"}), "seed")
        .add_decider_function("Route", lambda s: s.plan, "route")
        .add_function_branch("a", "A", stage("a"))
        .add_function_branch("b", "B", stage("b", {"b": 1}))
        .end()
        .add_function("After", stage("after", {"after": 1}), "after")
        .build()
    )
    failed, resumed, before = fail_then_resume(chart, "b")
    assert before == Counter({"seed": 1, "b": 1})
    assert Counter({"seed": 1, "b": 2, "after": 1}) == CALLS
    assert [c.runtime_stage_id for c in resumed.commit_log] == ["b#3", "after#4"]
    assert replay([*failed.commit_log, *resumed.commit_log]) == resumed.state == {"plan": "b", "b": 1, "after": 1}


def test_a_subflow_stage_resumes_inside_the_subflow_and_the_mount_merges_on() -> None:
    """An inner stage failed: the inner stages before it and the parent stages do not run again."""
    inner = flow_chart("In1", stage("in1", {"x": 1}), "in1").add_function("In2", stage("in2", {"y": 2}), "in2").build()
    chart = (
        flow_chart("Seed", stage("seed", {"s": 0}), "seed")
        .add_subflow_chart_next(
            "sf", inner, mount_name="Inner", output_mapper=lambda sub, parent: {"got": sub["x"] + sub["y"]}
        )
        .add_function("After", stage("after", {"after": 1}), "after")
        .build()
    )
    _failed, resumed, before = fail_then_resume(chart, "in2")
    assert before == Counter({"seed": 1, "in1": 1, "in2": 1})
    assert Counter({"seed": 1, "in1": 1, "in2": 2, "after": 1}) == CALLS
    assert resumed.state == {"s": 0, "got": 3, "after": 1}
    inner_log = resumed.subflow_results["sf"].commit_log
    assert [(c.runtime_stage_id, c.recovers) for c in inner_log] == [("sf/in2#5", "sf/in2#3")]


def test_a_fork_child_resumes_alone_and_the_run_goes_on_after_the_fork() -> None:
    """One child of a fail-fast fork failed: its sibling's commit stands, only it re-runs."""
    chart = (
        flow_chart("Seed", stage("seed"), "seed")
        .add_list_of_function([("a", "A", stage("a", {"v": "a"})), ("b", "B", stage("b", {"v": "b"}))], fail_fast=True)
        .add_function("After", stage("after", {"after": 1}), "after")
        .build()
    )
    failed, resumed, before = fail_then_resume(chart, "b")
    assert before == Counter({"seed": 1, "a": 1, "b": 1})
    assert Counter({"seed": 1, "a": 1, "b": 2, "after": 1}) == CALLS
    assert resumed.state == {"runs": {"a": {"v": "a"}, "b": {"v": "b"}}, "after": 1}
    assert replay([*failed.commit_log, *resumed.commit_log]) == resumed.state


def test_a_rerun_that_fails_again_resumes_from_before_the_first_failure() -> None:
    """Fail, resume into the same failure, then resume once more: the undo still reaches the state
    the stage first started from."""
    chart = flow_chart("Seed", stage("seed", {"k": 0}), "seed").add_function("B", stage("b", {"k": 1}), "b").build()
    BROKEN.add("b")
    with pytest.raises(ConnectionError) as first:
        chart.run()
    with pytest.raises(ConnectionError) as second:
        chart.resume(first.value.checkpoint)  # type: ignore[attr-defined]
    recovery = second.value.checkpoint.recovery  # type: ignore[attr-defined]
    assert (recovery.runtime_stage_id, recovery.restore, recovery.discard) == ("b#2", {"k": 0}, ["b_dirty"])
    BROKEN.clear()
    assert chart.resume(second.value.checkpoint).state == {"k": 1}  # type: ignore[attr-defined]


def test_two_failed_fork_children_leave_no_resume_point() -> None:
    """Where no single resume point exists the error's checkpoint is ``None``."""
    chart = (
        flow_chart("Seed", stage("seed"), "seed")
        .add_list_of_function([("a", "A", stage("a")), ("b", "B", stage("b"))], fail_fast=True)
        .build()
    )
    BROKEN.update({"a", "b"})
    with pytest.raises(ConnectionError) as caught:
        chart.run()
    assert caught.value.checkpoint is None  # type: ignore[attr-defined]
    assert failed_checkpoint(caught.value) is None


def test_a_run_error_carries_its_checkpoint() -> None:
    """``RunError.checkpoint``: an unknown branch fails the decider; fixing the data resumes it."""
    plan = {"to": "nowhere"}
    chart = (
        flow_chart("Seed", stage("seed"), "seed")
        .add_decider_function("Route", lambda s: plan["to"], "route")
        .add_function_branch("a", "A", stage("a", {"a": 1}))
        .end()
        .build()
    )
    with pytest.raises(RunError) as caught:
        chart.run()
    assert isinstance(caught.value.checkpoint, Checkpoint) and caught.value.checkpoint.failed
    plan["to"] = "a"
    assert chart.resume(caught.value.checkpoint).state == {"a": 1}
    assert not isinstance(caught.value, ForkError)


def test_a_pause_checkpoint_serialises_without_a_recovery_key() -> None:
    """Absent means byte-identical: a pause's checkpoint JSON has no ``recovery`` key."""
    from flowchart import Pausable

    chart = flow_chart("Ask", Pausable(execute=lambda s: {"q": 1}, resume=lambda s, i: None), "ask").build()
    assert '"recovery"' not in chart.run().checkpoint.to_json()


def test_a_recovery_for_another_stage_is_refused_naming_the_field() -> None:
    """An edited failed checkpoint whose recovery names another stage fails closed."""
    chart = flow_chart("Seed", stage("seed"), "seed").add_function("B", stage("b"), "b").build()
    BROKEN.add("b")
    with pytest.raises(ConnectionError) as caught:
        chart.run()
    data = caught.value.checkpoint.to_dict()  # type: ignore[attr-defined]
    data["recovery"]["runtime_stage_id"] = "seed#0"
    with pytest.raises(CheckpointError, match=r"recovery\.runtime_stage_id must be an execution of 'b'"):
        Checkpoint.from_dict(data)


@settings(max_examples=150, deadline=None)
@given(
    st.one_of(
        st.none(),
        st.integers(),
        st.text(),
        st.lists(st.integers()),
        st.dictionaries(st.text(max_size=12), st.one_of(st.none(), st.integers(), st.text(), st.lists(st.text()))),
    )
)
def test_fuzz_a_checkpoint_recovery_loads_or_fails_closed(recovery: Any) -> None:
    """Any value in ``recovery`` either loads as a Recovery or is a ``CheckpointError`` naming ``$.recovery``."""
    chart = flow_chart("Seed", stage("seed"), "seed").add_function("B", stage("b"), "b").build()
    BROKEN.add("b")
    try:
        chart.run()
    except ConnectionError as err:
        data = err.checkpoint.to_dict()  # type: ignore[attr-defined]
    data["recovery"] = recovery
    try:
        loaded = Checkpoint.from_dict(data)
    except CheckpointError as exc:
        assert exc.path is not None and exc.path.startswith("$.recovery")
    else:
        assert recovery is None or loaded.recovery is not None


def test_a_failure_between_stages_inside_a_subflow_leaves_no_resume_point() -> None:
    """The loop cap inside a subflow is not a stage's failure: re-running the mount would repeat
    the inner stages that committed, so the error's checkpoint is ``None``."""
    from flowchart import LoopLimitError

    inner = flow_chart("Spin", stage("spin"), "spin").loop_to("spin").build()
    chart = flow_chart("Seed", stage("seed"), "seed").add_subflow_chart_next("sf", inner, mount_name="Inner").build()
    with pytest.raises(LoopLimitError) as caught:
        chart.run(max_iterations=3)
    assert caught.value.checkpoint is None


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=2, max_value=6), st.data())
def test_a_run_resumed_after_any_stage_failed_equals_a_clean_run(length: int, data: st.DataObject) -> None:
    """Whichever stage of a chain fails: resuming gives the clean run's state, each stage's body
    ran once more only for the failed one, and the two logs fold to that state."""
    failing = data.draw(st.integers(min_value=0, max_value=length - 1))
    builder = flow_chart("S0", stage("s0", {"k0": 0}), "s0")
    for index in range(1, length):
        builder = builder.add_function(f"S{index}", stage(f"s{index}", {f"k{index}": index}), f"s{index}")
    chart = builder.build()
    CALLS.clear()
    clean = chart.run().state
    CALLS.clear()
    failed, resumed, _before = fail_then_resume(chart, f"s{failing}")
    assert resumed.state == clean
    assert replay([*failed.commit_log, *resumed.commit_log]) == clean
    assert Counter({f"s{i}": 2 if i == failing else 1 for i in range(length)}) == CALLS


def test_a_failure_and_a_loop_deep_in_a_long_run_name_their_own_executions() -> None:
    """A level keeps only the runtime ids of its latest steps (a 30,000-stage run no longer keeps
    one per stage): a loop taken after 40 stages still names the stage that looped, and a stage
    failing on the second pass of a 40-stage loop still names its own execution in the recovery,
    and the resume re-runs only it."""
    passes: Counter[str] = Counter()

    def step(name: str) -> Any:
        def body(scope: Any) -> None:
            passes[name] += 1
            scope.total = scope.total + 1
            if name == "s37" and scope.total > 60 and "s37" in BROKEN:
                raise ConnectionError("s37 is down")

        return body

    builder = flow_chart("Seed", lambda s: setattr(s, "total", 0), "seed")
    for i in range(40):
        builder = builder.add_function(f"S{i}", step(f"s{i}"), f"s{i}")
    chart = (
        builder.add_decider_function("Again", lambda s: "more" if s.total < 80 else "done", "again")
        .add_function_branch("more", "More", lambda s: None, loop_to="s0")
        .add_function_branch("done", "Done", lambda s: setattr(s, "finished", True))
        .end()
        .build()
    )
    loops: list[Any] = []

    class Loops:
        id = "loops"

        def on_loop(self, event: Any) -> None:
            loops.append(event)

    whole = chart.run(recorders=[Loops()])
    assert whole.state == {"total": 80, "finished": True}
    looped = [c.runtime_stage_id for c in whole.commit_log if c.stage_id == "more"]
    assert len(loops) == 1 and [e.ctx.runtime_stage_id for e in loops] == looped
    BROKEN.add("s37")
    with pytest.raises(ConnectionError, match=r"^s37 is down$") as caught:
        chart.run()
    checkpoint = caught.value.checkpoint  # type: ignore[attr-defined]
    failed = failed_run(caught.value)
    assert failed is not None
    failed_commit = failed[0].commit_log[-1]
    assert failed_commit.stage_id == "s37"
    assert checkpoint.recovery.runtime_stage_id == failed_commit.runtime_stage_id
    BROKEN.clear()
    before = Counter(passes)
    resumed = chart.resume(Checkpoint.from_json(checkpoint.to_json()))
    assert resumed.commit_log[0].recovers == failed_commit.runtime_stage_id
    assert resumed.state == whole.state
    assert passes - before == Counter({"s37": 1, "s38": 1, "s39": 1})
