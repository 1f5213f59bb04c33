"""A pause in every place one may happen: what ran before, what the resume runs, and the
record it leaves.

For each chart of ``pause_charts``: the stages before the pause ran once, ``execute`` ran
once, ``resume`` ran once, the continuation is the right one, runtime ids never repeat
across the pause (the execution counter continues), and the commit log of the resumed
run is exactly the suffix after the pause. Each is resumed on the same chart object and
on a freshly built identical one.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pause_charts
import pytest

from flowchart import Checkpoint, FlowChart, RunResult


@attrs.frozen
class Case:
    """One chart: the calls and commit log (stage ids) of the first run and of each resume."""

    chart: str
    calls: list[list[str]]
    logs: list[list[str]]


CASES = [
    Case("linear", [["seed", "ask:execute"], ["ask:resume", "done"]], [["seed", "ask"], ["ask", "done"]]),
    Case("root", [["ask:execute"], ["ask:resume", "done"]], [["ask"], ["ask", "done"]]),
    Case(
        "decider_next",
        [["seed", "check", "ask:execute"], ["ask:resume", "after", "done"]],
        [["seed", "check", "ask"], ["ask", "after", "done"]],
    ),
    Case("decider_end", [["seed", "check", "ask:execute"], ["ask:resume"]], [["seed", "check", "ask"], ["ask"]]),
    Case(
        "decider_loop",
        [
            ["seed", "work", "check", "again", "work", "check", "ask:execute"],
            ["ask:resume", "work", "check", "stop"],
        ],
        [["seed", "work", "check", "again", "work", "check", "ask"], ["ask", "work", "check", "stop"]],
    ),
    Case(
        "branch_loop",
        [["seed", "work", "check", "ask:execute"], ["ask:resume", "work", "check", "done"]],
        [["seed", "work", "check", "ask"], ["ask", "work", "check", "done"]],
    ),
    Case(
        "selector",
        [["seed", "pick", "a", "p:execute", "b"], ["p:resume", "done"]],
        [["seed", "pick", "a", "p", "b"], ["p", "done"]],
    ),
    Case(
        "fork",
        [
            ["seed", "a", "sf:input_mapper", "inner.prep", "inner.ask:execute", "b"],
            ["inner.ask:resume", "inner.finish", "sf:output_mapper", "done"],
        ],
        [["seed", "a", "b"], ["sf", "done"]],
    ),
    Case(
        "subflow",
        [
            ["seed", "sf:input_mapper", "inner.prep", "inner.ask:execute"],
            ["inner.ask:resume", "inner.finish", "sf:output_mapper", "done"],
        ],
        [["seed"], ["sf", "done"]],
    ),
    Case(
        "nested",
        [
            ["seed", "outer:input_mapper", "outer.o1", "mid:input_mapper", "inner.prep", "inner.ask:execute"],
            ["inner.ask:resume", "inner.finish", "mid:output_mapper", "outer.o2", "outer:output_mapper", "done"],
        ],
        [["seed"], ["outer", "done"]],
    ),
    Case(
        "twice",
        [["seed", "ask1:execute"], ["ask1:resume", "mid", "ask2:execute"], ["ask2:resume", "done"]],
        [["seed", "ask1"], ["ask1", "mid", "ask2"], ["ask2", "done"]],
    ),
    Case(
        "loop",
        [
            ["seed", "ask:execute"],
            ["ask:resume", "check", "again", "ask:execute"],
            ["ask:resume", "check", "again", "ask:execute"],
            ["ask:resume", "check", "done"],
        ],
        [["seed", "ask"], ["ask", "check", "again", "ask"], ["ask", "check", "again", "ask"], ["ask", "check", "done"]],
    ),
]


def answer(n: int) -> dict[str, Any]:
    """The resume input of the ``n``-th resume."""
    return {"answer": n}


def drive(chart_name: str, *, fresh: bool) -> tuple[list[RunResult], list[list[str]]]:
    """Run, then resume until done — on the same chart, or on a new build of it each time.

    Returns every result and the calls each run and resume made.
    """
    calls: list[str] = []
    chart = pause_charts.CHARTS[chart_name](calls)
    results = [chart.run()]
    per_run = [list(calls)]
    while results[-1].paused:
        assert len(results) < 10, "the chart should finish"
        checkpoint = results[-1].checkpoint
        assert checkpoint is not None
        calls.clear()
        if fresh:
            chart = pause_charts.CHARTS[chart_name](calls)
        results.append(chart.resume(checkpoint, answer(len(results))))
        per_run.append(list(calls))
    return results, per_run


def all_runtime_ids(result: RunResult) -> list[str]:
    """Every runtime stage id the result recorded: its log and each subflow's own log."""
    ids = [c.runtime_stage_id for c in result.commit_log]
    for key, sub in result.subflow_results.items():
        if key == sub.runtime_stage_id:
            ids.extend(c.runtime_stage_id for c in sub.commit_log)
    return ids


@pytest.mark.parametrize("case", CASES, ids=[c.chart for c in CASES])
@pytest.mark.parametrize("fresh", [False, True], ids=["same-chart", "fresh-chart"])
def test_each_half_runs_once_and_the_continuation_is_right(case: Case, fresh: bool) -> None:
    """Every run and resume calls exactly the expected stages, in order, once each."""
    results, calls = drive(case.chart, fresh=fresh)
    assert calls == case.calls
    assert [r.paused for r in results] == [True] * (len(case.calls) - 1) + [False]


@pytest.mark.parametrize("case", CASES, ids=[c.chart for c in CASES])
def test_commit_log_of_a_resume_is_the_suffix_after_the_pause(case: Case) -> None:
    """The paused run logs up to the paused stage's execute; each resume logs from its resume on."""
    results, _ = drive(case.chart, fresh=False)
    assert [[c.stage_id for c in r.commit_log] for r in results] == case.logs


@pytest.mark.parametrize("case", CASES, ids=[c.chart for c in CASES])
def test_runtime_ids_never_repeat_across_pauses(case: Case) -> None:
    """The execution counter continues from the checkpoint: no runtime id is used twice."""
    results, _ = drive(case.chart, fresh=True)
    ids = [rid for r in results for rid in all_runtime_ids(r)]
    assert len(ids) == len(set(ids))
    for before, after in itertools.pairwise(results):
        assert before.checkpoint is not None
        resumed = [int(rid.rsplit("#", 1)[1]) for rid in all_runtime_ids(after)]
        assert min(resumed) == before.checkpoint.execution_count


@pytest.mark.parametrize("case", CASES, ids=[c.chart for c in CASES])
def test_same_chart_and_fresh_chart_resume_alike(case: Case) -> None:
    """Resuming on the chart object that paused and on a new build gives the same record."""
    same, _ = drive(case.chart, fresh=False)
    fresh, _ = drive(case.chart, fresh=True)
    assert [r.state for r in same] == [r.state for r in fresh]
    assert [[c.to_dict() for c in r.commit_log] for r in same] == [[c.to_dict() for c in r.commit_log] for r in fresh]


def test_linear_pause_state_and_checkpoint() -> None:
    """A top-level pause commits execute's writes, returns the pause data, and names the stage."""
    results, _ = drive("linear", fresh=False)
    paused, done = results
    assert paused.output == {"question": "ask", "n": 1}
    assert paused.state == {"seed": True, "ask_asked": 1}
    cp = paused.checkpoint
    assert cp is not None
    assert (cp.paused_stage_id, cp.subflow_path, cp.invoker_stage_id, cp.continuation_stage_id) == (
        "ask",
        [],
        None,
        None,
    )
    assert cp.pause_data == {"question": "ask", "n": 1}
    assert cp.shared_state == paused.state
    assert (cp.execution_count, cp.visit_counts) == (2, {"seed": 1, "ask": 1})
    assert done.state == {
        "seed": True,
        "ask_asked": 1,
        "ask_answer": {"answer": 1},
        "answers": [{"answer": 1}],
        "done": True,
    }
    assert done.checkpoint is None and done.initial_state == paused.state


def test_decider_branch_pause_names_invoker_and_continuation() -> None:
    """A branch pause records the decider as invoker and the decider's next as continuation."""
    results, _ = drive("decider_next", fresh=False)
    cp = results[0].checkpoint
    assert cp is not None
    assert (cp.invoker_stage_id, cp.continuation_stage_id) == ("check", "after")
    assert results[-1].state["after"] is True


def test_decider_followed_by_loop_keeps_the_loop_edge() -> None:
    """A branch pause under a decider that loops continues through the loop edge, counted."""
    results, _ = drive("decider_loop", fresh=True)
    cp = results[0].checkpoint
    assert cp is not None
    assert (cp.continuation_stage_id, cp.frames[-1].continuation_is_loop) == ("work", True)
    assert cp.loop_counts == {"work": 1}
    assert results[-1].state["n"] == 3


def test_selector_siblings_finish_first_and_keep_their_namespaced_writes() -> None:
    """Siblings of a paused selector branch commit before the pause; the resumed branch writes
    into its own ``runs/<id>``; then the selector's next runs."""
    results, _ = drive("selector", fresh=True)
    paused, done = results
    assert paused.state["runs"] == {"a": {"x": 1}, "p": {"p_asked": 1}, "b": {"x": 2}}
    cp = paused.checkpoint
    assert cp is not None
    assert [(f.stage_id, f.kind) for f in cp.frames] == [("pick", "fork"), ("p", "stage")]
    assert cp.frames[-1].namespace == ["runs", "p"]
    assert done.state["runs"] == {
        "a": {"x": 1},
        "p": {"p_asked": 1, "p_answer": {"answer": 1}, "answers": [{"answer": 1}]},
        "b": {"x": 2},
    }
    assert done.state["done"] is True


def test_fork_child_subflow_pause_keeps_siblings_and_merges_on_completion() -> None:
    """A subflow fork child that pauses: its siblings committed; on resume the subflow finishes,
    its output mapper merges, and the fork's continuation runs."""
    results, _ = drive("fork", fresh=True)
    paused, done = results
    assert paused.state == {"seed": True, "runs": {"a": {"x": 1}, "b": {"x": 2}}}
    cp = paused.checkpoint
    assert cp is not None
    assert [(f.stage_id, f.kind) for f in cp.frames] == [("seed", "fork"), ("sf", "mount"), ("sf/ask", "stage")]
    assert cp.subflow_path == ["sf"]
    assert done.state["from_sf"]["finish"] is True
    assert done.state["from_sf"]["inner.ask_answer"] == {"answer": 1}
    assert done.state["runs"] == {"a": {"x": 1}, "b": {"x": 2}}


def test_subflow_pause_records_the_subflow_state_and_its_log_so_far() -> None:
    """A pause inside a subflow: the checkpoint holds the subflow's state; the paused run's
    record holds the subflow's commits up to the pause; the resume logs the rest."""
    results, _ = drive("subflow", fresh=True)
    paused, done = results
    cp = paused.checkpoint
    assert cp is not None
    assert cp.subflow_states == {"sf": {"seed": "s0", "prep": True, "inner.ask_asked": 1}}
    assert cp.subflow_args == {"sf": {"seed": "s0"}}
    assert [c.stage_id for c in paused.subflow_results["sf"].commit_log] == ["sf/prep", "sf/ask"]
    assert [c.stage_id for c in done.subflow_results["sf"].commit_log] == ["sf/ask", "sf/finish"]
    assert done.subflow_results["sf"].initial == cp.subflow_states["sf"]


def test_nested_subflows_resume_without_rerunning_input_mappers() -> None:
    """Two subflows deep: each input mapper ran once (before the pause), each output mapper
    once (after the resume), and both subflows' logs continue where they stopped."""
    results, calls = drive("nested", fresh=True)
    flat = [c for run in calls for c in run]
    for mapper in ("outer:input_mapper", "mid:input_mapper", "outer:output_mapper", "mid:output_mapper"):
        assert flat.count(mapper) == 1
    paused, done = results
    cp = paused.checkpoint
    assert cp is not None
    assert cp.subflow_path == ["outer", "outer/mid"]
    assert cp.paused_stage_id == "outer/mid/ask"
    assert sorted(cp.subflow_states) == ["outer", "outer/mid"]
    assert [c.stage_id for c in done.subflow_results["outer"].commit_log] == ["outer/mid", "outer/o2"]
    assert [c.stage_id for c in done.subflow_results["outer/mid"].commit_log] == [
        "outer/mid/ask",
        "outer/mid/finish",
    ]
    assert done.state["from_outer"]["from_mid"]["finish"] is True


def test_pause_inside_a_loop_counts_visits_across_pauses() -> None:
    """A pausable inside a loop pauses on every pass; visit and loop counts carry over."""
    results, _ = drive("loop", fresh=True)
    checkpoints = [r.checkpoint for r in results[:-1]]
    assert [cp.visit_counts["ask"] for cp in checkpoints if cp] == [1, 2, 3]
    assert [cp.loop_counts.get("ask", 0) for cp in checkpoints if cp] == [0, 1, 2]
    assert [cp.pause_data for cp in checkpoints if cp] == [{"question": "ask", "n": n} for n in (1, 2, 3)]
    assert results[-1].state["answers"] == [{"answer": 1}, {"answer": 2}, {"answer": 3}]


def test_run_input_is_ctx_args_again_after_resume() -> None:
    """The run input travels in the checkpoint and is ``ctx.args`` (read-only) after resume."""
    seen: list[Any] = []

    def execute(scope: Any, ctx: Any) -> Any:
        seen.append(ctx.args.to_dict())
        return "wait"

    def resume(scope: Any, given: Any, ctx: Any) -> None:
        seen.append(ctx.args.to_dict())
        scope.who = ctx.args["user"]["name"]

    def build() -> FlowChart:
        from flowchart import Pausable, flow_chart

        return flow_chart("Ask", Pausable(execute, resume), "ask").build()

    paused = build().run({"user": {"name": "ada"}})
    assert paused.checkpoint is not None
    assert paused.checkpoint.run_input == {"user": {"name": "ada"}}
    done = build().resume(Checkpoint.from_json(paused.checkpoint.to_json()), None)
    assert seen == [{"user": {"name": "ada"}}, {"user": {"name": "ada"}}]
    assert done.state == {"who": "ada"}
    assert done.args == {"user": {"name": "ada"}}


@pytest.mark.parametrize("case", CASES, ids=[c.chart for c in CASES])
def test_a_resume_log_folds_from_the_state_at_the_pause(case: Case) -> None:
    """``replay(resume.commit_log, initial=resume.initial_state)`` is the resumed final state."""
    from flowchart import replay

    results, _ = drive(case.chart, fresh=True)
    for before, after in itertools.pairwise(results):
        assert after.initial_state == before.state
        assert replay(after.commit_log, initial=after.initial_state) == after.state


def test_a_pausable_followed_by_loop_to_loops_after_resume() -> None:
    """A main-chain pausable whose edge is a ``loop_to`` takes that loop after resuming."""
    from flowchart import Pausable, flow_chart

    calls: list[str] = []

    def ask(scope: Any) -> Any:
        calls.append("ask:execute")
        scope.n = getattr(scope, "n", 0) + 1
        return None if scope.n > 2 else {"n": scope.n}

    def check(scope: Any) -> str:
        calls.append("check")
        return "go" if getattr(scope, "n", 0) < 2 else "end"

    chart = (
        flow_chart("Seed", pause_charts.plain(calls, "seed"), "seed")
        .add_decider_function("Check", check, "check")
        .add_function_branch("go", "Go", pause_charts.plain(calls, "go"))
        .add_function_branch("end", "End", lambda s, ctx: ctx.stop("done"))
        .end()
        .add_pausable_function("Ask", Pausable(ask, lambda s, i: calls.append("ask:resume")), "ask")
        .loop_to("check")
        .build()
    )
    result = chart.run()
    while result.paused:
        result = chart.resume(Checkpoint.from_json(result.checkpoint.to_json()), None)  # type: ignore[union-attr]
    assert calls == [
        "seed",
        "check",
        "go",
        "ask:execute",
        "ask:resume",
        "check",
        "go",
        "ask:execute",
        "ask:resume",
        "check",
    ]
    assert result.state["n"] == 2


@pytest.mark.parametrize("name", ["selector", "fork", "nested"])
async def test_arun_and_aresume_record_what_run_and_resume_do(name: str) -> None:
    """In an event loop (children run concurrently) the pause and resume record the same."""
    sync, _ = drive(name, fresh=True)
    chart = pause_charts.CHARTS[name]([])
    paused = await chart.arun()
    assert paused.checkpoint is not None
    done = await pause_charts.CHARTS[name]([]).aresume(Checkpoint.from_json(paused.checkpoint.to_json()), answer(1))
    assert paused.state == sync[0].state
    assert done.state == sync[-1].state
    assert [c.to_dict() for c in done.commit_log] == [c.to_dict() for c in sync[-1].commit_log]


async def test_async_halves_pause_and_resume() -> None:
    """``execute`` and ``resume`` may be coroutine functions."""
    from flowchart import Pausable, flow_chart

    async def execute(scope: Any) -> Any:
        scope.asked = True
        return "wait"

    async def resume(scope: Any, given: Any) -> None:
        scope.got = given

    chart = flow_chart("Ask", Pausable(execute, resume), "ask").build()
    paused = await chart.arun()
    assert paused.paused and paused.output == "wait"
    done = await chart.aresume(Checkpoint.from_json(paused.checkpoint.to_json()), 42)  # type: ignore[union-attr]
    assert done.state == {"asked": True, "got": 42}
