"""``flowchart.lowlevel.append_owned`` and ``set_owned``: an append or a write without the
defensive copy records exactly what ``view.append(value)`` / ``scope[key] = value`` records (the
same commit, the same narrative, the same state), and hands the value over as it is (round five
of issue 19: the agent's history messages and its ``llm_latest_tool_calls``)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_values

from flowchart import ReadonlyInputError, flow_chart, narrative
from flowchart._core.lending import SHORT
from flowchart.lowlevel import append_owned, append_owned_to, copy_json, set_owned

#: a starting list: a short one, or one long enough to be lent from the shelf (``lending.SHORT``)
_STARTS = st.lists(json_values(max_leaves=3), max_size=3).map(lambda few: [*range(SHORT), *few]) | st.lists(
    json_values(max_leaves=3), max_size=3
)


def _log_chart(start: list[Any], grow: Any, rounds: int) -> Any:
    """Seed ``log = start``, then ``rounds`` stages of ``grow``."""

    def seed(scope: Any) -> None:
        scope.log = start

    builder = flow_chart("Seed", seed, "seed")
    for index in range(rounds):
        builder = builder.add_function(f"Grow{index}", grow, f"grow-{index}")
    return builder.build()


def _appending_chart(start: list[Any], items: list[Any], owned: bool, rounds: int) -> Any:
    """Seed ``log = start``, then ``rounds`` stages each appending ``items`` (owned or copied)
    and reading the list back."""

    def grow(scope: Any) -> None:
        log = scope["log"]
        for item in items:
            fresh = copy_json(item)  # built for the append alone, as the agent builds its messages
            if owned:
                append_owned(log, fresh)
            else:
                log.append(fresh)
        scope.size = len(log)

    return _log_chart(start, grow, rounds)


@settings(max_examples=60, deadline=None)
@given(
    start=_STARTS,
    items=st.lists(json_values(max_leaves=6), max_size=3),
    rounds=st.integers(min_value=1, max_value=3),
)
def test_an_owned_append_records_what_a_copied_append_records(start: list[Any], items: list[Any], rounds: int) -> None:
    """Short lists (copied into views) and long ones (lent from the shelf), any items, several
    stages: the owned append and ``view.append`` give the same commit log, narrative and state."""
    runs = []
    for owned in (False, True):
        recorder = narrative()
        result = _appending_chart(start, items, owned, rounds).run(recorders=[recorder])
        runs.append((repr(result.commit_log), recorder.lines(), result.state))
    assert runs[0] == runs[1]


def test_an_owned_append_hands_the_item_over_without_a_copy() -> None:
    """The item the stage built is the one the state and the commit hold (``view.append`` would
    have stored a copy of it)."""
    built: list[Any] = []

    def seed(scope: Any) -> None:
        scope.log = []

    def grow(scope: Any) -> None:
        message = {"role": "tool", "content": "1"}
        built.append(message)
        append_owned(scope["log"], message)

    result = flow_chart("Seed", seed, "seed").add_function("Grow", grow, "grow").build().run()
    assert result.state["log"][0] is built[0]
    assert result.commit_log[1].trace[0].verb == "append"
    assert result.commit_log[1].trace[0].value[0] is built[0]


def test_an_owned_append_to_a_plain_list_is_a_plain_append() -> None:
    """Anything but a tracked view (a list the stage made itself) is appended to as it is."""
    mine: list[Any] = [1]
    item = {"a": [2]}
    append_owned(mine, item)
    assert mine == [1, item] and mine[1] is item


def _writing_chart(values: list[Any], owned: bool) -> Any:
    """One stage a value: reads ``log`` when it is there, then writes the value (owned or copied)."""

    def write(scope: Any) -> None:
        scope.get("log")
        fresh = copy_json(values[scope.get("n", 0)])  # built for the write alone
        if owned:
            set_owned(scope, "log", fresh)
        else:
            scope["log"] = fresh
        scope.n = scope.get("n", 0) + 1

    builder = flow_chart("W0", write, "w-0")
    for index in range(1, len(values)):
        builder = builder.add_function(f"W{index}", write, f"w-{index}")
    return builder.build()


@settings(max_examples=60, deadline=None)
@given(values=st.lists(json_values(max_leaves=6), min_size=1, max_size=4))
def test_an_owned_write_records_what_a_copied_write_records(values: list[Any]) -> None:
    """Any values, written in turn (equal ones too, which commit nothing): the owned write and
    ``scope[key] = value`` give the same commit log, narrative and state."""
    runs = []
    for owned in (False, True):
        recorder = narrative()
        result = _writing_chart(values, owned).run(recorders=[recorder])
        runs.append((repr(result.commit_log), recorder.lines(), result.state))
    assert runs[0] == runs[1]


def test_an_owned_write_hands_the_value_over_without_a_copy_and_refuses_what_set_refuses() -> None:
    """The value the stage built is the one the state and the commit hold; a run-input key is
    refused as ``scope[key] = value`` refuses it."""
    built: list[Any] = []

    def write(scope: Any) -> None:
        calls = [{"id": "c1", "name": "add", "args": {"a": 1}}]
        built.append(calls)
        set_owned(scope, "calls", calls)

    def input_key(scope: Any) -> None:
        set_owned(scope, "x", 2)

    result = flow_chart("W", write, "w").build().run()
    assert result.state["calls"] is built[0] and result.commit_log[0].trace[0].value is built[0]
    with pytest.raises(ReadonlyInputError, match='Cannot write to readonly input key "x"'):
        flow_chart("W", input_key, "w").build().run({"x": 1})


def _unread_chart(start: list[Any], items: list[Any], unread: bool, rounds: int) -> Any:
    """Seed ``log = start``, then ``rounds`` stages each appending ``items`` — through
    ``append_owned_to`` (no read) or ``append_owned`` on ``scope["log"]`` (a read) — and writing ``n``."""

    def grow(scope: Any) -> None:
        for item in items:
            fresh = copy_json(item)
            if unread:
                append_owned_to(scope, "log", fresh)
            else:
                append_owned(scope["log"], fresh)
        scope.n = len(items)

    return _log_chart(start, grow, rounds)


@settings(max_examples=60, deadline=None)
@given(
    start=_STARTS,
    items=st.lists(json_values(max_leaves=6), min_size=1, max_size=3),
    rounds=st.integers(min_value=1, max_value=3),
)
def test_an_unread_append_records_the_same_ops_and_state_without_the_read(
    start: list[Any], items: list[Any], rounds: int
) -> None:
    """``append_owned_to`` commits the same ops and reaches the same state as appending to the list
    read from the scope; only the read is gone: no commit lists ``log`` among its reads, and the
    narrative tells no read of it."""
    runs = []
    for unread in (False, True):
        recorder = narrative()
        result = _unread_chart(start, items, unread, rounds).run(recorders=[recorder])
        runs.append((result.commit_log, recorder.lines(), result.state))
    (read_log, read_lines, read_state), (log, lines, state) = runs
    assert state == read_state and state["log"] == [*start, *items * rounds]
    assert [c.trace for c in log] == [c.trace for c in read_log]
    assert all("log" not in c.reads for c in log)
    assert [c.reads for c in read_log[1:]] == [("log",)] * rounds
    assert not any("Read log" in line or "read log" in line for line in lines)
    assert len(lines) < len(read_lines)


def test_an_unread_append_to_a_missing_key_or_a_non_list_is_refused() -> None:
    """An absent key is a ``KeyError`` (``set_owned`` a one-item list first); a key that holds no
    list a ``TypeError`` naming it."""

    def absent(scope: Any) -> None:
        append_owned_to(scope, "log", 1)

    def scalar(scope: Any) -> None:
        scope.log = 3
        append_owned_to(scope, "log", 1)

    with pytest.raises(KeyError, match="log"):
        flow_chart("Absent", absent, "absent").build().run()
    with pytest.raises(TypeError, match="cannot append to 'log': it holds int, not a list"):
        flow_chart("Scalar", scalar, "scalar").build().run()


def test_an_unread_append_after_the_stages_own_write_extends_that_write() -> None:
    """A stage that wrote ``log`` itself and then appends without reading: one ``set`` of the whole
    new list, as ``scope.log = [...]`` followed by ``scope["log"].append(...)`` records."""

    def write_then_append(scope: Any) -> None:
        scope.log = ["a"]
        append_owned_to(scope, "log", "b")
        append_owned_to(scope, "log", "c")

    result = flow_chart("Write", write_then_append, "write").build().run()
    assert result.state["log"] == ["a", "b", "c"]
    [op] = result.commit_log[0].trace
    assert (op.path, op.verb, op.value) == (("log",), "set", ["a", "b", "c"])
