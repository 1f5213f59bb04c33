"""Fork positions read off a log: pauses, failures, maps, redaction — and a fuzz of the
decoder over logs that were not written by the chart (it refuses, it never crashes)."""

from __future__ import annotations

from typing import Any

import pytest
from fork_charts import big_chart
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import Commit, ForkError, Op, Pausable, Redaction, failed_run, flow_chart
from flowchart._engine.positions import Position, locate

CHART = big_chart()
LOG = CHART.run().commit_log


def ask_chart() -> Any:
    def seed(scope: Any) -> None:
        scope.n = 1

    def execute(scope: Any) -> Any:
        return {"question": "go on?"} if scope.n < 5 else None

    def resume(scope: Any, answer: Any) -> None:
        scope.answer = answer

    def after(scope: Any) -> None:
        scope.done = scope.n * 10

    return (
        flow_chart("Seed", seed, "seed")
        .add_pausable_function("Ask", Pausable(execute=execute, resume=resume), "ask")
        .add_function("After", after, "after")
        .build()
    )


def test_the_pause_of_a_paused_run_is_not_a_fork_point_but_before_it_is() -> None:
    """The last commit of a paused run is where it paused (resume it instead); forking at the
    commit before lets the pausable run again — and the fork can pause and be resumed."""
    chart = ask_chart()
    paused = chart.run()
    assert paused.paused
    with pytest.raises(ForkError, match=r"^commit 1 is not a fork point \(the run paused there\); the nearest valid"):
        chart.fork(paused, at=1)
    again = chart.fork(paused, at=0)
    assert again.paused and again.checkpoint is not None
    finished = chart.resume(again.checkpoint, "yes")
    assert finished.state == {"n": 1, "answer": "yes", "done": 10}
    skipped = chart.fork(paused, at=0, patch={"n": 7})  # execute returns None: no pause
    assert skipped.state == {"n": 7, "done": 70}


def test_a_resumed_stored_run_forks_after_its_resume() -> None:
    """In a stored run the pause's resume commits follow the pause: the boundary between is
    not a fork point, the boundary after the resume is."""
    from flowchart.store import MemoryStore

    store = MemoryStore()
    chart = ask_chart()
    chart.run(store=store, run_id="r")
    chart.resume_run("r", "yes", store=store)
    log = store.get("r").commit_log
    assert [c.stage_id for c in log] == ["seed", "ask", "ask", "after"]
    with pytest.raises(ForkError, match=r"commit 1 is not a fork point \(the run paused there"):
        chart.fork("r", at=1, store=store)
    assert chart.fork("r", at=2, patch={"n": 3}, store=store).state == {"n": 3, "answer": "yes", "done": 30}


def test_the_failing_commit_of_a_failed_run_is_not_a_fork_point() -> None:
    """A failed run forks before the stage that failed (it runs again), never after it."""

    def boom(scope: Any) -> None:
        if scope.n > 0:
            raise ValueError("boom")
        scope.ok = True

    chart = flow_chart("Seed", lambda s: s.__setattr__("n", 1), "seed").add_function("Boom", boom, "boom").build()
    with pytest.raises(ValueError) as info:
        chart.run()
    failed = failed_run(info.value)
    assert failed is not None
    with pytest.raises(ForkError, match=r"^commit 1 is not a fork point \(that stage failed"):
        chart.fork(failed[0], at=1)
    assert chart.fork(failed[0], at=0, patch={"n": 0}).state == {"n": 0, "ok": True}


def test_a_map_is_one_stage_for_forks() -> None:
    """Before the map its children all run again; between them is no fork point; after it
    the map's results stand."""
    chart = (
        flow_chart("Seed", lambda s: s.__setattr__("xs", [1, 2, 3]), "seed")
        .add_map("Sq", lambda s, ctx: ctx.item * ctx.item, "sq", items=lambda s: s.xs, into="squares")
        .add_function("Sum", lambda s: s.__setattr__("total", sum(s.squares)), "sum")
        .build()
    )
    run = chart.run()
    assert [c.runtime_stage_id for c in run.commit_log] == ["seed#0", "sq#2", "sq#3", "sq#4", "sq#1", "sum#5"]
    assert chart.fork(run, at=0, patch={"xs": [4]}).state["total"] == 16
    with pytest.raises(
        ForkError,
        match=r"^commit 2 is not a fork point \(the children of a map commit together\); "
        r"the nearest valid commits are 0 or 4$",
    ):
        chart.fork(run, at=2)
    assert chart.fork(run, at=4, patch={"squares": [5]}).state["total"] == 5


def test_a_patch_of_a_hidden_key_is_redacted_in_the_fork_commit() -> None:
    """The fork's commit goes through the run's redaction like any stage's."""
    fork = CHART.fork(CHART.run(), at=3, patch={"secret": "s3cret", "limit": 4}, redaction=Redaction(keys=["secret"]))
    ops = {op.path: op.value for op in fork.commit_log[0].trace}
    assert ops[("secret",)] == "REDACTED" and ops[("limit",)] == 4
    assert fork.commit_log[0].redacted_paths == ("secret",)
    assert fork.state["secret"] == "s3cret"


IDS = ["seed", "work", "check", "again", "done", "after", "x", "y", "final", "fork", "zzz"]
DECISIONS = st.none() | st.fixed_dictionaries({"chosen": st.sampled_from(["again", "done", "nope", 3])})


@st.composite
def logs(draw: Any) -> list[Commit]:
    """A mutation of the real log, or a made-up one: stage ids and decisions of any shape."""
    if draw(st.booleans()):
        log = list(LOG)
        for _ in range(draw(st.integers(0, 3))):
            i = draw(st.integers(0, len(log) - 1))
            c = log[i]
            log[i] = Commit(
                c.idx, c.stage, draw(st.sampled_from(IDS)), c.runtime_stage_id, c.trace, c.reads, (), draw(DECISIONS)
            )
        if draw(st.booleans()):
            del log[draw(st.integers(0, len(log) - 1)) :]
        return log
    size = draw(st.integers(0, 12))
    return [
        Commit(
            i,
            "s",
            draw(st.sampled_from(IDS)),
            f"{draw(st.sampled_from(IDS))}#{draw(st.integers(-1, 30))}",
            (Op(("k",), "set", i),),
            (),
            (),
            draw(DECISIONS),
        )
        for i in range(size)
    ]


@settings(max_examples=300, deadline=None)
@given(log=logs(), at=st.integers(-2, 15), ended=st.none() | st.just("it failed there"))
def test_the_position_decoder_refuses_or_locates_never_crashes(log: list[Commit], at: int, ended: Any) -> None:
    """Fuzz: any log against the chart either gives a position (with sane counters) or a
    ForkError — never an IndexError, KeyError or AttributeError."""
    try:
        position = locate(CHART, log, at, ended_early=ended)
    except ForkError as exc:
        assert str(exc)
        return
    assert isinstance(position, Position)
    assert position.counter >= 0 and -1 <= position.at < len(log)
    assert all(v >= 0 for v in position.visit_counts.values())


def test_a_selectors_recorded_choice_drives_the_fork() -> None:
    """After a selector's commit the fork runs the branches it recorded (not all of them),
    then what follows; every other boundary replays the parent's ending too."""
    chart = (
        flow_chart("Seed", lambda s: s.__setattr__("pick", ["b", "c"]), "seed")
        .add_selector_function("Pick", lambda s: list(s.pick), "pick")
        .add_function_branch("a", "A", lambda s: s.__setattr__("v", "a"))
        .add_function_branch("b", "B", lambda s: s.__setattr__("v", "b"))
        .add_function_branch("c", "C", lambda s: s.__setattr__("v", "c"))
        .end()
        .add_function("Join", lambda s: s.__setattr__("seen", sorted(s.runs)), "join")
        .build()
    )
    run = chart.run()
    assert [c.stage_id for c in run.commit_log] == ["seed", "pick", "b", "c", "join"]
    for at in (-1, 0, 1, 3, 4):
        assert chart.fork(run, at=at).state == run.state
    fork = chart.fork(run, at=1, patch={"pick": ["a"]})  # the choice was recorded: b and c run
    assert fork.state["seen"] == ["b", "c"]
    with pytest.raises(ForkError, match="nearest valid commits are 1 or 3"):
        chart.fork(run, at=2)
