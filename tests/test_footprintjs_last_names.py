"""The last footprintjs names (issue 30): what footprintjs's own tests ask of them, in Python."""

from __future__ import annotations

import re

import pytest

from flowchart import BuildError, FlowChartBuilder, causal_chain, flow_chart, format_causal_chain


def _a(scope, ctx):  # type: ignore[no-untyped-def]
    scope.x = 1


def _b(scope, ctx):  # type: ignore[no-untyped-def]
    scope.y = scope.x + 1


def _d(scope, ctx):  # type: ignore[no-untyped-def]
    scope.z = scope.x + scope.y


def test_add_function_before_start_is_refused_in_footprintjs_words() -> None:
    """``add_function`` on a builder with no first stage raises at once, with footprintjs's
    "cursor undefined; call start() first" and the stage it could not add."""
    with pytest.raises(BuildError, match=re.escape("cursor undefined; call start() first — cannot add 'b'")):
        FlowChartBuilder().add_function("B", _b, "b")


def test_format_causal_chain_draws_the_chain_as_footprintjs_does() -> None:
    """The root first, each parent indented under the node that read it, ``← via key`` for the
    key it was reached through, ``[wrote: …]``, and a node drawn once (``↳ … (see above)``)."""
    run = flow_chart("A", _a, "a").add_function("B", _b, "b").add_function("D", _d, "d").build().run()
    assert format_causal_chain(causal_chain(run.commit_log, "z")) == "\n".join(
        [
            "D (d#2) [wrote: z]",
            "  A (a#0) ← via x [wrote: x]",
            "  B (b#1) ← via y [wrote: y]",
            "    ↳ a#0 (see above)",
        ]
    )


def test_format_causal_chain_says_where_a_slice_was_cut() -> None:
    """A chain cut by ``max_depth`` ends with footprintjs's horizon line."""
    run = flow_chart("A", _a, "a").add_function("B", _b, "b").add_function("D", _d, "d").build().run()
    text = format_causal_chain(causal_chain(run.commit_log, "z", max_depth=0))
    assert text.splitlines() == [
        "D (d#2) [wrote: z]",
        "⚠ slice truncated (max_depth reached) — older causes exist beyond this horizon",
    ]


def test_format_causal_chain_of_a_key_never_written() -> None:
    """A key no commit wrote is said in words, not drawn."""
    run = flow_chart("A", _a, "a").build().run()
    assert "never written" in format_causal_chain(causal_chain(run.commit_log, "nope"))


def test_event_log_numbers_what_it_records_and_folds_exclusively() -> None:
    """``EventLog`` records commits numbered by their place (whatever ``idx`` they carried),
    ``materialise(n)`` folds the first ``n`` onto its starting state, ``clear`` forgets the
    commits but not the starting state."""
    from flowchart.lowlevel import EventLog

    run = flow_chart("A", _a, "a").add_function("B", _b, "b").add_function("D", _d, "d").build().run()
    log = EventLog({"seed": 1})
    recorded = [log.record(c) for c in reversed(run.commit_log)]  # out of order: numbered by place
    assert [c.idx for c in recorded] == [0, 1, 2] and len(log) == 3
    assert [c.stage_id for c in log.list()] == ["d", "b", "a"]
    fresh = EventLog({"seed": 1})
    for commit in run.commit_log:
        fresh.record(commit)
    assert fresh.materialise(0) == {"seed": 1}
    assert fresh.materialise(2) == {"seed": 1, "x": 1, "y": 2}
    assert fresh.materialise() == {"seed": 1, "x": 1, "y": 2, "z": 3}
    fresh.clear()
    assert len(fresh) == 0 and fresh.materialise() == {"seed": 1} == fresh.initial_state()
    with pytest.raises(IndexError, match=r"EventLog.materialise\(4\): expected 0..0"):
        fresh.materialise(4)


def _pausing_chart_with_a_map():  # type: ignore[no-untyped-def]
    from flowchart import Pausable

    def items(scope, ctx):  # type: ignore[no-untyped-def]
        scope["items"] = [1, 2]

    ask = Pausable(execute=lambda scope, ctx: {"question": "ok?"}, resume=lambda scope, ctx, answer: None)
    inner = flow_chart("I", _a, "i1").build()
    return (
        flow_chart("A", items, "a")
        .add_map("M", inner, "m", items=lambda scope: scope["items"], into="out")
        .add_pausable_function("Ask", ask, "ask")
        .build()
    )


@pytest.mark.parametrize(
    ("field", "stage_id", "path"),
    [
        ("visit_counts", "ghost", "$.visit_counts.ghost"),
        ("visit_counts", "m/x/i1", "$.visit_counts['m/x/i1']"),
        ("visit_counts", "m/0/ghost", "$.visit_counts['m/0/ghost']"),
        ("loop_counts", "ghost", "$.loop_counts.ghost"),
    ],
)
def test_a_checkpoint_whose_counters_name_an_unknown_stage_is_refused_by_name(field, stage_id, path) -> None:  # type: ignore[no-untyped-def]
    """An edited checkpoint whose ``visit_counts``/``loop_counts`` name a stage the chart has not
    (at the top, or inside a map's chart child) is refused before anything runs, naming the id
    and where it is; the untouched checkpoint (whose counters name ``m/0/i1``) resumes."""
    import attrs

    from flowchart import CheckpointError

    chart = _pausing_chart_with_a_map()
    checkpoint = chart.run().checkpoint
    assert checkpoint is not None and "m/0/i1" in checkpoint.visit_counts
    assert chart.resume(checkpoint, "yes").checkpoint is None
    counts = {**getattr(checkpoint, field), stage_id: 1 if field == "visit_counts" else 0}
    extra = {"execution_count": checkpoint.execution_count + 1} if field == "visit_counts" else {}
    edited = attrs.evolve(checkpoint, **{field: counts}, **extra)
    message = f"Cannot resume: {field} names stage '{stage_id}', which is not in chart 'A' @ {path}"
    with pytest.raises(CheckpointError, match=re.escape(message)):
        chart.resume(edited, "yes")


def _decide_then_pause():  # type: ignore[no-untyped-def]
    from flowchart import Pausable, decide

    def seed(scope, ctx):  # type: ignore[no-untyped-def]
        scope.score = 700

    def choose(scope, ctx):  # type: ignore[no-untyped-def]
        return decide(scope, [{"when": {"score": {"gt": 600}}, "then": "ok", "label": "good score"}], "no")

    def ok(scope, ctx):  # type: ignore[no-untyped-def]
        scope.result = "ok"

    ask = Pausable(execute=lambda scope, ctx: {"question": "sure?"}, resume=lambda scope, ctx, answer: None)
    return (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Decide", choose, "decide")
        .add_function_branch("ok", "Ok", ok)
        .add_function_branch("no", "No", ok)
        .end()
        .add_pausable_function("Ask", ask, "ask")
        .build()
    )


def test_entries_for_step_as_footprintjs_reads_them() -> None:
    """``entries_for_step`` (footprintjs ``getEntriesForStep``): an unknown runtime id gives no
    entries; a decider's step holds its condition entry; a pause's entry is found under the
    paused stage's runtime id."""
    from flowchart import narrative

    told = narrative()
    _decide_then_pause().run(recorders=[told])
    assert told.entries_for_step("nope#9") == [] == told.get_entries_for_step("nope#9")
    assert told.get_entries_for_step("decide#1") == told.entries_for_step("decide#1")
    assert [e.type for e in told.entries_for_step("decide#1")] == ["stage", "step", "condition"]
    assert "chose Ok" in told.entries_for_step("decide#1")[-1].text
    assert [(e.type, e.text) for e in told.entries_for_step("ask#3")] == [("pause", "Execution paused at Ask.")]


def test_a_renderer_leaves_a_subflow_input_line_out_with_an_empty_string() -> None:
    """footprintjs's ``renderOp`` returning ``null`` leaves a subflow's ``Input:`` line out; here
    ``render_op`` returns ``""`` for that (``None`` keeps the default sentence)."""
    from flowchart import narrative

    def seed(scope, ctx):  # type: ignore[no-untyped-def]
        scope.a, scope.b = 1, 2

    inner = flow_chart("Inner", lambda scope, ctx: None, "inner").build()
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_subflow_chart_next("sub", inner, input_mapper=lambda s: {"a": s["a"], "b": s["b"]})
        .build()
    )

    class HideA:
        def render_op(self, ctx):  # type: ignore[no-untyped-def]
            return "" if ctx.key == "a" else None

    told = narrative(renderer=HideA())
    chart.run(recorders=[told])
    assert [line for line in told.lines() if "Input:" in line] == ["Input: b = 2"]


def _nested_subflows():  # type: ignore[no-untyped-def]
    inner = flow_chart("I2", _b_only, "i2").build()
    middle = flow_chart("I", _a, "i1").add_subflow_chart_next("deep", inner).build()
    return flow_chart("A", _a, "a").add_subflow_chart_next("sub", middle).build()


def _b_only(scope, ctx):  # type: ignore[no-untyped-def]
    scope.y = 2


def test_get_subtree_snapshot_gives_one_subflow_with_its_own_narrative() -> None:
    """``get_subtree_snapshot`` finds a subflow by path (slashes around it ignored) or by its
    mount's runtime id: its own state, commit log and starting state, and the narrative
    entries of its own stages with its entry and exit lines; ``None`` for a path no subflow
    ran at; ``list_subflow_paths`` names the paths."""
    from flowchart import get_subtree_snapshot, list_subflow_paths, narrative

    told = narrative()
    run = _nested_subflows().run(recorders=[told])
    assert sorted(list_subflow_paths(run)) == ["sub", "sub/deep"]
    deep = get_subtree_snapshot(run, "/sub/deep/", told.records())
    assert deep is not None and (deep.subflow_id, deep.path, dict(deep.state)) == ("deep", "sub/deep", {"y": 2})
    assert [c.stage_id for c in deep.commit_log] == ["sub/deep/i2"]
    assert [e.text for e in deep.narrative_entries or ()] == [
        "Entering the deep subflow.",
        "Stage 1: The process began with sub/deep/I2.",
        "Step 1: Write y = 2",
        "Exiting the deep subflow.",
    ]
    outer = get_subtree_snapshot(run, "sub#1")
    assert outer is not None and outer.path == "sub" and outer.narrative_entries is None
    assert get_subtree_snapshot(run, "nope") is None and get_subtree_snapshot(run, "") is None


def test_a_cancel_token_stops_a_loop_mid_iteration() -> None:
    """A ``CancelToken`` cancelled by a stage inside a ``loop_to`` loop (footprintjs's abort
    signal) ends the run before the next stage of that same iteration: the cancelling stage's
    write is committed, the loop does not go round again, and the error names the stage."""
    from flowchart import CancelToken, RunCancelledError, failed_run

    token = CancelToken()

    def seed(scope, ctx):  # type: ignore[no-untyped-def]
        scope.n = 0

    def work(scope, ctx):  # type: ignore[no-untyped-def]
        scope.n = scope.n + 1
        if scope.n == 3:
            token.cancel("enough")

    def check(scope, ctx):  # type: ignore[no-untyped-def]
        scope.checked = scope.n

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Work", work, "work")
        .add_function("Check", check, "check")
        .loop_to("work")
        .build()
    )
    with pytest.raises(RunCancelledError, match=re.escape("Run cancelled before stage 'check': enough")) as caught:
        chart.run(cancel=token, max_iterations=100)
    failed = failed_run(caught.value)
    assert failed is not None
    result, _failure = failed
    assert [c.stage_id for c in result.commit_log] == ["seed", "work", "check", "work", "check", "work"]
    assert result.state["n"] == 3 and result.state["checked"] == 2


def test_a_built_chart_records_its_subflow_definitions_and_mount_options() -> None:
    """The chart keeps every subflow it mounts by mount id, nested ones as ``outer/inner``
    (footprintjs's ``subflows``), and each mount keeps the options it was given — mappers,
    ``propagate_break``, ``array_merge`` (footprintjs's ``subflowMountOptions``) — whether it
    was mounted next, as a branch or as a fork child."""
    from flowchart import decide

    deep = flow_chart("Deep", _b_only, "d1").build()
    middle = flow_chart("Middle", _a, "m1").add_subflow_chart_next("deep", deep).build()

    def into(scope):  # type: ignore[no-untyped-def]
        return {"x": scope["x"]}

    def back(sub, parent):  # type: ignore[no-untyped-def]
        return {"y": sub["y"]}

    chart = (
        flow_chart("A", _a, "a")
        .add_subflow_chart_next("next", middle, input_mapper=into, output_mapper=back, array_merge="replace")
        .add_subflow_chart("child", deep, propagate_break=True)
        .add_decider_function("Pick", lambda scope, ctx: decide(scope, [], "sub"), "pick")
        .add_subflow_chart_branch("sub", deep, input_mapper=into)
        .end()
        .build()
    )
    assert sorted(chart.subflows) == ["child", "next", "next/deep", "sub"]
    assert chart.subflows["next/deep"] is deep and chart.subflows["next"] is middle
    mounted = chart.find("next").mount
    assert mounted is not None
    assert (mounted.input_mapper, mounted.output_mapper, mounted.array_merge) == (into, back, "replace")
    child = chart.find("child").mount
    assert child is not None and child.propagate_break is True and child.chart is deep
    branch = chart.find("sub").mount
    assert branch is not None and branch.input_mapper is into
