"""Causal backtracking: ``causal_chain`` walks from a value back to the writes that made it."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import Commit, FlowChart, causal_chain, flow_chart
from flowchart._core.commits import Op

REJECTED = {"applicant": {"income": 5000, "debt": 2500, "credit_score": 720}}


def commit(idx: int, writes: str = "", reads: str = "", name: str | None = None) -> Commit:
    """A hand-made commit: ``writes``/``reads`` are space-separated top-level keys."""
    stage = name or f"s{idx}"
    ops = tuple(Op((key,), "set", idx) for key in writes.split())
    return Commit(idx, stage, stage, f"{stage}#{idx}", ops, tuple(reads.split()))


def test_loan_rejection_is_traced_back_to_the_application(loan_chart: FlowChart) -> None:
    """Why was the loan refused? Reject ← risk_tier ← RiskTier ← dti/credit_score ← ..."""
    log = loan_chart.run(REJECTED).commit_log
    chain = causal_chain(log, "approved")
    assert chain.format() == (
        "approved ← Reject (reject#4) [wrote: approved, reason]\n"
        "  risk_tier ← RiskTier (tier#2) [wrote: risk_tier]\n"
        "    credit_score ← Application (application#0) [wrote: income, debt, credit_score]\n"
        "    dti ← Dti (dti#1) [wrote: dti]\n"
        "      debt ← ↳ application#0 (see above)\n"
        "      income ← ↳ application#0 (see above)"
    )


def test_nodes_come_in_bfs_order_with_depth_and_first_link(loan_chart: FlowChart) -> None:
    """``nodes`` is breadth first from the root; ``linked_by`` is the key that found each."""
    chain = causal_chain(loan_chart.run(REJECTED).commit_log, "approved")
    assert [(n.runtime_stage_id, n.depth, n.linked_by) for n in chain.nodes] == [
        ("reject#4", 0, None),
        ("tier#2", 1, "risk_tier"),
        ("application#0", 2, "credit_score"),
        ("dti#1", 2, "dti"),
    ]
    assert chain.root is chain.nodes[0]
    assert chain.missing is None and not chain.truncated


def test_the_decider_is_not_a_writer_of_what_it_only_read(loan_chart: FlowChart) -> None:
    """Decide read risk_tier but wrote nothing, so it never appears as a parent."""
    chain = causal_chain(loan_chart.run(REJECTED).commit_log, "reason")
    assert "decide#3" not in [n.runtime_stage_id for n in chain.nodes]


def test_at_anchors_on_the_last_writer_at_or_before_that_commit(loan_chart: FlowChart) -> None:
    """``at=2`` asks about the value after commit 2: its writer is RiskTier itself."""
    log = loan_chart.run(REJECTED).commit_log
    assert causal_chain(log, "risk_tier", at=2).root is not None
    assert causal_chain(log, "risk_tier", at=2).nodes[0].runtime_stage_id == "tier#2"
    assert causal_chain(log, "risk_tier", at=1).missing == "never-written"


def test_a_key_never_written_comes_back_empty_and_says_so() -> None:
    """No writer is not an error: ``missing="never-written"`` and an explaining line."""
    chain = causal_chain([commit(0, "a")], "b")
    assert (chain.nodes, chain.missing, chain.root) == ((), "never-written", None)
    assert chain.format() == (
        "b: never written (no commit up to #0 wrote it; it is absent or comes from the initial state)"
    )


def test_an_empty_log_is_reported_as_such() -> None:
    """An empty log gives ``missing="empty-log"``."""
    chain = causal_chain([], "a")
    assert chain.missing == "empty-log"
    assert chain.format() == "a: never written (the log is empty; it is absent or comes from the initial state)"


def test_at_out_of_range_raises_like_replay() -> None:
    """``at`` beyond the log raises ``IndexError`` with ``replay``'s message."""
    with pytest.raises(IndexError, match=r"^commit index 3 is out of range: the log has 1 commits \(0\.\.0\)$"):
        causal_chain([commit(0, "a")], "a", at=3)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_depth": -1}, r"^max_depth must be an integer >= 0, got -1$"),
        ({"max_nodes": 0}, r"^max_nodes must be an integer >= 1, got 0$"),
        ({"max_nodes": True}, r"^max_nodes must be an integer >= 1, got True$"),
    ],
)
def test_bad_limits_are_refused(limits: dict[str, Any], message: str) -> None:
    """Limits must be sensible integers."""
    with pytest.raises(ValueError, match=message):
        causal_chain([commit(0, "a")], "a", **limits)


def test_a_stage_reading_its_own_key_links_to_the_previous_writer() -> None:
    """``count = count + 1``: a stage's own write is never its parent."""
    log = [commit(0, "count"), commit(1, "count", "count"), commit(2, "count", "count")]
    chain = causal_chain(log, "count")
    assert [n.runtime_stage_id for n in chain.nodes] == ["s2#2", "s1#1", "s0#0"]
    assert chain.format() == (
        "count ← s2 (s2#2) [wrote: count]\n  count ← s1 (s1#1) [wrote: count]\n    count ← s0 (s0#0) [wrote: count]"
    )


def test_a_diamond_is_a_dag_with_the_shared_ancestor_once() -> None:
    """Two paths to one writer: the node is kept once, the second edge says "see above"."""
    log = [
        commit(0, "x y", name="A"),
        commit(1, "p", "x", "B"),
        commit(2, "q", "y", "C"),
        commit(3, "r", "p q", "D"),
    ]
    chain = causal_chain(log, "r")
    assert [n.runtime_stage_id for n in chain.nodes] == ["D#3", "B#1", "C#2", "A#0"]
    assert [(e.key, e.runtime_stage_id) for e in chain.node("C#2").parents] == [("y", "A#0")]
    assert chain.format().splitlines()[-1] == "    y ← ↳ A#0 (see above)"


def test_reads_nothing_wrote_are_from_the_initial_state() -> None:
    """A read key with no earlier writer is listed in ``from_initial`` and printed as such."""
    chain = causal_chain([commit(0, "b", "a seed")], "b")
    assert chain.nodes[0].from_initial == ("a", "seed")
    assert chain.format() == "b ← s0 (s0#0) [wrote: b]\n  a ← initial state\n  seed ← initial state"


def test_depth_limit_truncates_and_flags_it() -> None:
    """A 30-step chain cut at depth 5 keeps 6 nodes and says it was truncated by depth."""
    log = [commit(0, "count")] + [commit(i, "count", "count") for i in range(1, 30)]
    chain = causal_chain(log, "count", max_depth=5)
    assert len(chain.nodes) == 6
    assert (chain.truncated, chain.truncated_by_depth, chain.truncated_by_nodes) == (
        True,
        True,
        False,
    )
    assert chain.format().endswith("\n⚠ slice truncated (depth limit)")


def test_node_limit_truncates_and_flags_it() -> None:
    """A stage reading 10 keys written by 10 stages, limited to 4 nodes, keeps 4."""
    keys = " ".join(f"k{i}" for i in range(10))
    log = [commit(i, f"k{i}") for i in range(10)] + [commit(10, "out", keys)]
    chain = causal_chain(log, "out", max_nodes=4)
    assert [n.runtime_stage_id for n in chain.nodes] == ["s10#10", "s0#0", "s1#1", "s2#2"]
    assert (chain.truncated_by_depth, chain.truncated_by_nodes) == (False, True)
    assert chain.format().endswith("⚠ slice truncated (node limit)")


def test_default_limits_are_footprintjs_20_and_100() -> None:
    """Defaults: depth 20 (21 nodes on a long chain)."""
    log = [commit(0, "n")] + [commit(i, "n", "n") for i in range(1, 50)]
    assert len(causal_chain(log, "n").nodes) == 21


def test_to_dict_is_json_safe_and_complete(loan_chart: FlowChart) -> None:
    """``to_dict`` survives JSON and names every node with its edges."""
    chain = causal_chain(loan_chart.run(REJECTED).commit_log, "approved")
    data = json.loads(json.dumps(chain.to_dict()))
    assert data["key"] == "approved" and data["at"] == 4 and data["truncated"] is False
    assert data["nodes"][1] == {
        "idx": 2,
        "stage": "RiskTier",
        "stage_id": "tier",
        "runtime_stage_id": "tier#2",
        "depth": 1,
        "linked_by": "risk_tier",
        "wrote": ["risk_tier"],
        "reads": ["credit_score", "dti"],
        "parents": [
            {"key": "credit_score", "runtime_stage_id": "application#0"},
            {"key": "dti", "runtime_stage_id": "dti#1"},
        ],
        "from_initial": [],
    }


def test_a_loop_traces_each_pass_to_the_one_before() -> None:
    """In a real loop each Work pass is caused by the previous pass's ``count``."""

    def seed(scope: Any) -> None:
        scope.count = 0

    def work(scope: Any) -> None:
        scope.count += 1

    def check(scope: Any) -> str:
        return "again" if scope.count < 3 else "done"

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Work", work, "work")
        .add_decider_function("Check", check, "check")
        .add_function_branch("again", "Again", lambda s: None, loop_to="work")
        .add_function_branch("done", "Done", lambda s: None)
        .end()
        .build()
    )
    chain = causal_chain(chart.run().commit_log, "count")
    assert [n.stage_id for n in chain.nodes] == ["work", "work", "work", "seed"]


def test_a_slash_key_finds_the_writer_of_a_nested_path() -> None:
    """``runs/b/x`` (a fork child's write) is found by its path when no top-level key matches."""
    log = [
        Commit(0, "A", "a", "a#0", (Op(("runs", "a", "x"), "set", 1),)),
        Commit(1, "B", "b", "b#1", (Op(("runs", "b", "x"), "set", 2),)),
    ]
    assert causal_chain(log, "runs/a/x").nodes[0].runtime_stage_id == "a#0"
    assert causal_chain(log, "runs").nodes[0].runtime_stage_id == "b#1"


KEYS = st.sampled_from("abcde")


@st.composite
def logs(draw: st.DrawFn) -> list[Commit]:
    """Random logs of up to 25 commits over five keys."""
    size = draw(st.integers(1, 25))
    out = []
    for i in range(size):
        writes = " ".join(draw(st.lists(KEYS, max_size=2, unique=True)))
        reads = " ".join(draw(st.lists(KEYS, max_size=3, unique=True)))
        out.append(commit(i, writes, reads))
    return out


@settings(max_examples=150)
@given(log=logs(), key=KEYS, data=st.data())
def test_every_edge_points_to_the_last_earlier_writer(log: list[Commit], key: str, data: Any) -> None:
    """Law: each edge's parent wrote the key, is earlier, and nobody wrote it in between."""
    at = data.draw(st.integers(-1, len(log) - 1))
    chain = causal_chain(log, key, at, max_depth=50, max_nodes=500)
    rids = [n.runtime_stage_id for n in chain.nodes]
    assert len(rids) == len(set(rids))
    writers = [c.idx for c in log[: at + 1] if key in c.written_keys]
    assert (chain.root.idx if chain.root else None) == (writers[-1] if writers else None)
    by_id = {n.runtime_stage_id: n for n in chain.nodes}
    for node in chain.nodes:
        for edge in node.parents:
            parent = by_id[edge.runtime_stage_id]
            assert parent.idx < node.idx and edge.key in parent.wrote
            assert all(edge.key not in log[i].written_keys for i in range(parent.idx + 1, node.idx))
        for read in node.from_initial:
            assert all(read not in log[i].written_keys for i in range(node.idx))


def test_a_chain_says_a_stage_depended_on_a_key_being_absent() -> None:
    """A stage that read a key nobody wrote and the run did not start with depended on it
    being ABSENT: the trace's ``why`` lists it as absent (read as undefined), not as initial
    state; a key the run started with stays ``initial state``."""
    from flowchart import flow_chart

    def seed(scope: Any) -> None:
        scope.limit = 5

    def choose(scope: Any) -> None:
        override = getattr(scope, "override", None)  # absent: a recorded missing read
        scope.mode = "manual" if override is not None else f"auto<{scope.limit}"

    chart = flow_chart("Seed", seed, "seed").add_function("Choose", choose, "choose").build()
    trace = chart.run().trace()
    chain = trace.why("mode")
    assert chain.root is not None and chain.root.absent == ("override",)
    assert chain.format().splitlines() == [
        "mode ← Choose (choose#1) [wrote: mode]",
        "  override ← absent (read as undefined)",
        "  limit ← Seed (seed#0) [wrote: limit]",
    ]
    from flowchart import causal_chain

    assert causal_chain(trace.commit_log, "mode").root.from_initial == ("override",)  # type: ignore[union-attr]


@settings(max_examples=100)
@given(log=logs(), keys=st.lists(KEYS, max_size=5, unique=True), data=st.data())
def test_chains_of_several_keys_are_each_keys_chain(log: list[Commit], keys: list[str], data: Any) -> None:
    """``causal_chains`` (the log indexed once, as the viewer asks for every key) gives for each
    key exactly what ``causal_chain`` gives, whatever ``at`` and the starting keys."""
    from flowchart._record.causal import causal_chains

    at = data.draw(st.integers(-1, len(log) - 1) | st.none())
    initial = data.draw(st.none() | st.lists(KEYS, max_size=3))
    chains = causal_chains(log, keys, at, initial=initial, max_depth=4, max_nodes=6)
    assert list(chains) == keys
    assert chains == {key: causal_chain(log, key, at, initial=initial, max_depth=4, max_nodes=6) for key in keys}


def test_chains_of_several_keys_refuse_what_one_chain_refuses() -> None:
    """The same errors as ``causal_chain``, raised before any key is walked; an empty log gives
    every key an ``empty-log`` chain."""
    from flowchart._record.causal import causal_chains

    log = [commit(0, "a"), commit(1, "b", "a")]
    with pytest.raises(IndexError, match=r"commit index 2 is out of range: the log has 2 commits \(0\.\.1\)"):
        causal_chains(log, ["a"], 2)
    with pytest.raises(ValueError, match="max_nodes must be an integer >= 1, got 0"):
        causal_chains(log, ["a"], max_nodes=0)
    assert {k: c.missing for k, c in causal_chains([], ["a", "b"]).items()} == {"a": "empty-log", "b": "empty-log"}


def test_why_across_goes_into_a_subflow_by_value_and_out_through_the_mount_reads() -> None:
    """Into: the mount wrote ``total`` with the value of the subflow's ``sum`` — the chain goes on in
    the subflow's log. Out: a chain asked inside the subflow goes on from the keys its input mapper
    read. A mapper that computes a value found in no inner key stops the crossing there."""

    def add(scope: Any, ctx: Any) -> None:
        scope.sum = scope.a + scope.b

    def seed(scope: Any, ctx: Any) -> None:
        scope.x, scope.y = 2, 3

    inner = flow_chart("Add", add, "add").build()
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_subflow_chart_next(
            "sum",
            inner,
            input_mapper=lambda p: {"a": p["x"], "b": p["y"]},
            output_mapper=lambda sub, p: {"total": sub["sum"], "double": sub["sum"] * 2},
        )
        .build()
    )
    trace = chart.run().trace()
    inward = trace.why_across("total")
    assert [(p.log, p.chain.key, p.via) for p in inward.parts] == [
        (None, "total", None),
        ("sum#1", "sum", "into the subflow sum#1: 'total' is its 'sum' (the same value)"),
    ]
    assert inward.parts[1].chain.root is not None and inward.parts[1].chain.root.runtime_stage_id == "sum/add#2"
    assert [p.log for p in trace.why_across("double").parts] == [None]  # computed by the mapper: no inner key
    outward = trace.why_across("sum", where="sum")
    assert [(p.log, p.chain.key) for p in outward.parts] == [("sum#1", "sum"), (None, "x"), (None, "y")]
    assert outward.format().splitlines()[3:5] == [
        "⤶ out of the subflow sum#1: its input mapper read 'x'",
        "  x ← Seed (seed#0) [wrote: x, y]",
    ]
    with pytest.raises(KeyError, match=r"no subflow execution 'nope' in this record \(known: sum#1\)"):
        trace.why_across("sum", where="nope")
