"""``flowchart.lowlevel.append_owned``: an append without the defensive copy records exactly what
``view.append(value)`` records (the same commit, the same narrative, the same state), and
hands the item over as it is (round five of issue 19: the agent's history messages)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_values

from flowchart import flow_chart, narrative
from flowchart.lending import SHORT
from flowchart.lowlevel import append_owned, copy_json


def _appending_chart(start: list[Any], items: list[Any], owned: bool, rounds: int) -> Any:
    """Seed ``log = start``, then ``rounds`` stages each appending ``items`` (owned or copied)
    and reading the list back."""

    def seed(scope: Any) -> None:
        scope.log = start

    def grow(scope: Any) -> None:
        log = scope["log"]
        for item in items:
            fresh = copy_json(item)  # built for the append alone, as the agent builds its messages
            if owned:
                append_owned(log, fresh)
            else:
                log.append(fresh)
        scope.size = len(log)

    builder = flow_chart("Seed", seed, "seed")
    for index in range(rounds):
        builder = builder.add_function(f"Grow{index}", grow, f"grow-{index}")
    return builder.build()


@settings(max_examples=60, deadline=None)
@given(
    start=st.lists(json_values(max_leaves=3), max_size=3).map(lambda few: [*range(SHORT), *few])
    | st.lists(json_values(max_leaves=3), max_size=3),
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
