"""``chart.fork(at=(m, j))``: a fork at a commit inside a subflow's own log — commit ``j`` of
the subflow whose mount committed at ``m`` (``(m, j, k)`` one subflow deeper). Every inner
boundary is a fork point, and the fork's final state equals a run that had the patch written
inside the subflow at that very boundary."""

from __future__ import annotations

from typing import Any

import pytest
from fork_charts import INJECT, big_chart, stage
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import FlowChart, ForkError, Trace, flow_chart, narrative, replay

CHART = big_chart()
PARENT = CHART.run()
MOUNT = 9  # done#9: the subflow Sub, mounted as the decider's "done" branch
INNER = PARENT.subflow_results["done#9"].commit_log
MOUNTS = {"out/in#3"}  # the nested chart's inner mount (below)


def oracle(chart: FlowChart, inner_log: Any, j: int, patch: dict[str, Any]) -> dict[str, Any]:
    """A fresh run whose subflow stage writes ``patch`` at the boundary after inner commit ``j``
    (at the end of that stage's body; before the next stage's body for ``j = -1`` and after
    a nested mount, which has no body of its own)."""
    INJECT.clear()
    INJECT["patch"] = patch
    if j >= 0 and inner_log[j].runtime_stage_id not in MOUNTS:
        INJECT["after"] = inner_log[j].runtime_stage_id
    else:
        INJECT["before"] = inner_log[j + 1].runtime_stage_id
    try:
        return chart.run().state
    finally:
        INJECT.clear()


def test_the_subflow_has_its_own_log() -> None:
    """The parent's commit 9 is the mount; the subflow's log holds its two stages."""
    assert PARENT.commit_log[MOUNT].runtime_stage_id == "done#9"
    assert [c.runtime_stage_id for c in INNER] == ["done/double#10", "done/inc#11"]


@pytest.mark.parametrize("j", [-1, 0, 1])
def test_forking_any_inner_commit_without_a_patch_ends_where_the_parent_ended(j: int) -> None:
    """No patch: the fork re-runs only the subflow's stages after ``j`` (same runtime ids), the
    mount (same runtime id) and the parent's stages after it, and ends in the parent's state."""
    fork = CHART.fork(PARENT, at=(MOUNT, j))
    assert fork.state == PARENT.state
    assert [c.runtime_stage_id for c in fork.commit_log[1:]] == [c.runtime_stage_id for c in PARENT.commit_log[MOUNT:]]
    sub = fork.subflow_results["done#9"]
    assert [c.runtime_stage_id for c in sub.commit_log[1:]] == [c.runtime_stage_id for c in INNER[j + 1 :]]
    assert fork.initial_state == replay(PARENT.commit_log, upto=MOUNT - 1)
    assert sub.initial == replay(INNER, upto=j, initial=PARENT.subflow_results["done#9"].initial)


@pytest.mark.parametrize("j", [-1, 0, 1])
def test_forked_state_equals_a_run_patched_inside_the_subflow(j: int) -> None:
    """The patch lands in the subflow's state: the output mapper and the parent see it."""
    patch = {"t": 100}
    assert CHART.fork(PARENT, at=(MOUNT, j), patch=patch).state == oracle(CHART, INNER, j, patch)


@settings(max_examples=30, deadline=None)
@given(j=st.sampled_from([-1, 0, 1]), t=st.integers(-5, 50), extra=st.booleans())
def test_forked_state_equals_the_oracle_for_any_patch(j: int, t: int, extra: bool) -> None:
    """Property: any inner boundary, any int patch (also of a key the subflow never had)."""
    patch = {"t": t, **({"note": t} if extra else {})}
    assert CHART.fork(PARENT, at=(MOUNT, j), patch=patch).state == oracle(CHART, INNER, j, patch)


def test_the_record_shows_the_lineage_at_the_top_and_the_patch_inside_once() -> None:
    """The top-level fork commit carries the lineage and no ops (the parent's state is not
    patched); the subflow's log opens with ``done/fork`` carrying the patch; each log folds."""
    fork = CHART.fork(PARENT, at=(MOUNT, 0), patch={"t": 7})
    top = fork.commit_log[0]
    assert (top.stage_id, top.runtime_stage_id, top.trace) == ("fork", "fork#11", ())
    assert top.decision == {"forked_from": PARENT.run_id, "at": [9, 0]}
    sub = fork.subflow_results["done#9"]
    first = sub.commit_log[0]
    assert (first.stage_id, first.runtime_stage_id) == ("done/fork", "done/fork#11")
    assert [op.to_dict() for op in first.trace] == [{"path": ["t"], "verb": "set", "value": 7}]
    assert replay(sub.commit_log, initial=sub.initial) == sub.state == {"t": 8}
    assert replay(fork.commit_log, initial=fork.initial_state) == fork.state
    assert fork.state["doubled"] == 8


def test_the_narrative_tells_the_fork_then_the_patch_inside_the_subflow() -> None:
    """The story opens with the fork, enters the subflow, tells the patch's write there."""
    story = narrative()
    CHART.fork(PARENT, at=(MOUNT, 0), patch={"t": 7}, recorders=[story])
    lines = story.lines()
    assert lines[0] == f"Stage 1: The process began: forked from run {PARENT.run_id} at commit (9, 0)."
    patched = next(i for i, line in enumerate(lines) if "patched this subflow" in line)
    assert lines[patched + 1].strip().endswith("Write t = 7")


def test_a_trace_round_trip_forks_inside_a_subflow_like_the_result() -> None:
    """A saved trace keeps each subflow's log and initial state: as good a source."""
    trace = Trace.from_json(PARENT.trace().to_json())
    assert CHART.fork(trace, at=(9, 0), patch={"t": 1}).state == CHART.fork(PARENT, at=(9, 0), patch={"t": 1}).state


def test_a_commit_that_is_not_a_mount_is_refused() -> None:
    """``at[0]`` must be the commit of a subflow mount."""
    with pytest.raises(ForkError, match=r"^commit \(8\) \('check'\) is not a subflow mount that ran on its own"):
        CHART.fork(PARENT, at=(8, 0))
    with pytest.raises(ForkError, match=r"^commit \(14\) is out of range: the log has 14 commits$"):
        CHART.fork(PARENT, at=(14, 0))


def test_an_inner_index_out_of_range_is_refused_with_its_address() -> None:
    """The inner index is checked against the subflow's own log."""
    with pytest.raises(
        ForkError,
        match=r"^commit \(9, 2\) is out of range: the log has 2 commits "
        r"\(fork at \(9, -1\)..\(9, 1\)\)$",
    ):
        CHART.fork(PARENT, at=(9, 2))


def test_a_malformed_address_is_a_type_error() -> None:
    """A path is a tuple of ints; anything else names what was given."""
    with pytest.raises(TypeError, match=r"as a path must be commit indexes \(ints\), got \(9, '0'\)"):
        CHART.fork(PARENT, at=(9, "0"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"an int\), got str; a commit inside a subflow is a tuple of ints"):
        CHART.fork(PARENT, at="9:0")  # type: ignore[arg-type]
    assert CHART.fork(PARENT, at=(3,)).state == CHART.fork(PARENT, at=3).state  # a path of one is the index


def batch_sub_chart() -> FlowChart:
    """A subflow with a parallel batch inside, and a subflow mounted as a parallel child."""
    inner = (
        flow_chart("P", lambda s: s.__setattr__("v", 1), "p")
        .add_list_of_function([("a", "A", lambda s: None), ("b", "B", lambda s: None)])
        .add_function("Q", lambda s: s.__setattr__("v", s.v + 1), "q")
        .build()
    )
    return (
        flow_chart("Seed", lambda s: None, "seed")
        .add_subflow_chart_next("sub", inner, mount_name="Sub", output_mapper=lambda i, p: {"v": i["v"]})
        .add_function("End", lambda s: None, "end")
        .build()
    )


def test_an_inner_boundary_inside_a_parallel_batch_names_the_nearest_inner_commits() -> None:
    """Inside a subflow as at the top: between parallel children is no fork point."""
    chart = batch_sub_chart()
    run = chart.run()
    assert [c.stage_id for c in run.subflow_results["sub#1"].commit_log] == ["sub/p", "sub/a", "sub/b", "sub/q"]
    with pytest.raises(
        ForkError,
        match=r"^commit \(1, 1\) is not a fork point \(the children of one parallel "
        r"batch commit together\); the nearest valid commits are \(1, 0\) or \(1, 2\)$",
    ):
        chart.fork(run, at=(1, 1))
    assert chart.fork(run, at=(1, 2), patch={"v": 10}).state["v"] == 11


def test_a_subflow_mounted_as_a_parallel_child_is_refused() -> None:
    """A mount that ran beside its siblings has no single state to enter."""
    inner = flow_chart("P", lambda s: s.__setattr__("v", 1), "p").build()
    chart = (
        flow_chart("Seed", lambda s: None, "seed")
        .add_subflow_chart("s", inner, mount_name="S")
        .add_subflow_chart("t", inner, mount_name="T")
        .build()
    )
    run = chart.run()
    assert [c.stage_id for c in run.commit_log] == ["seed", "s", "t"]
    with pytest.raises(ForkError, match=r"^commit \(1\) \('s'\) is not a subflow mount that ran on its own"):
        chart.fork(run, at=(1, 0))


def nested_chart() -> FlowChart:
    """seed → Outer (a → Inner (p → q) → b) → final; every stage can take the oracle's patch."""

    def seed(scope: Any) -> None:
        scope.x = 2

    def a(scope: Any) -> None:
        scope.v = scope.v + 1

    def p(scope: Any) -> None:
        scope.w = scope.w * 3

    def q(scope: Any) -> None:
        scope.w = scope.w + 2

    def b(scope: Any) -> None:
        scope.v = scope.v * 10 + scope.got

    def final(scope: Any) -> None:
        scope.result = scope.res + 1

    inner = flow_chart("P", stage(p), "p").add_function("Q", stage(q), "q").build()
    outer = (
        flow_chart("A", stage(a), "a")
        .add_subflow_chart_next(
            "in",
            inner,
            mount_name="Inner",
            input_mapper=lambda s: {"w": s["v"]},
            output_mapper=lambda i, o: {"got": i["w"]},
        )
        .add_function("B", stage(b), "b")
        .build()
    )
    return (
        flow_chart("Seed", stage(seed), "seed")
        .add_subflow_chart_next(
            "out",
            outer,
            mount_name="Outer",
            input_mapper=lambda s: {"v": s["x"]},
            output_mapper=lambda o, s: {"res": o["v"]},
        )
        .add_function("Final", stage(final), "final")
        .build()
    )


NESTED = nested_chart()
NESTED_RUN = NESTED.run()


def test_the_nested_chart_runs_two_levels_of_subflows() -> None:
    """Outer's log holds its mount of Inner; Inner's log is its own."""
    outer = NESTED_RUN.subflow_results["out#1"].commit_log
    assert [c.runtime_stage_id for c in outer] == ["out/a#2", "out/in#3", "out/b#6"]
    assert [c.runtime_stage_id for c in NESTED_RUN.subflow_results["out/in#3"].commit_log] == [
        "out/in/p#4",
        "out/in/q#5",
    ]
    assert NESTED_RUN.state["result"] == 3 * 10 + 11 + 1


@pytest.mark.parametrize("at", [(1, -1), (1, 0), (1, 1), (1, 2), (1, 1, -1), (1, 1, 0), (1, 1, 1)])
def test_every_boundary_of_nested_subflows_forks_like_the_oracle(at: tuple[int, ...]) -> None:
    """Outer's boundaries and Inner's (``(1, 1, k)``: commit k of the subflow mounted at
    Outer's commit 1): the fork equals a run patched there, and without a patch the parent."""
    assert NESTED.fork(NESTED_RUN, at=at).state == NESTED_RUN.state
    level = NESTED_RUN.subflow_results["out#1"].commit_log
    if len(at) == 3:
        level = NESTED_RUN.subflow_results["out/in#3"].commit_log
    key = "w" if len(at) == 3 else "v"
    patch = {key: 100}
    assert NESTED.fork(NESTED_RUN, at=at, patch=patch).state == oracle(NESTED, level, at[-1], patch)


def test_a_nested_fork_keeps_every_runtime_id() -> None:
    """Forking deep inside, with no patch, runs the same executions under the same ids."""
    fork = NESTED.fork(NESTED_RUN, at=(1, 1, 0))
    assert [c.runtime_stage_id for c in fork.commit_log] == ["fork#5", "out#1", "final#7"]
    assert [c.runtime_stage_id for c in fork.subflow_results["out#1"].commit_log] == ["out/in#3", "out/b#6"]
    assert [c.runtime_stage_id for c in fork.subflow_results["out/in#3"].commit_log] == [
        "out/in/fork#5",
        "out/in/q#5",
    ]


def test_a_run_that_failed_inside_a_subflow_forks_before_the_failing_inner_stage() -> None:
    """The inner commit of the stage that failed is no fork point; the one before is, and
    the fork runs the failed stage again over the patched subflow state."""
    from flowchart import failed_run

    def risky(scope: Any) -> None:
        if scope.v < 5:
            raise ValueError("too small")
        scope.ok = True

    inner = flow_chart("P", lambda s: s.__setattr__("v", 1), "p").add_function("Risky", risky, "risky").build()
    chart = (
        flow_chart("Seed", lambda s: None, "seed")
        .add_subflow_chart_next("sub", inner, mount_name="Sub", output_mapper=lambda i, p: {"ok": i.get("ok", False)})
        .build()
    )
    with pytest.raises(ValueError) as info:
        chart.run()
    failed = failed_run(info.value)
    assert failed is not None
    with pytest.raises(ForkError, match=r"^commit \(1, 1\) is not a fork point \(that stage failed"):
        chart.fork(failed[0], at=(1, 1))
    assert chart.fork(failed[0], at=(1, 0), patch={"v": 9}).state == {"ok": True}


def test_a_stored_run_forks_inside_its_subflow_and_the_fork_is_stored_whole() -> None:
    """A stored run keeps its subflow logs: it forks inside one (with the subflow's counts).
    The stored fork's log is the parent's commits before the mount then the fork's
    (``forked_at`` is the commit before the mount), its subflow log the parent's inner
    commits up to the boundary then the fork's — each folds from where it starts — and the
    stored fork forks again inside the same subflow."""
    from flowchart.store import MemoryStore

    store = MemoryStore()
    CHART.run(store=store, run_id="p")
    fork = CHART.fork("p", at=(MOUNT, 0), patch={"t": 7}, store=store, run_id="f")
    assert fork.state == oracle(CHART, INNER, 0, {"t": 7})
    child = store.get("f")
    assert (child.parent_run_id, child.forked_at, child.status) == ("p", MOUNT - 1, "done")
    assert [c.runtime_stage_id for c in child.commit_log][MOUNT - 1 : MOUNT + 2] == ["check#8", "fork#11", "done#9"]
    assert replay(child.commit_log) == fork.state
    sub = child.subflows["done#9"]
    assert [c.runtime_stage_id for c in sub.commit_log] == ["done/double#10", "done/fork#11", "done/inc#11"]
    assert replay(sub.commit_log, initial=sub.initial_state) == {"t": 8}
    again = CHART.fork("f", at=(MOUNT + 1, 1), patch={"t": 1}, store=store, run_id="g")
    assert again.state["doubled"] == 2
    assert [r.run_id for r in store.forks("f")] == ["g"]


def test_a_stored_source_carries_the_counts_inside_its_subflows() -> None:
    """A stored run's subflow logs are read: a fork of it holds the same visit counts (of
    the subflow's stages too) as a fork of the in-memory result."""
    from flowchart._rerun import prepare
    from flowchart.store import MemoryStore

    store = MemoryStore()
    CHART.run(store=store, run_id="p")
    stored = prepare(CHART, "p", MOUNT + 1, store)[1]
    memory = prepare(CHART, PARENT, MOUNT + 1, None)[1]
    assert stored.visit_counts == memory.visit_counts
    assert stored.visit_counts["done/double"] == 1


def pausing_sub_chart(fails: list[int]) -> FlowChart:
    """Sub: P (v = 60) → Ask (pauses while v < 50) → Q (doubles v; raises while ``fails`` has
    entries left); the parent's End follows the mount."""
    from flowchart import Pausable

    def ask(scope: Any) -> Any:
        return {"question": "more?"} if scope.v < 50 else None

    def answer(scope: Any, given: Any) -> None:
        scope.v = scope.v + given

    def q(scope: Any) -> None:
        if fails:
            fails.pop()
            raise ValueError("flaky")
        scope.v = scope.v * 2

    inner = (
        flow_chart("P", lambda s: s.__setattr__("v", 60), "p")
        .add_pausable_function("Ask", Pausable(execute=ask, resume=answer), "ask")
        .add_function("Q", q, "q")
        .build()
    )
    return (
        flow_chart("Seed", lambda s: None, "seed")
        .add_subflow_chart_next("sub", inner, mount_name="Sub", output_mapper=lambda i, p: {"v": i["v"]})
        .add_function("End", lambda s: s.__setattr__("done", True), "end")
        .build()
    )


def test_a_fork_that_pauses_inside_the_subflow_resumes_like_any_pause() -> None:
    """The fork re-enters the subflow; a pause there unwinds through the mount's frame, and
    the checkpoint resumes inside the subflow (the answer half, then Q, the mount, End)."""
    chart = pausing_sub_chart([])
    run = chart.run()
    assert run.state == {"v": 120, "done": True}
    fork = chart.fork(run, at=(1, 0), patch={"v": 3})
    assert fork.paused and fork.checkpoint is not None
    assert [c.stage_id for c in fork.commit_log] == ["fork"]
    assert chart.resume(fork.checkpoint, 20).state == {"v": 46, "done": True}


def test_a_fork_that_fails_inside_the_subflow_resumes_at_the_failed_inner_stage() -> None:
    """A failure inside the re-entered subflow leaves ``RunError.checkpoint`` like any run's:
    resuming it runs only the failed inner stage again, then the mount and End."""
    fails = [1]
    chart = pausing_sub_chart([])
    run = chart.run()
    chart = pausing_sub_chart(fails)
    with pytest.raises(ValueError, match="flaky") as info:
        chart.fork(run, at=(1, 1), patch={"v": 70})
    checkpoint = getattr(info.value, "checkpoint", None)
    assert checkpoint is not None and fails == []
    assert chart.resume(checkpoint).state == {"v": 140, "done": True}


@settings(max_examples=200, deadline=None)
@given(
    at=st.lists(st.integers(-2, 15), min_size=2, max_size=3).map(tuple),
    ids=st.lists(st.sampled_from(["done/double", "done/inc", "done/fork", "double", "zzz"]), max_size=4),
    drop=st.booleans(),
)
def test_an_inner_address_either_locates_or_is_refused_never_crashes(
    at: tuple[int, ...], ids: list[str], drop: bool
) -> None:
    """Fuzz: any path against the record — with the subflow's log rewritten to arbitrary
    stage ids, or missing — gives a position or a ForkError, never another error."""
    from flowchart import Commit
    from flowchart._engine.positions import MountPoint, locate_inside

    inner = [Commit(i, "s", sid, f"{sid}#{10 + i}", (), (), (), None) for i, sid in enumerate(ids)]
    subflows = {} if drop else {"done#9": inner}
    try:
        point = locate_inside(
            CHART,
            PARENT.commit_log,
            at,
            initial={},
            ended_early=None,
            subflows=subflows,
            initials={"done#9": {"t": 6}},
        )
    except ForkError as exc:
        assert str(exc)
        return
    assert isinstance(point, MountPoint) and point.counter >= 0


def test_a_stored_fork_inside_a_subflow_writes_a_trace_that_loads() -> None:
    """The fork's subflow log (the parent's inner commits, then the fork's) is numbered by position,
    so ``record_trace`` — the run's page, ``agent runs trace`` — loads it; it raised ``TraceError``
    ("commit idx 0 is not its position 1"), found beside the stored-row campaign."""
    from flowchart.store import MemoryStore
    from flowchart.store.export import record_trace

    store = MemoryStore()
    CHART.run(store=store, run_id="p")
    CHART.fork("p", at=(MOUNT, 0), patch={"t": 7}, store=store, run_id="f")
    sub = store.get("f").subflows["done#9"]
    assert [c.idx for c in sub.commit_log] == [0, 1, 2]
    trace = record_trace(store.get("f"))
    ids = [c.runtime_stage_id for c in trace.subflows["done#9"].commit_log]
    assert ids == ["done/double#10", "done/fork#11", "done/inc#11"]
