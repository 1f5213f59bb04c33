"""The bare engine's stage (issue 19, W1 ≤ 5 µs/stage): the values the hot path builds.

The engine makes each stage's ``Commit``, its ``Op``s and the stage's ``Scope`` by filling
their slots directly (``make_commit``, ``make_op``, ``scope_of``) instead of calling the
classes: these tests show the values are the very ones the public constructors make
(equal, same hash and repr, still frozen), and pin the number of Python calls a plain
stage costs, which does not depend on the machine's load.
"""

from __future__ import annotations

import sys
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values

from flowchart import Commit, flow_chart
from flowchart._core.commits import Op, make_commit, make_op
from flowchart._core.decide import Decision, decide
from flowchart._core.errors import ReadonlyInputError
from flowchart._core.retry import Attempt
from flowchart._core.scope import Scope, Transaction, scope_of, transaction_of

_paths = st.lists(st.text(max_size=6), min_size=1, max_size=3).map(tuple)
_verbs = st.sampled_from(["set", "merge", "append", "delete"])
_hashable = st.none() | st.booleans() | st.integers() | st.text(max_size=8)


def _same(made: Any, called: Any) -> None:
    assert made == called and repr(made) == repr(called) and type(made) is type(called)
    try:
        expected = hash(called)
    except TypeError:  # a list or dict inside: unhashable through either way
        with pytest.raises(TypeError, match="unhashable"):
            hash(made)
    else:
        assert hash(made) == expected


@given(_paths, _verbs, json_values(max_leaves=6))
def test_make_op_is_the_class_call(path: tuple[str, ...], verb: Any, value: Any) -> None:
    """``make_op(path, verb, value)`` equals ``Op(path, verb, value)``: ==, hash (or the same
    refusal to hash), repr and type; it stays frozen."""
    made = make_op(path, verb, value)
    _same(made, Op(path, verb, value))
    _same(make_op(path, "delete"), Op(path, "delete"))
    with pytest.raises(attrs.exceptions.FrozenInstanceError, match="can't set attribute"):
        made.verb = "set"  # type: ignore[misc]


@given(
    st.integers(min_value=0),
    st.text(max_size=6),
    st.text(max_size=8),
    st.lists(st.tuples(_paths, _verbs, _hashable), max_size=3),
    st.lists(st.text(max_size=4), max_size=3).map(tuple),
    st.lists(st.text(max_size=4), max_size=2).map(tuple),
    st.none() | st.fixed_dictionaries({"chosen": st.text(max_size=4)}),
    st.lists(st.builds(Attempt, st.integers(1, 5), st.text(max_size=5), st.text(max_size=5)), max_size=2).map(tuple),
    st.none() | st.text(max_size=6),
)
def test_make_commit_is_the_class_call(
    idx: int,
    stage: str,
    stage_id: str,
    ops: list[Any],
    reads: Any,
    redacted: Any,
    decision: Any,
    attempts: Any,
    recovers: Any,
) -> None:
    """``make_commit(...)`` equals ``Commit(...)`` with the same fields: ==, hash (or the same
    refusal to hash a decision dict), repr and type; it stays frozen."""
    trace = tuple(make_op(*op) for op in ops)
    fields = (idx, stage, stage_id, f"{stage_id}#{idx}", trace, reads, redacted, decision, attempts, recovers)
    made = make_commit(*fields)
    _same(made, Commit(*fields))
    assert made.to_dict() == Commit(*fields).to_dict()
    with pytest.raises(attrs.exceptions.FrozenInstanceError, match="can't set attribute"):
        made.idx = idx + 1  # type: ignore[misc]


def test_decide_makes_its_decision_by_the_class_and_owns_its_evidence() -> None:
    """``decide`` makes a plain ``Decision`` (its slot-filling fast path went: it bought < 5 %,
    docs/performance.md "Round seven") and still marks its plain evidence as owned."""
    scope = scope_of(Transaction({"n": 2}))
    decided = decide(scope, [{"when": lambda s: s["n"] > 1, "then": "big", "label": "n — large"}], "small")
    assert type(decided) is Decision and decided.branch == "big" and decided._owned is True


def test_a_transaction_made_by_position_is_the_keyword_one() -> None:
    """The engine makes a stage's transaction by position (round five: a keyword call cost a third
    more): ``Transaction(state, namespace, readonly)`` writes where, and refuses what, the keyword
    call does."""
    for txn in (
        Transaction({"runs": {"a": {}}, "x": 1}, ("runs", "a"), frozenset({"x"})),
        Transaction({"runs": {"a": {}}, "x": 1}, namespace=("runs", "a"), readonly=frozenset({"x"})),
    ):
        txn.set("y", 2)
        with pytest.raises(ReadonlyInputError, match='Cannot write to readonly input key "x"'):
            txn.set("x", 3)
        assert [op.to_dict() for op in txn.commit()] == [{"path": ["runs", "a", "y"], "verb": "set", "value": 2}]


def test_scope_of_is_the_class_call() -> None:
    """``scope_of(txn)`` is a ``Scope`` over ``txn``: reads, writes and ``transaction_of`` go
    to that very transaction, as with ``Scope(txn)``."""
    txn = Transaction({"a": 1})
    scope = scope_of(txn)
    assert type(scope) is Scope and transaction_of(scope) is txn
    scope.b = scope.a + 1
    assert [op.to_dict() for op in txn.commit()] == [{"path": ["b"], "verb": "set", "value": 2}]
    assert repr(scope) == repr(Scope(txn)) == "<Scope keys=['a', 'b']>"


def _every_verb(scope: Any) -> None:
    scope.n = getattr(scope, "n", 0) + 1
    if "items" in scope:
        scope.items.append(scope.n)  # an append to the list's view
        scope.user["tags"]["a"] = scope.n  # a nested merge
    else:
        scope.items = [scope.n]
    if scope.n == 2:
        del scope.gone


def _seed(scope: Any) -> None:
    scope.gone = 1
    scope.user = {"name": "ada", "tags": {"a": 0}}
    scope.items = []


def test_the_engines_commits_equal_the_public_constructors() -> None:
    """Each commit of a run with sets, merges, appends and a delete (at the top and in a fork
    child's namespace) equals the ``Commit`` / ``Op`` the public constructors make from its
    fields: ==, repr, type, and the same ``to_dict``."""
    chart = (
        flow_chart("Seed", _seed, "seed")
        .add_function("A", _every_verb, "a")
        .add_function("B", _every_verb, "b")
        .add_list_of_function([("x", "X", _every_verb), ("y", "Y", _every_verb)])
        .build()
    )
    log = chart.run().commit_log
    verbs = {op.verb for commit in log for op in commit.trace}
    assert verbs == {"set", "merge", "append", "delete"}
    assert any(len(op.path) > 1 for commit in log for op in commit.trace)
    for commit in log:
        trace = tuple(Op(op.path, op.verb, op.value) for op in commit.trace)
        rebuilt = Commit(**(attrs.asdict(commit, recurse=False) | {"trace": trace}))
        assert commit == rebuilt and repr(commit) == repr(rebuilt) and type(commit) is Commit
        assert commit.to_dict() == rebuilt.to_dict()


def _count(scope: Any) -> None:
    scope.counter = getattr(scope, "counter", 0) + 1


def test_a_plain_linear_stage_stays_within_its_call_budget() -> None:
    """W1's shape (200 stages, each reads and writes one key, no recorder) makes at most 20
    Python calls per stage, the stage's own and the scope's included (24 before round four's
    bare-engine work: an attrs ``__init__`` per commit and per op, ``Scope.__init__``,
    ``executed``, ``after_stop_or``, ``plain`` and ``apply_op`` per stage). The count does not
    depend on the machine's load; raise the budget only with a reason."""
    builder = flow_chart("s0", _count, "s0")
    for index in range(1, 200):
        builder = builder.add_function(f"s{index}", _count, f"s{index}")
    chart = builder.build()
    chart.run()
    calls = [0]

    def profile(_frame: Any, event: str, _arg: Any) -> None:
        if event == "call":
            calls[0] += 1

    sys.setprofile(profile)
    try:
        result = chart.run()
    finally:
        sys.setprofile(None)
    assert result.state == {"counter": 200} and len(result.commit_log) == 200
    assert 15 * 200 < calls[0] <= 20 * 200, calls[0] / 200
