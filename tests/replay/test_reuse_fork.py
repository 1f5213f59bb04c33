"""``chart.fork(..., reuse=True)``: stages whose recorded reads did not change are taken from the
record — and the fork is byte-identical (commits, decisions, state) to one that re-ran everything.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import ForkError, decide, flow_chart, narrative

KEYS = ("k0", "k1", "k2", "k3", "k4")


def _stage(index: int, reads: tuple[str, ...], write: str) -> Any:
    """Stage ``index``: writes a value no other stage, seed or patch can hold (its own range), so
    no execution ever writes a key with the value it already holds (see the reuse law)."""

    def body(scope: Any) -> None:
        values = [scope.get(key, 0) for key in reads]
        scope[write] = (index + 1) * 100_000 + sum(values) % 997

    body.__name__ = f"s{index}"
    return body


def _chart(spec: dict[str, Any]) -> Any:
    """Seed → stages… → Loop ⟲ (while lap < limit) → Check (decider on a key) → Hi | Lo → tail stages."""

    def seed(scope: Any) -> None:
        for n, key in enumerate(KEYS):
            scope[key] = n
        scope.lap = 0
        scope.limit = spec["laps"]

    def lap(scope: Any) -> None:
        scope.lap = scope.lap + 1
        scope[spec["lap_writes"]] = 10_000_000 + scope.lap * 1000 + scope.get(spec["lap_reads"], 0) % 997

    def loop(scope: Any) -> str:
        return "again" if scope.lap < scope.limit else "on"

    def check(scope: Any) -> Any:
        return decide(scope, [{"when": {spec["decide_on"]: {"gt": spec["threshold"]}}, "then": "hi"}], "lo")

    def hi(scope: Any) -> None:
        scope.side = "hi"

    def lo(scope: Any) -> None:
        scope.side = "lo"

    builder = flow_chart("Seed", seed, "seed")
    for i, (reads, write) in enumerate(spec["head"]):
        builder = builder.add_function(f"S{i}", _stage(i, reads, write), f"s{i}")
    builder = builder.add_function("Lap", lap, "lap")
    builder = (
        builder.add_decider_function("Loop", loop, "loop")
        .add_function_branch("again", "Again", lambda scope: None, loop_to="lap")
        .add_function_branch("on", "On", lambda scope: None)
        .end()
    )
    builder = (
        builder.add_decider_function("Check", check, "check")
        .add_function_branch("hi", "Hi", hi)
        .add_function_branch("lo", "Lo", lo)
        .end()
    )
    for i, (reads, write) in enumerate(spec["tail"], start=len(spec["head"])):
        builder = builder.add_function(f"S{i}", _stage(i, reads, write), f"s{i}")
    return builder.add_function("End", lambda scope: None, "end").build()


stages = st.lists(
    st.tuples(st.lists(st.sampled_from(KEYS), max_size=3, unique=True).map(tuple), st.sampled_from(KEYS)),
    max_size=5,
)
specs = st.fixed_dictionaries(
    {
        "head": stages,
        "tail": stages,
        "laps": st.integers(1, 3),
        "lap_reads": st.sampled_from(KEYS),
        "lap_writes": st.sampled_from(KEYS),
        "decide_on": st.sampled_from(KEYS),
        "threshold": st.one_of(st.integers(0, 1000), st.integers(100_000, 10_010_000)),
    }
)


@settings(max_examples=80, deadline=None)
@given(spec=specs, where=st.floats(0, 1), key=st.sampled_from((*KEYS, "limit")), value=st.integers(0, 1000))
def test_a_reuse_fork_commits_what_a_full_fork_commits(
    spec: dict[str, Any], where: float, key: str, value: int
) -> None:
    """Over random charts (stages reading and writing random keys, a loop, a decider) and random
    patches at random commits: the reuse-fork's commits, decisions and state are byte-identical
    to the full re-run's, and each reused stage is one whose reads held the parent's values.
    (The charts never write a key with the value it already holds: such a write leaves no op, so
    no record can say a stage made it — the one case the reuse law names as parting.)"""
    if key == "limit":
        value %= 4
    chart = _chart(spec)
    parent = chart.run({})
    at = int(where * (len(parent.commit_log) - 2))
    full = chart.fork(parent, at=at, patch={key: value})
    try:
        reused = chart.fork(parent, at=at, patch={key: value}, reuse=True)
    except ForkError as exc:  # the patched key is read by no later stage: refused, by design
        assert "the patch changes nothing a stage sees" in str(exc)
        assert all(key not in c.reads for c in parent.commit_log[at + 1 :])
        return
    assert [c.to_dict() for c in reused.commit_log] == [c.to_dict() for c in full.commit_log]
    assert reused.state == full.state
    parent_ids = {c.runtime_stage_id: c for c in parent.commit_log}
    for reuse in reused.reused:
        assert reuse.from_run == parent.run_id
        assert parent_ids[reuse.runtime_stage_id].idx == reuse.from_commit > at


def test_only_the_stages_downstream_of_the_change_run_and_the_narrative_names_the_rest() -> None:
    """Patch the key the decider reads: the loop (which reads none of it) is reused, each stage
    named; the decider and what follows re-run; the narrative tells each reused stage with the
    commit and run it came from."""
    chart = _chart(
        {"head": [], "tail": [], "laps": 1, "lap_reads": "k0", "lap_writes": "k1", "decide_on": "k2", "threshold": 5}
    )
    parent = chart.run({})
    fork = chart.fork(parent, at=0, patch={"k2": 900}, reuse=True, recorders=[narrative()])
    assert fork.state["side"] == "hi" and parent.state["side"] == "lo"
    reused = {r.runtime_stage_id for r in fork.reused}
    assert reused == {"lap#1", "loop#2", "on#3"}
    lines = fork.trace().narrative_lines or []
    assert f"Stage 2: Next step: Lap, reused from commit 1 of run {parent.run_id}." in lines


def test_a_patch_no_later_stage_reads_is_refused() -> None:
    """Reuse would take every stage: the fork says which key nothing reads."""
    chart = _chart(
        {"head": [], "tail": [], "laps": 1, "lap_reads": "k0", "lap_writes": "k1", "decide_on": "k2", "threshold": 5}
    )
    parent = chart.run({})
    with pytest.raises(ForkError, match=r"no stage after commit 0 of run '\w+' read 'k4': the patch changes nothing"):
        chart.fork(parent, at=0, patch={"k4": 1}, reuse=True)


def test_the_narrative_tells_a_reused_decider_too() -> None:
    """A decider taken from the record: its stage line says so, and its recorded condition follows."""
    chart = _chart(
        {"head": [], "tail": [], "laps": 1, "lap_reads": "k0", "lap_writes": "k1", "decide_on": "k2", "threshold": 5}
    )
    parent = chart.run({})
    fork = chart.fork(parent, at=1, patch={"k2": 1}, reuse=True, recorders=[narrative()])
    lines = fork.trace().narrative_lines or []
    assert f"Stage 2: Next step: Loop, reused from commit 2 of run {parent.run_id}." in lines
    assert lines[lines.index(f"Stage 2: Next step: Loop, reused from commit 2 of run {parent.run_id}.") + 1].startswith(
        "[Condition]"
    )


def test_a_pipeline_fork_calls_the_model_only_for_the_patched_results_descendants() -> None:
    """The bench's 50-stage pipeline (stage i calls the model on stage i // 2's result): forked
    after stage 10 with its result rewritten, only 10's descendants (20, 21, 40..43) call the
    model again — and the last stage, which always runs; a full fork calls it 39 times."""
    from bench.pyfootprint.replay import pipeline_chart

    calls: list[int] = []
    chart = pipeline_chart(calls)
    parent = chart.run()
    calls.clear()
    full = chart.fork(parent, at=10, patch={"r10": "rewritten"})
    assert len(calls) == 39
    calls.clear()
    lean = chart.fork(parent, at=10, patch={"r10": "rewritten"}, reuse=True)
    assert sorted(calls) == [20, 21, 40, 41, 42, 43, 49]
    assert lean.state == full.state
    assert len(lean.reused) == 39 - 7


def test_the_command_line_reuse_fork_tells_each_reused_stage_on_stderr(tmp_path: Path) -> None:
    """``flowchart fork --reuse``: stdout is the same state a full fork prints; stderr names each
    reused stage; a patch nothing reads is one error line."""
    import contextlib
    import io

    from flowchart.cli import main

    def cli(*argv: str) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(list(argv))
        return status, out.getvalue(), err.getvalue()

    from bench.pyfootprint.replay import pipeline_chart

    trace = tmp_path / "run.json"
    parent = pipeline_chart([]).run()
    parent.trace().save(trace)
    args = ("fork", str(trace), "--chart", "bench.pyfootprint.replay:small_pipeline", "--at", "10", "--set", 'r10="x"')
    status, full, _ = cli(*args)
    assert status == 0
    status, lean, told = cli(*args, "--reuse")
    assert (status, lean) == (0, full)
    assert f"flowchart fork: n11#11: reused from commit 11 of run {parent.run_id}" in told.splitlines()
    status, _, err = cli(
        "fork",
        str(trace),
        "--chart",
        "bench.pyfootprint.replay:small_pipeline",
        "--at",
        "10",
        "--set",
        "nope=1",
        "--reuse",
    )
    assert status == 2 and "no stage after commit 10" in err
