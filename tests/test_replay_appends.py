"""``replay`` of top-level appends: the same state as the ``apply_op`` fold, committed values
untouched, and linear time for a list that grows all run long (W7's shape)."""

from __future__ import annotations

import copy
import time
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import replay
from flowchart._core.commits import Commit, Op, apply_commit

KEYS = st.sampled_from(["a", "b"])
VALUES = (
    st.integers(0, 9)
    | st.lists(st.integers(0, 9), max_size=3)
    | st.dictionaries(st.sampled_from("xy"), st.integers(0, 9), max_size=2)
)
OPS = st.one_of(
    st.builds(lambda k, v: Op((k,), "append", v), KEYS, st.lists(st.integers(0, 9), max_size=3)),
    st.builds(lambda k, v: Op((k,), "set", v), KEYS, VALUES),
    st.builds(lambda k, v: Op((k,), "merge", v), KEYS, VALUES),
    st.builds(lambda k: Op((k,), "delete"), KEYS),
    st.builds(lambda k, v: Op((k, "x"), "set", v), KEYS, VALUES),
    st.builds(lambda k, v: Op((k, "x"), "append", v), KEYS, st.lists(st.integers(0, 9), max_size=3)),
)


def commits(ops: list[list[Op]]) -> list[Commit]:
    """One commit per group of ops."""
    return [Commit(i, f"s{i}", f"s{i}", f"s{i}#{i}", tuple(group)) for i, group in enumerate(ops)]


@settings(max_examples=300)
@given(
    initial=st.dictionaries(KEYS, VALUES, max_size=2),
    ops=st.lists(st.lists(OPS, min_size=1, max_size=3), max_size=12),
    data=st.data(),
)
def test_replay_is_the_apply_op_fold_and_mutates_no_committed_value(
    initial: dict[str, Any], ops: list[list[Op]], data: Any
) -> None:
    """At every index, ``replay`` equals folding ``apply_commit`` over a copy of the initial
    state, and neither the commits' values nor the initial state change (appends on a list a
    commit ``set`` must copy it first)."""
    log = commits(ops)
    before = copy.deepcopy((initial, [[op.value for op in c.trace] for c in log]))
    upto = data.draw(st.integers(-1, len(log) - 1)) if log else None
    state = dict(initial)
    for commit in log[: (len(log) if upto is None else upto + 1)]:
        apply_commit(state, commit)
    assert replay(log, upto, initial) == state
    assert (initial, [[op.value for op in c.trace] for c in log]) == before


def _replay_seconds(appends: int) -> float:
    log = commits([[Op(("items",), "append", [n]), Op(("pad",), "set", n)] for n in range(appends)])
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        assert len(replay(log)["items"]) == appends
        best = min(best, time.process_time() - start)
    return best


def test_a_list_grown_by_appends_replays_in_linear_time() -> None:
    """Twice the appends cost about twice the time (it was about four times: each append copied
    the whole list, 10× slower per commit at 150,000 commits than at 30,000)."""
    ratio = _replay_seconds(40_000) / _replay_seconds(20_000)
    assert ratio < 3.0, f"40,000 appends took {ratio:.1f}× the time of 20,000"
