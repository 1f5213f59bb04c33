"""Subflows: isolated state and log, input/output mappers, list merge, propagate_break."""

from __future__ import annotations

from typing import Any

import pytest
from engine_charts import CommitTape, exact, noop

from flowchart import ReadonlyInputError, RunError, flow_chart, replay


def test_subflow_without_mappers_is_isolated_both_ways():
    """Without mappers the subflow starts empty, sees no parent key and leaks nothing back."""
    seen: list[Any] = []

    def inner_stage(scope, ctx):
        seen.append((sorted(scope), dict(ctx.args)))
        scope.secret = "inner only"

    inner = flow_chart("In", inner_stage, "inner").build()

    def seed(scope):
        scope.parent = 1

    chart = flow_chart("Seed", seed, "seed").add_subflow_chart_next("sf", inner).build()
    result = chart.run({"arg": 1})
    assert seen == [([], {})]
    assert result.state == {"parent": 1}
    assert result.subflow_results["sf"].state == {"secret": "inner only"}
    assert [c.to_dict()["trace"] for c in result.commit_log] == [
        [{"path": ["parent"], "verb": "set", "value": 1}],
        [],
    ]


def test_input_mapper_seeds_the_subflow_state_and_its_args():
    """``input_mapper(parent_state)`` is the subflow's initial state and its ``ctx.args``."""
    seen: list[Any] = []

    def inner_stage(scope, ctx):
        seen.append((scope.amount, ctx.args["amount"]))
        scope.amount = scope.amount * 2

    inner = flow_chart("In", inner_stage, "inner").build()

    def seed(scope):
        scope.total = 21

    chart = flow_chart("Seed", seed, "seed").add_subflow_chart_next(
        "sf", inner, input_mapper=lambda parent: {"amount": parent["total"]}
    )
    result = chart.build().run()
    assert seen == [(21, 21)]
    sub = result.subflow_results["sf"]
    assert sub.initial == {"amount": 21}
    assert sub.state == {"amount": 42}
    assert replay(sub.commit_log, initial=sub.initial) == sub.state
    assert result.state == {"total": 21}


def test_output_mapper_gets_the_final_subflow_state_and_concatenates_lists():
    """``output_mapper(sub_state, parent_state)`` is merged as the mount's one commit; lists concat."""
    calls: list[Any] = []

    def inner_stage(scope):
        scope.items = ["c"]
        scope.note = "from inner"

    def out(sub, parent):
        calls.append((dict(sub), dict(parent)))
        return {"items": sub["items"], "note": sub["note"]}

    def seed(scope):
        scope.items = ["a", "b"]

    inner = flow_chart("In", inner_stage, "inner").build()
    chart = flow_chart("Seed", seed, "seed").add_subflow_chart_next("sf", inner, output_mapper=out).build()
    result = chart.run()
    assert calls == [({"items": ["c"], "note": "from inner"}, {"items": ["a", "b"]})]
    assert result.state == {"items": ["a", "b", "c"], "note": "from inner"}
    mount_commit = result.commit_log[1]
    assert (mount_commit.stage_id, mount_commit.runtime_stage_id) == ("sf", "sf#1")
    assert [op.to_dict() for op in mount_commit.trace] == [
        {"path": ["items"], "verb": "set", "value": ["a", "b", "c"]},
        {"path": ["note"], "verb": "set", "value": "from inner"},
    ]


def test_array_merge_replace_replaces_lists():
    """``array_merge="replace"`` writes the mapper's list as is."""

    def seed(scope):
        scope.items = ["a"]

    inner = flow_chart("In", lambda s: setattr(s, "items", ["z"]), "inner").build()
    chart = flow_chart("Seed", seed, "seed").add_subflow_chart_next(
        "sf", inner, output_mapper=lambda sub, parent: {"items": sub["items"]}, array_merge="replace"
    )
    assert chart.build().run().state == {"items": ["z"]}


def test_output_mapper_error_is_raised_not_swallowed():
    """A failing output mapper fails the run with its own error, after the mount commits."""

    def out(sub, parent):
        raise KeyError("missing in sub")

    chart = flow_chart("Seed", noop, "seed").add_subflow_chart_next(
        "sf", flow_chart("In", noop, "inner").build(), output_mapper=out
    )
    with pytest.raises(KeyError, match=r"^'missing in sub'$"):
        chart.build().run()


def test_input_mapper_must_return_a_dict():
    """An input mapper that returns something else fails naming the subflow."""
    chart = flow_chart("Seed", noop, "seed").add_subflow_chart_next(
        "sf", flow_chart("In", noop, "inner").build(), input_mapper=lambda parent: ["x"]
    )
    with pytest.raises(
        RunError,
        match=exact("input_mapper of subflow 'sf' returned list; it must return a dict (the subflow's initial state)"),
    ):
        chart.build().run()


def inner_stopper():
    def stop(scope, ctx):
        scope.stopped_inside = True
        ctx.stop("inner says stop")

    return flow_chart("Stop", stop, "stop").add_function("Skipped", noop, "skipped").build()


def test_inner_stop_ends_only_the_subflow_without_propagate_break():
    """Without ``propagate_break`` an inner stop ends the subflow; the parent goes on."""
    order: list[str] = []
    chart = (
        flow_chart("Seed", noop, "seed")
        .add_subflow_chart_next("sf", inner_stopper())
        .add_function("After", lambda s: order.append("after"), "after")
        .build()
    )
    result = chart.run()
    assert order == ["after"]
    assert [c.stage_id for c in result.subflow_results["sf"].commit_log] == ["sf/stop"]


def test_propagate_break_lets_an_inner_stop_end_the_parent():
    """With ``propagate_break=True`` nothing after the mount runs."""
    order: list[str] = []
    chart = (
        flow_chart("Seed", noop, "seed")
        .add_subflow_chart_next("sf", inner_stopper(), propagate_break=True)
        .add_function("After", lambda s: order.append("after"), "after")
        .build()
    )
    result = chart.run()
    assert order == []
    assert [c.stage_id for c in result.commit_log] == ["seed", "sf"]


def test_branch_subflow_is_stamped_with_the_mount_id_and_keeps_its_result():
    """A decider branch that is a subflow commits under its own id; ``subflow_results`` holds its run."""
    inner = flow_chart("In", lambda s: setattr(s, "x", 1), "inner").build()
    chart = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", lambda s: "sub", "check")
        .add_subflow_chart_branch(
            "sub", inner, mount_name="Sub", output_mapper=lambda sub, parent: {"from_sub": sub["x"]}
        )
        .end()
        .build()
    )
    result = chart.run()
    assert [(c.stage, c.runtime_stage_id) for c in result.commit_log] == [
        ("Seed", "seed#0"),
        ("Check", "check#1"),
        ("Sub", "sub#2"),
    ]
    assert result.state == {"from_sub": 1}
    assert result.subflow_results["sub"].state == {"x": 1}
    assert [c.runtime_stage_id for c in result.subflow_results["sub"].commit_log] == ["sub/inner#3"]


def test_output_mapper_cannot_write_a_run_input_key():
    """The mount's merge-back is a write like any other: run-input keys stay read-only."""
    chart = flow_chart("Seed", noop, "seed").add_subflow_chart_next(
        "sf", flow_chart("In", noop, "inner").build(), output_mapper=lambda sub, parent: {"k": 2}
    )
    with pytest.raises(
        ReadonlyInputError, match=exact('Cannot write to readonly input key "k" — use ctx.args to read input values')
    ):
        chart.build().run({"k": 1})


def test_input_mapper_error_commits_the_mount_then_raises():
    """A failing input mapper still leaves the mount's one commit, then its error propagates."""
    tape = CommitTape()

    def mapper(parent):
        raise ZeroDivisionError("no input")

    chart = flow_chart("Seed", noop, "seed").add_subflow_chart_next(
        "sf", flow_chart("In", noop, "inner").build(), input_mapper=mapper
    )
    with pytest.raises(ZeroDivisionError, match=exact("no input")):
        chart.build().run(recorders=[tape])
    assert tape.ids == ["seed#0", "sf#1"]


def test_chart_subflows_lists_mounted_charts_by_mount_id():
    """``chart.subflows`` maps each mount id (nested ones prefixed) to its chart."""
    from flowchart import flow_chart

    deep = flow_chart("Deep", lambda s: None, "deep").build()
    inner = flow_chart("In", lambda s: None, "in").add_subflow_chart_next("d", deep).build()
    chart = flow_chart("Seed", lambda s: None, "seed").add_subflow_chart_next("sf", inner, mount_name="Inner").build()
    assert chart.subflows == {"sf": inner, "sf/d": deep}
    assert flow_chart("Seed", lambda s: None, "seed").build().subflows == {}


def test_subflow_result_names_its_mount():
    """``SubflowResult.subflow_name`` is the mount's name."""
    from flowchart import flow_chart

    inner = flow_chart("In", lambda s: None, "in").build()
    chart = flow_chart("Seed", lambda s: None, "seed").add_subflow_chart_next("sf", inner, mount_name="Inner").build()
    assert chart.run().subflow_results["sf"].subflow_name == "Inner"


def test_subflow_results_hold_one_entry_per_execution_and_the_path_finds_the_latest():
    """A mount run twice (a loop) is two entries, each under its runtime id; the mount's path
    (footprintjs's key) finds the latest execution without being an entry of its own."""
    inner = flow_chart("In", lambda s, c: setattr(s, "seen", c.args["n"]), "inner").build()

    def count(scope):
        scope.n = scope.n + 1 if "n" in scope else 1

    chart = (
        flow_chart("Seed", count, "seed")
        .add_subflow_chart_next("sf", inner, input_mapper=lambda p: {"n": p["n"]})
        .add_decider_function("Check", lambda s: "again" if s["n"] < 2 else "done", "check")
        .add_function_branch("again", "Again", count, loop_to="sf")
        .add_function_branch("done", "Done", noop)
        .end()
        .build()
    )
    result = chart.run()
    runs = result.subflow_results
    assert list(runs) == ["sf#1", "sf#5"] and len(runs) == 2
    assert [sub.state["seen"] for sub in runs.values()] == [1, 2]
    assert "sf" in runs and runs["sf"] is runs["sf#5"] and runs.get("sf") is runs["sf#5"]
    assert [key for key, _ in runs.items()] == list(runs.keys())
