"""The builder: structure laws, build errors, graph, spec, description, fingerprint, mermaid."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest
from engine_charts import exact, inner_chart, noop, sample_chart

from flowchart import BuildError, FlowChart, RunError, flow_chart
from flowchart._chart.builder import FlowChartBuilder
from flowchart._core.values import copy_json

# -- build errors ---------------------------------------------------------------------------


def test_duplicate_stage_id_is_refused_naming_the_id():
    """Two stages with one id fail at build() with the id and the fix."""
    builder = flow_chart("Seed", noop, "seed").add_function("Work", noop, "seed")
    with pytest.raises(
        BuildError,
        match=exact("duplicate stage id 'seed': every stage, branch and child needs its own id — rename one"),
    ) as info:
        builder.build()
    assert info.value.stage_id == "seed"


def test_branch_id_colliding_with_a_stage_id_is_a_duplicate():
    """A branch id shares the stage-id namespace."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("seed", "Again", noop)
        .end()
    )
    with pytest.raises(
        BuildError,
        match=exact("duplicate stage id 'seed': every stage, branch and child needs its own id — rename one"),
    ):
        builder.build()


def test_decider_without_branches_is_refused():
    """A decider with no branch cannot choose anything."""
    builder = flow_chart("Seed", noop, "seed").add_decider_function("Check", noop, "check").end()
    with pytest.raises(
        BuildError, match=exact("decider at 'Check' requires at least one branch — add one with add_function_branch")
    ):
        builder.build()


def test_selector_without_branches_is_refused():
    """A selector with no branch cannot select anything."""
    builder = flow_chart("Seed", noop, "seed").add_selector_function("Pick", noop, "pick").end()
    with pytest.raises(
        BuildError, match=exact("selector at 'Pick' requires at least one branch — add one with add_function_branch")
    ):
        builder.build()


def test_unclosed_branch_list_is_still_validated():
    """Forgetting ``end()`` does not skip the branch checks."""
    branches = flow_chart("Seed", noop, "seed").add_decider_function("Check", noop, "check")
    with pytest.raises(BuildError, match=r"^decider at 'Check' requires at least one branch"):
        branches._builder.build()


def test_duplicate_branch_id_is_refused():
    """Two branches with one id under the same decider fail."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("a", "A", noop)
        .add_function_branch("a", "A again", noop)
        .end()
    )
    with pytest.raises(
        BuildError, match=exact("duplicate decider branch id 'a' under 'Check' — give each branch its own id")
    ):
        builder.build()


def test_branch_without_function_is_refused():
    """A branch must have a callable."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("a", "A", None)  # type: ignore[arg-type]
        .end()
    )
    with pytest.raises(
        BuildError,
        match=exact(
            "decider branch 'a' under 'check' has no function — provide a fn argument to add_function_branch('a', ...)"
        ),
    ):
        builder.build()


def test_stage_without_function_is_refused():
    """``add_function`` needs a callable."""
    builder = flow_chart("Seed", noop, "seed").add_function("Work", None, "work")  # type: ignore[arg-type]
    with pytest.raises(BuildError, match=exact("stage 'work' has no function — provide a fn argument to add_function")):
        builder.build()


def test_unknown_loop_target_is_refused():
    """``loop_to`` must name a stage id of this chart."""
    builder = flow_chart("Seed", noop, "seed").add_function("Work", noop, "work").loop_to("Seed")
    with pytest.raises(
        BuildError,
        match=exact(
            "loop_to('Seed') target not found — did you pass a stage name instead of id? — from 'work', "
            "pass the id of a stage declared in this chart"
        ),
    ):
        builder.build()


def test_second_loop_to_is_refused():
    """A chain loops once: a second ``loop_to`` is a mistake."""
    builder = flow_chart("Seed", noop, "seed").add_function("Work", noop, "work").loop_to("seed").loop_to("work")
    with pytest.raises(
        BuildError,
        match=exact("loop_to already defined at 'Work' — a chain loops once (to 'seed'): remove the second loop_to"),
    ):
        builder.build()


def test_stage_after_loop_to_is_refused():
    """A loop ends the chain: nothing can be appended after it."""
    builder = flow_chart("Seed", noop, "seed").loop_to("seed").add_function("Work", noop, "work")
    with pytest.raises(
        BuildError,
        match=exact(
            "cannot add 'work' after loop_to('seed'): a loop ends the chain — add stages before the loop_to call"
        ),
    ):
        builder.build()


def test_loop_from_a_branch_to_a_branch_is_refused():
    """A branch may only loop back to a main-chain stage, not to a sibling branch."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("a", "A", noop)
        .add_function_branch("b", "B", noop, loop_to="a")
        .end()
    )
    with pytest.raises(
        BuildError,
        match=exact(
            "loop_to('a') from a branch: 'a' is a branch or fork child — a loop must target a stage on "
            "the main chain, declared before the decider"
        ),
    ):
        builder.build()


def test_decider_with_fork_children_is_refused():
    """Decider and fork on one node: the decider would never run the children, so build() says so."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("a", "A", noop)
        .end()
        .add_list_of_function([("x", "X", noop)])
    )
    with pytest.raises(
        BuildError,
        match=exact(
            "decider 'check' also has parallel children (x): a decider runs only its branches — add a "
            "stage after it (add_function) and fork from that stage"
        ),
    ):
        builder.build()


def test_selector_with_fork_children_is_refused():
    """Selector and fork on one node is refused like the decider case."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_selector_function("Pick", noop, "pick")
        .add_function_branch("a", "A", noop)
        .end()
        .add_subflow_chart("sf", inner_chart())
    )
    with pytest.raises(BuildError, match=r"^selector 'pick' also has parallel children \(sf\)"):
        builder.build()


def test_unknown_default_branch_is_refused():
    """``set_default`` must name one of the branches."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", noop, "check")
        .add_function_branch("a", "A", noop)
        .add_function_branch("b", "B", noop)
        .set_default("zzz")
        .end()
    )
    with pytest.raises(BuildError, match=exact("set_default('zzz') under 'check': no such branch (branches: a, b)")):
        builder.build()


def test_selector_cannot_have_a_default():
    """Only deciders have a default branch."""
    builder = (
        flow_chart("Seed", noop, "seed")
        .add_selector_function("Pick", noop, "pick")
        .add_function_branch("a", "A", noop)
        .set_default("a")
        .end()
    )
    with pytest.raises(BuildError, match=exact("set_default('a') on selector 'pick': only deciders have a default")):
        builder.build()


def test_build_on_an_empty_builder_is_refused():
    """A builder with no root stage cannot build."""
    with pytest.raises(
        BuildError, match=exact("empty tree; call start() first — start the chart with flow_chart(name, fn, id)")
    ):
        FlowChartBuilder().build()


@pytest.mark.parametrize("bad_id", ["a/b", "a#1"])
def test_ids_with_runtime_separators_are_refused(bad_id):
    """'/' and '#' separate runtime stage ids, so no id may contain them."""
    builder = flow_chart("Seed", noop, "seed").add_function("Work", noop, bad_id)
    with pytest.raises(
        BuildError,
        match=exact(
            f"stage id '{bad_id}' contains '/' or '#', which runtime stage ids use as separators — "
            "choose an id without them"
        ),
    ):
        builder.build()


def test_non_string_description_is_refused():
    """A description that is not a string is never silently ignored."""
    builder = flow_chart("Seed", noop, "seed", description=42)  # type: ignore[arg-type]
    with pytest.raises(BuildError, match=exact("description of 'seed' must be a string, got int")):
        builder.build()


def test_subflow_needs_a_built_chart():
    """Mounting a builder (not a chart) is refused with the fix."""
    unbuilt = flow_chart("In", noop, "inner")
    builder = flow_chart("Seed", noop, "seed").add_subflow_chart_next("sf", unbuilt)  # type: ignore[arg-type]
    with pytest.raises(
        BuildError, match=exact("subflow 'sf' needs a built FlowChart (call .build() on it), got FlowChartBuilder")
    ):
        builder.build()


# -- graph --------------------------------------------------------------------------------------


def test_graph_nodes_are_stage_ids_with_subflow_stages_prefixed():
    """Every stage is a node; subflow stages appear under ``mount/inner`` ids."""
    graph = sample_chart().graph
    assert isinstance(graph, nx.DiGraph)
    assert sorted(graph.nodes) == sorted(
        ["seed", "work", "check", "again", "done", "done/inner", "done/inner2", "after", "x", "y"]
    )
    assert graph.nodes["check"]["kind"] == "decider"
    assert graph.nodes["seed"]["name"] == "Seed"
    assert graph.nodes["seed"]["description"] == "seeds state"
    assert graph.nodes["seed"]["function"] is noop
    assert graph.nodes["done"]["kind"] == "subflow"


def test_graph_edges_carry_their_kind():
    """Edges are next, branch (with the branch id), child, subflow and loop."""
    edges = {(a, b): data for a, b, data in sample_chart().graph.edges(data=True)}
    assert edges == {
        ("seed", "work"): {"kind": "next"},
        ("work", "check"): {"kind": "next"},
        ("check", "again"): {"kind": "branch", "branch": "again"},
        ("check", "done"): {"kind": "branch", "branch": "done"},
        ("check", "after"): {"kind": "next"},
        ("again", "work"): {"kind": "loop"},
        ("done", "done/inner"): {"kind": "subflow"},
        ("done/inner", "done/inner2"): {"kind": "next"},
        ("after", "x"): {"kind": "child"},
        ("after", "y"): {"kind": "child"},
    }


def test_graph_without_loop_edges_is_a_dag():
    """Removing the ``loop`` edges leaves a DAG (with them, there is a cycle)."""
    graph = sample_chart().graph
    assert not nx.is_directed_acyclic_graph(graph)
    acyclic = graph.copy()
    acyclic.remove_edges_from([(a, b) for a, b, k in graph.edges(data="kind") if k == "loop"])
    assert nx.is_directed_acyclic_graph(acyclic)


def test_spec_is_json_safe():
    """The spec survives a JSON round trip unchanged and holds no functions."""
    spec = sample_chart().spec
    assert json.loads(json.dumps(spec)) == spec
    assert copy_json(spec) == spec
    assert spec["root"] == "seed"
    assert [s["id"] for s in spec["stages"]] == ["seed", "work", "check", "again", "done", "after", "x", "y"]


def test_description_text():
    """The description lists the main chain, branches, loops, subflows and forks in words."""
    assert sample_chart().description == "\n".join(
        [
            "FlowChart: Seed",
            "Steps:",
            "1. Seed — seeds state",
            "2. Work",
            "3. Check — decides (branches: again, done)",
            "   → again: Again (loops back to work)",
            "   → done: Sub",
            "4. After",
            "   → runs in parallel: X, Y",
        ]
    )


def test_description_of_a_linear_loop_and_a_subflow_step():
    """A chain loop names the step it returns to; a mounted subflow lists its own steps."""
    chart = (
        flow_chart("Seed", noop, "seed")
        .add_subflow_chart_next("sf", inner_chart(), mount_name="Inner")
        .loop_to("seed")
        .build()
    )
    assert chart.description == "\n".join(
        [
            "FlowChart: Seed",
            "Steps:",
            "1. Seed",
            "2. [Sub-Execution: Inner] — FlowChart: In",
            "   1. In",
            "   2. In2",
            "   → loops back to step 1 (seed)",
        ]
    )


SUBPROCESS_FINGERPRINT = (
    "import sys; sys.path.insert(0, {dir!r}); from engine_charts import sample_chart; print(sample_chart().fingerprint)"
)


def test_fingerprint_is_stable_across_processes():
    """Two fresh interpreters with different hash seeds compute the same fingerprint."""
    code = SUBPROCESS_FINGERPRINT.format(dir=str(Path(__file__).parent))
    prints = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        prints.append(out.stdout.strip())
    assert prints == [sample_chart().fingerprint] * 2
    assert len(prints[0]) == 64


def test_fingerprint_changes_with_the_structure_but_not_the_functions():
    """A new stage, a renamed stage or another branch changes the fingerprint; other fns do not."""

    def other(scope):
        scope.x = 1

    def build(name: str = "Work", fn=noop, extra: bool = False) -> FlowChart:
        b = flow_chart("Seed", noop, "seed").add_function(name, fn, "work")
        if extra:
            b = b.add_function("More", noop, "more")
        return b.build()

    base = build().fingerprint
    assert build(fn=other).fingerprint == base
    assert build(name="Labour").fingerprint != base
    assert build(extra=True).fingerprint != base


def test_mermaid_draws_deciders_loops_subflows_and_forks():
    """Deciders are diamonds, branches labelled, loops dotted, subflows boxed subgraphs."""
    assert sample_chart().to_mermaid() == "\n".join(
        [
            "flowchart TD",
            '  seed["Seed"]',
            '  work["Work"]',
            '  check{"Check"}',
            '  again["Again"]',
            '  subgraph done["Sub"]',
            '    done_inner["In"]',
            '    done_inner2["In2"]',
            "  end",
            '  after["After"]',
            '  x["X"]',
            '  y["Y"]',
            "  seed --> work",
            "  work --> check",
            "  check --> after",
            '  check -->|"again"| again',
            '  check -->|"done"| done',
            "  again -.->|loop| work",
            "  done_inner --> done_inner2",
            "  after --> x",
            "  after --> y",
        ]
    )


def test_chart_is_not_changed_by_building_another():
    """A built chart keeps its structure when the builder that made it is reused."""
    builder = flow_chart("Seed", noop, "seed")
    chart = builder.build()
    before = chart.fingerprint
    assert chart.stage_ids() == ["seed"]
    assert before == flow_chart("Seed", noop, "seed").build().fingerprint


def test_a_chart_carries_its_entry_points_from_the_public_builder() -> None:
    """Nothing is bound at import time: ``flowchart.flow_chart`` / ``FlowChartBuilder`` hand their
    launcher to the chart they build, and a chart built with the structure's own builder says
    plainly it has no entry points (and how to build one that has)."""
    import flowchart
    from flowchart import _launch

    chart = flowchart.flow_chart("A", lambda scope: None, "a").build()
    assert chart._launcher() is _launch and chart.run().state == {}
    bare = FlowChartBuilder().start("A", lambda scope: None, "a").build()
    with pytest.raises(RunError, match=r"chart 'A' has no entry points: .* build it with flowchart\.flow_chart"):
        bare.run()


def test_a_built_charts_stages_cannot_change() -> None:
    """``build()`` freezes every stage node: assigning a field raises naming the stage, and the
    branches and children are read-only (before, ``chart.find("a").fn = other`` silently changed
    what every later run of the chart — and its fingerprint's meaning — would do)."""
    chart = flow_chart("A", lambda scope: None, "a").add_function("B", lambda scope: None, "b").build()
    with pytest.raises(AttributeError, match=r"stage 'a' belongs to a built chart: its 'fn' cannot change"):
        chart.find("a").fn = None
    with pytest.raises(TypeError):
        chart.find("a").branches["x"] = chart.find("b")
    assert isinstance(chart.find("a").children, tuple) and chart.run().state == {}
