"""Deciders, ``decide()`` with its evidence, selectors and ``select()``."""

from __future__ import annotations

from typing import Any

import pytest
from engine_charts import CommitTape, exact, noop
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import RunError, decide, flow_chart, select


class FlowTape:
    """Records commit and decision events in order."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.evidence: list[Any] = []

    def on_commit(self, event: Any) -> None:
        self.events.append(f"commit {event.commit.runtime_stage_id}")

    def on_decision(self, event: Any) -> None:
        self.events.append(f"decision {event.ctx.runtime_stage_id}")
        self.evidence.append(event.evidence)


def decider_chart(check: Any, *, default: str | None = None, seed: Any = noop):
    """seed → check (a | b) → after; each branch records its id in ``taken``."""

    def branch(name: str):
        def fn(scope):
            scope.taken = name

        return fn

    branches = (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Check", check, "check")
        .add_function_branch("a", "A", branch("a"))
        .add_function_branch("b", "B", branch("b"))
    )
    if default is not None:
        branches = branches.set_default(default)
    return branches.end().add_function("After", noop, "after").build()


# -- deciders -----------------------------------------------------------------------------------


def test_decider_commits_before_its_branch_is_chosen():
    """The decider's writes are committed (and seen by the branch) before the decision."""
    seen: list[Any] = []

    def check(scope):
        scope.decided = True
        return "a"

    def seed(scope):
        scope.x = 1

    tape = FlowTape()
    chart = decider_chart(check, seed=seed)
    result = chart.run(recorders=[tape])
    assert tape.events == ["commit seed#0", "commit check#1", "decision check#1", "commit a#2", "commit after#3"]
    assert result.state == {"x": 1, "decided": True, "taken": "a"}
    seen.append(result.commit_log[1].trace[0].to_dict())
    assert seen == [{"path": ["decided"], "verb": "set", "value": True}]


def test_decider_accepts_a_branch_id_or_a_decide_result():
    """A plain string and a ``Decision`` both choose the branch."""
    assert decider_chart(lambda s: "b").run().state == {"taken": "b"}
    chart = decider_chart(lambda s: decide(s, [{"when": {"x": {"eq": 1}}, "then": "a"}], "b"))
    assert chart.run().state == {"taken": "b"}


def test_unknown_branch_falls_back_to_the_default():
    """An id no branch has takes the default branch when one is set."""
    assert decider_chart(lambda s: "zzz", default="b").run().state == {"taken": "b"}


def test_unknown_branch_without_default_raises_naming_decider_and_branch():
    """Without a default the run fails naming the decider and the returned id; the decider committed."""
    tape = CommitTape()

    def check(scope):
        scope.before = 1
        return "zzz"

    with pytest.raises(
        RunError,
        match=exact(
            "Scope-based decider 'Check' returned branch ID 'zzz' which doesn't match any child and no "
            "default branch is set — return one of its branch ids (a, b) or call set_default(branch_id)"
        ),
    ) as info:
        decider_chart(check).run(recorders=[tape])
    assert info.value.stage_id == "check"
    assert tape.ids == ["seed#0", "check#1"]
    assert tape.commits[1].trace[0].to_dict() == {"path": ["before"], "verb": "set", "value": 1}


def test_decision_default_not_among_branches_raises():
    """``decide(..., default)`` naming no branch is the same unknown-branch error."""
    chart = decider_chart(lambda s: decide(s, [], "nope"))
    with pytest.raises(RunError, match=r"^Scope-based decider 'Check' returned branch ID 'nope' which doesn't match"):
        chart.run()


def test_branch_continues_at_the_decider_next_stage():
    """After the branch, control goes to the decider's own next stage."""
    order: list[str] = []
    chart = (
        flow_chart("Seed", lambda s: order.append("seed"), "seed")
        .add_decider_function("Check", lambda s: order.append("check") or "a", "check")
        .add_function_branch("a", "A", lambda s: order.append("a"))
        .add_function_branch("b", "B", lambda s: order.append("b"))
        .end()
        .add_function("After", lambda s: order.append("after"), "after")
        .build()
    )
    chart.run()
    assert order == ["seed", "check", "a", "after"]


# -- decide() -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "threshold", "actual", "matched"),
    [
        ("eq", 1, 1, True),
        ("eq", 1, 2, False),
        ("ne", 1, 2, True),
        ("ne", 1, 1, False),
        ("gt", 1, 2, True),
        ("gt", 2, 2, False),
        ("gte", 2, 2, True),
        ("gte", 3, 2, False),
        ("lt", 3, 2, True),
        ("lt", 2, 2, False),
        ("lte", 2, 2, True),
        ("lte", 1, 2, False),
        ("in", ["x", "y"], "x", True),
        ("in", ["x", "y"], "z", False),
        ("not_in", ["x", "y"], "z", True),
        ("not_in", ["x", "y"], "x", False),
        ("in", "abc", "a", False),  # membership needs a list: a string is not a set of characters
        ("not_in", "abc", "z", False),
        ("gt", 1, "text", False),  # a comparison that cannot be made fails, it does not raise
    ],
)
def test_decide_operators(op, threshold, actual, matched):
    """Each filter operator compares the state value with the threshold."""
    seen: list[Any] = []

    def check(scope):
        decision = decide(scope, [{"when": {"v": {op: threshold}}, "then": "a"}], "b")
        seen.append(decision.branch)
        return decision

    def seed(scope):
        scope.v = actual

    decider_chart(check, seed=seed).run()
    assert seen == ["a" if matched else "b"]


def test_decide_first_match_wins_and_evidence_has_the_api_shape():
    """Rules run in order up to the first match; the evidence is footprintjs's, in snake_case."""
    tape = FlowTape()

    def seed(scope):
        scope.score = 0.4
        scope.tier = "gold"

    def check(scope):
        return decide(
            scope,
            [
                {"when": {"score": {"gt": 0.5}, "tier": {"eq": "gold"}}, "then": "a", "label": "High"},
                {"when": lambda s: s.tier == "gold", "then": "b", "label": "Gold"},
                {"when": {"score": {"lt": 1}}, "then": "a", "label": "never evaluated"},
            ],
            "a",
        )

    result = decider_chart(check, seed=seed).run(recorders=[tape])
    assert result.state["taken"] == "b"
    assert tape.evidence == [
        {
            "rules": [
                {
                    "type": "filter",
                    "rule_index": 0,
                    "branch": "a",
                    "matched": False,
                    "label": "High",
                    "conditions": [
                        {
                            "key": "score",
                            "op": "gt",
                            "threshold": 0.5,
                            "actual_summary": "0.4",
                            "result": False,
                            "redacted": False,
                        },
                        {
                            "key": "tier",
                            "op": "eq",
                            "threshold": "gold",
                            "actual_summary": '"gold"',
                            "result": True,
                            "redacted": False,
                        },
                    ],
                },
                {
                    "type": "function",
                    "rule_index": 1,
                    "branch": "b",
                    "matched": True,
                    "label": "Gold",
                    "inputs": [{"key": "tier", "value_summary": '"gold"', "redacted": False}],
                },
            ],
            "chosen": "b",
            "default": "a",
        }
    ]


def test_decide_empty_filter_never_matches():
    """``{"when": {}}`` is not a catch-all: it does not match."""
    seen: list[Any] = []

    def check(scope):
        decision = decide(scope, [{"when": {}, "then": "a"}], "b")
        seen.append(decision.evidence["rules"][0]["matched"])
        return decision

    assert decider_chart(check).run().state == {"taken": "b"}
    assert seen == [False]


def test_decide_missing_key_fails_its_condition():
    """A condition on a key that is not in the state fails (actual ``undefined``, as in footprintjs)."""
    seen: list[Any] = []

    def check(scope):
        decision = decide(scope, [{"when": {"nope": {"eq": None}}, "then": "a"}], "b")
        seen.append(decision.evidence["rules"][0]["conditions"][0])
        return decision

    decider_chart(check).run()
    assert seen == [
        {
            "key": "nope",
            "op": "eq",
            "threshold": None,
            "actual_summary": "undefined",
            "result": False,
            "redacted": False,
        }
    ]


def test_decide_function_rule_that_raises_does_not_match_and_records_the_error():
    """A raising rule is a non-match with ``match_error``; the next rule is tried."""
    seen: list[Any] = []

    def boom(scope):
        raise ValueError("no luck")

    def check(scope):
        decision = decide(scope, [{"when": boom, "then": "a"}, {"when": lambda s: True, "then": "b"}], "a")
        seen.append(decision.evidence["rules"][0])
        return decision

    assert decider_chart(check).run().state == {"taken": "b"}
    assert seen == [
        {
            "type": "function",
            "rule_index": 0,
            "branch": "a",
            "matched": False,
            "label": None,
            "inputs": [],
            "match_error": "ValueError: no luck",
        }
    ]


# -- selectors ------------------------------------------------------------------------------------


def selector_chart(pick: Any):
    """seed → pick (a | b | c run in parallel) → after."""

    def branch(name: str):
        def fn(scope):
            scope.ran = name

        return fn

    return (
        flow_chart("Seed", noop, "seed")
        .add_selector_function("Pick", pick, "pick")
        .add_function_branch("a", "A", branch("a"))
        .add_function_branch("b", "B", branch("b"))
        .add_function_branch("c", "C", branch("c"))
        .end()
        .add_function("After", noop, "after")
        .build()
    )


def test_selector_runs_the_listed_branches_in_declaration_order():
    """A list of ids runs those branches (each in ``runs/<id>``), committed in declaration order."""
    result = selector_chart(lambda s: ["c", "a"]).run()
    assert [c.runtime_stage_id for c in result.commit_log] == ["seed#0", "pick#1", "c#2", "a#3", "after#4"]
    assert result.state == {"runs": {"c": {"ran": "c"}, "a": {"ran": "a"}}}


def test_selector_accepts_a_select_result():
    """``select()`` picks every matching rule's branch, with evidence."""
    seen: list[Any] = []

    def pick(scope):
        scope.n = 5
        selection = select(
            scope,
            [
                {"when": {"n": {"gt": 1}}, "then": "a"},
                {"when": {"n": {"gt": 10}}, "then": "b"},
                {"when": lambda s: s.n == 5, "then": "c"},
            ],
        )
        seen.append((selection.branches, selection.evidence["selected"], len(selection.evidence["rules"])))
        return selection

    result = selector_chart(pick).run()
    assert seen == [(("a", "c"), ["a", "c"], 3)]
    assert sorted(result.state["runs"]) == ["a", "c"]


def test_selector_unknown_ids_raise_listing_the_available_ones():
    """An id no branch has is an error that lists the available branches."""
    with pytest.raises(
        RunError,
        match=exact(
            "Scope-based selector 'Pick' returned unknown child IDs: x, y. Available: a, b, c — "
            "return ids of its branches only"
        ),
    ):
        selector_chart(lambda s: ["a", "x", "y"]).run()


def test_empty_selection_runs_nothing():
    """An empty list (or ``None``) selects no branch; the chart goes on."""

    def returning(value: Any):
        return lambda scope: value

    for empty in ([], None):
        result = selector_chart(returning(empty)).run()
        assert [c.stage_id for c in result.commit_log] == ["seed", "pick", "after"]
        assert result.state == {}


def _recorded(output: Any) -> Any:
    """What the decider's commit records for ``output``, and what the copying path records."""
    from flowchart._engine.choices import decision_record
    from flowchart.lowlevel import copy_json

    if isinstance(output, list | tuple):
        return decision_record(output), None
    key = "chosen" if hasattr(output, "branch") else "selected"
    value = output.branch if key == "chosen" else list(output.branches)
    try:
        copied = copy_json({key: value, "evidence": output.evidence})
    except Exception:
        copied = {key: repr(value), "evidence": repr(output.evidence)}
    return decision_record(output), copied


_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.tuples(st.integers(), st.text(max_size=3)),
    st.lists(st.integers(), max_size=3),
    st.sets(st.integers(), max_size=2),
)


@settings(max_examples=150, deadline=None)
@given(
    thresholds=st.lists(_leaves, min_size=1, max_size=3),
    labels=st.lists(st.one_of(st.none(), st.text(max_size=6), st.integers()), min_size=3, max_size=3),
    then=st.one_of(st.text(min_size=1, max_size=4), st.integers()),
    raises=st.booleans(),
)
def test_decide_records_exactly_what_the_copying_path_records(
    thresholds: list[Any], labels: list[Any], then: Any, raises: bool
) -> None:
    """``decide()``/``select()`` evidence the commit keeps without a second copy is, value
    for value, what copying it (with its ``repr`` fallback) recorded before — for any
    thresholds, labels and branch ids, lone surrogates, tuples, sets and NaN included."""
    seen: list[Any] = []

    def check(scope: Any) -> Any:
        def rule(_scope: Any) -> bool:
            if raises:
                raise ValueError("bad \ud800 value")
            return scope.n > 1

        t = thresholds[-1]
        spec = {"in": t} if isinstance(t, tuple | list | set) else {"eq": t}
        rules = [
            {"when": {"n": spec}, "then": then, "label": labels[0]},
            {"when": rule, "then": "b", "label": labels[1]},
        ]
        seen.append(decide(scope, rules, {"branch": "a", "label": labels[2]}))
        seen.append(select(scope, [*rules[1:], {"when": {"n": {"gte": thresholds[0]}}, "then": "a"}]))
        return "a"

    def seed(scope: Any) -> None:
        scope.n = 2

    flow_chart("Seed", seed, "seed").add_decider_function("Check", check, "check").add_function_branch(
        "a", "A", noop
    ).end().build().run()
    for output in seen:
        recorded, copied = _recorded(output)
        assert recorded == copied


def test_a_decision_made_by_hand_is_copied_on_the_commit() -> None:
    """Only ``decide()`` marks its evidence as the record's own: a stage that returns its own
    ``Decision`` (and may keep changing its evidence) gets a private copy on the commit."""
    from flowchart import Decision

    kept: dict[str, Any] = {"why": ["first"]}

    def check(_scope: Any) -> Any:
        return Decision("a", kept)

    result = (
        flow_chart("Seed", noop, "seed")
        .add_decider_function("Check", check, "check")
        .add_function_branch("a", "A", noop)
        .end()
        .build()
        .run()
    )
    kept["why"].append("changed afterwards")
    assert result.commit_log[1].decision == {"chosen": "a", "evidence": {"why": ["first"]}}


def test_decide_evidence_is_kept_on_the_commit_without_a_second_copy() -> None:
    """The evidence ``decide()`` built (plain JSON already) is the commit's record as it is;
    a tuple threshold is copied into a list first, as the copying path recorded it."""
    made: list[Any] = []

    def check(scope: Any) -> Any:
        made.append(decide(scope, [{"when": {"n": {"in": (1, 2)}}, "then": "a", "label": "small"}], "a"))
        return made[-1]

    def seed(scope: Any) -> None:
        scope.n = 2

    result = (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Check", check, "check")
        .add_function_branch("a", "A", noop)
        .end()
        .build()
        .run()
    )
    record = result.commit_log[1].decision
    assert record["evidence"] is made[0].evidence
    assert record["evidence"]["rules"][0]["conditions"][0]["threshold"] == [1, 2]
