"""``chart.fork``: every commit boundary of a chart with a loop, a decider, a subflow and a
parallel fork is a fork point (except inside the parallel batch), and the fork's final state
is the state of a run that had the patch written at that very boundary."""

from __future__ import annotations

from typing import Any

import pytest
from fork_charts import INJECT, big_chart
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import ForkError, LoopLimitError, replay

CHART = big_chart()
PARENT = CHART.run()
LOG = PARENT.commit_log
BATCH = 11  # between the children x and y of the parallel fork
VALID = [k for k in range(-1, len(LOG)) if k != BATCH]


def oracle(at: int, patch: dict[str, Any], **options: Any) -> Any:
    """A fresh run of the same chart that writes ``patch`` at the boundary after commit ``at``.

    A plain top-level stage writes it at the end of its own body; after a child or a mount
    (no body of its own at the top level) the next stage writes it before its body.
    """
    INJECT.clear()
    INJECT["patch"] = patch
    commit = LOG[at] if at >= 0 else None
    plain = commit is not None and commit.stage_id not in ("x", "y", "done")
    if plain:
        INJECT["after"] = commit.runtime_stage_id
    elif at + 1 < len(LOG):
        INJECT["before"] = LOG[at + 1].runtime_stage_id
    try:
        result = CHART.run(**options)
    finally:
        INJECT.clear()
    if not plain and at + 1 >= len(LOG):
        return {**result.state, **patch}
    return result.state


def test_the_parent_run_has_every_kind_of_boundary() -> None:
    """The chart loops twice, decides, mounts a subflow and forks: 14 commits in this order."""
    assert [c.runtime_stage_id for c in LOG] == [
        "seed#0",
        "work#1",
        "check#2",
        "again#3",
        "work#4",
        "check#5",
        "again#6",
        "work#7",
        "check#8",
        "done#9",
        "after#12",
        "x#13",
        "y#14",
        "final#15",
    ]
    assert PARENT.state["result"] == 56


@pytest.mark.parametrize("at", VALID)
def test_forking_any_commit_without_a_patch_ends_where_the_parent_ended(at: int) -> None:
    """With no patch the fork replays nothing and re-runs nothing: after its fork commit it
    runs exactly the parent's stages after ``at`` (same runtime ids) and ends in its state."""
    fork = CHART.fork(PARENT, at=at)
    assert fork.state == PARENT.state
    assert [c.runtime_stage_id for c in fork.commit_log[1:]] == [c.runtime_stage_id for c in LOG[at + 1 :]]
    assert fork.initial_state == replay(LOG, upto=at) if at >= 0 else fork.initial_state == {}


@pytest.mark.parametrize("at", VALID)
def test_forked_state_equals_a_run_patched_at_that_boundary(at: int) -> None:
    """The done-when check, per boundary, with a patch that changes the loop, the decider,
    the subflow's input and the fork children's reads."""
    patch = {"limit": 5, "total": 100}
    assert CHART.fork(PARENT, at=at, patch=patch).state == oracle(at, patch)


@settings(max_examples=60, deadline=None)
@given(
    at=st.sampled_from(VALID),
    patch=st.dictionaries(
        st.sampled_from(["n", "total", "limit", "laps", "doubled", "note"]),
        st.integers(min_value=-3, max_value=6),
        max_size=4,
    ),
)
def test_forked_state_equals_the_oracle_for_any_patch(at: int, patch: dict[str, int]) -> None:
    """Property: for every valid boundary and any patch of int values, fork == oracle
    (including the runs that hit the loop cap: both fail the same way)."""
    try:
        expected: Any = oracle(at, patch, max_iterations=20)
    except LoopLimitError as exc:
        expected = str(exc)
    try:
        got: Any = CHART.fork(PARENT, at=at, patch=patch, max_iterations=20).state
    except LoopLimitError as exc:
        got = str(exc)
    assert got == expected


def test_the_fork_commit_records_lineage_and_the_patch() -> None:
    """The fork's first commit is the fork itself: stage ``fork``, runtime id ``fork#N`` (N the
    counter the next stage takes), the patch as its ops, the parent and ``at`` as its record."""
    fork = CHART.fork(PARENT, at=4, patch={"limit": 2})
    first = fork.commit_log[0]
    assert (first.idx, first.stage, first.stage_id, first.runtime_stage_id) == (0, "Fork", "fork", "fork#5")
    assert [op.to_dict() for op in first.trace] == [{"path": ["limit"], "verb": "set", "value": 2}]
    assert first.decision == {"forked_from": PARENT.run_id, "at": 4}
    assert fork.run_id != PARENT.run_id
    assert replay(fork.commit_log, initial=fork.initial_state) == fork.state
    # limit 2 < n 2 is false: the decider now chooses "done" at once
    assert [c.stage_id for c in fork.commit_log[1:4]] == ["check", "done", "after"]


def test_loop_counts_continue_from_the_boundary() -> None:
    """The parent had taken the loop twice by commit 6 (again#6 → work): a fork there with
    max_iterations=3 may loop once more before the cap, exactly like an uninterrupted run."""
    with pytest.raises(LoopLimitError, match=r"Maximum loop iterations \(3\) exceeded for node 'work'"):
        CHART.fork(PARENT, at=6, patch={"limit": 100}, max_iterations=3)
    fork = CHART.fork(PARENT, at=6, patch={"limit": 4}, max_iterations=3)
    assert [c.stage_id for c in fork.commit_log].count("work") == 2  # work#7 and one more lap
    with pytest.raises(LoopLimitError):
        CHART.fork(PARENT, at=6, patch={"limit": 5}, max_iterations=3)


def test_visit_counts_continue_so_loop_iterations_are_numbered_on() -> None:
    """Events of the forked run carry the loop iteration the parent would have had there."""

    class Iterations:
        def __init__(self) -> None:
            self.seen: list[tuple[str, Any]] = []

        def on_stage_executed(self, event: Any) -> None:
            self.seen.append((event.ctx.runtime_stage_id, event.ctx.loop_iteration))

    whole, forked = Iterations(), Iterations()
    CHART.run(recorders=[whole])
    CHART.fork(PARENT, at=5, recorders=[forked])
    assert forked.seen[0] == ("fork#6", None)  # the fork itself, told as a stage
    assert forked.seen[1:] == whole.seen[-len(forked.seen[1:]) :]
    assert ("work#7", 2) in forked.seen


def test_a_boundary_inside_a_parallel_batch_is_refused_naming_the_nearest() -> None:
    """Between the children of one fork there is no resume point."""
    with pytest.raises(
        ForkError,
        match=r"^commit 11 is not a fork point \(the children of one parallel batch commit together\); "
        r"the nearest valid commits are 10 or 12$",
    ):
        CHART.fork(PARENT, at=11)


def test_out_of_range_and_non_int_at_are_refused() -> None:
    """``at`` must index the log (or be -1, before the first commit)."""
    with pytest.raises(ForkError, match=r"^commit 14 is out of range: the log has 14 commits \(fork at -1..13\)$"):
        CHART.fork(PARENT, at=14)
    with pytest.raises(TypeError, match=r"must be a commit index \(an int\), got str"):
        CHART.fork(PARENT, at="3")  # type: ignore[arg-type]


def test_a_run_of_another_chart_is_refused_naming_both_fingerprints() -> None:
    """Same stages, another structure: the fingerprints differ and both are named."""
    from flowchart import flow_chart

    other = flow_chart("Seed", lambda s: None, "seed").build()
    with pytest.raises(
        ForkError,
        match=f"fingerprint is {CHART.fingerprint[:16]}… but this chart's is "
        f"{other.fingerprint[:16]}…; fork it with the chart it ran on",
    ):
        other.fork(PARENT, at=0)


def test_a_trace_and_its_json_round_trip_fork_like_the_result() -> None:
    """A saved trace is as good a source as the result (subflow logs included)."""
    from flowchart import Trace

    trace = Trace.from_json(PARENT.trace().to_json())
    fork = CHART.fork(trace, at=8, patch={"total": 1})
    assert fork.state == CHART.fork(PARENT, at=8, patch={"total": 1}).state
    assert fork.state["doubled"] == 3  # the subflow ran again from the patched total


def test_a_bad_patch_is_refused_before_anything_runs() -> None:
    """A patch must be a dict of state keys to JSON values; run-input keys stay the parent's."""
    from flowchart import ReadonlyInputError, ScopeWriteError, flow_chart

    with pytest.raises(TypeError, match=r"must be a dict of state key -> JSON value, got list"):
        CHART.fork(PARENT, at=3, patch=[1])  # type: ignore[arg-type]
    with pytest.raises(ScopeWriteError, match=r"not JSON-safe"):
        CHART.fork(PARENT, at=3, patch={"x": object()})
    chart = flow_chart("A", lambda s, c: None, "a").add_function("B", lambda s: None, "b").build()
    run = chart.run({"user": "ada"})
    with pytest.raises(ReadonlyInputError, match=r"fork patch key 'user' is run input"):
        chart.fork(run, at=0, patch={"user": "bob"})


def test_the_narrative_tells_the_fork_and_its_patch_once() -> None:
    """The fork is the narrative's first stage, with one Write step per patched key (hidden
    keys redacted), then the stages after commit ``at``."""
    from flowchart import Redaction, narrative

    story = narrative()
    CHART.fork(PARENT, at=1, patch={"limit": 5, "token": "t0p"}, recorders=[story], redaction=Redaction(keys=["token"]))
    assert story.lines()[:4] == [
        f"Stage 1: The process began: forked from run {PARENT.run_id} at commit 1.",
        "Step 1: Write limit = 5",
        'Step 2: Write token = "[REDACTED]"',
        "Stage 2: Next, it moved on to Check.",
    ]
