"""A list that grows all run long (W7's shape) costs what each stage adds, and the law holds:
a value anyone kept — a stage, a tool, a recorder, a ``raw_read`` caller, the commit log —
never changes when later stages append.

Linearity is shown by counting (items copied into views, the identity of the state's list),
never by timing."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import Retry, flow_chart, narrative, replay
from flowchart._core.lending import SHORT
from flowchart._core.owned import holders
from flowchart._core.tracked import TrackedList
from flowchart.lowlevel import raw_read

#: what every list here starts with: long enough to be lent (a shorter list is copied, cheaper)
PRE = list(range(-SHORT, 0))


def upto(n: int) -> list[int]:
    """The list after ``n`` passes."""
    return [*PRE, *range(1, n + 1)]


def _loop(passes: int, work: Any = None, produce_extra: Any = None) -> Any:
    """Produce (append the pass number) → Work → Check ⟲ Produce, ``passes`` times."""

    def produce(scope: Any) -> None:
        n = getattr(scope, "passes", 0) + 1
        scope.passes = n
        if n == 1:
            scope.items = [*PRE, n]
        else:
            scope.items.append(n)
        if produce_extra is not None:
            produce_extra(scope, n)

    def default_work(scope: Any) -> None:
        scope.note = len(scope.items)

    def check(scope: Any, ctx: Any) -> None:
        if scope.passes >= passes:
            ctx.stop()

    return (
        flow_chart("Produce", produce, "produce")
        .add_function("Work", work or default_work, "work")
        .add_function("Check", check, "check")
        .loop_to("produce")
        .build()
    )


def _items_copied_into_views(monkeypatch: pytest.MonkeyPatch, passes: int, recorders: list[Any]) -> int:
    """Run the loop ``passes`` times; how many list items the scope copied into tracked views."""
    copied = [0]
    made = TrackedList.__init__

    def counting(self: TrackedList, data: Any, owner: Any) -> None:
        made(self, data, owner)
        copied[0] += list.__len__(self)

    monkeypatch.setattr(TrackedList, "__init__", counting)
    result = _loop(passes).run(recorders=recorders, max_iterations=passes + 1)
    monkeypatch.undo()
    assert result.state["items"] == upto(passes)
    return copied[0]


@pytest.mark.parametrize("with_narrative", [False, True])
def test_reading_a_growing_list_copies_a_bounded_number_of_items(
    monkeypatch: pytest.MonkeyPatch, with_narrative: bool
) -> None:
    """Two reads a pass (an append, a ``len``) of a list that grows by one item a pass: the items
    copied into views stay bounded as the run doubles — one copy, by the first read (each read
    copied the whole list: 22,736 items for 100 passes, 65,536 for 200)."""
    counts = [
        _items_copied_into_views(monkeypatch, passes, [narrative()] if with_narrative else []) for passes in (100, 200)
    ]
    assert counts[1] <= counts[0] + 2, counts
    assert counts[1] <= 2 * (SHORT + 1), counts  # 65 now, whatever the length


@pytest.mark.parametrize("with_narrative", [False, True])
def test_the_state_list_grows_in_place_once_nothing_else_holds_it(with_narrative: bool) -> None:
    """The state's list is one object from the second pass on: the first append copies it (the
    first pass's ``set`` op holds it), every later one extends that copy. Each append used to make
    a new list of the whole length (a new object while the old one still lived)."""
    seen: list[int] = []

    def work(scope: Any) -> None:
        # the committed list (after the read below, raw_read is the stage's view); its id only:
        # holding it would make it shared
        seen.append(id(raw_read(scope, "items")))
        scope.note = len(scope.items)

    result = _loop(50, work).run(recorders=[narrative()] if with_narrative else [], max_iterations=51)
    assert len(set(seen[1:])) == 1 and seen[0] != seen[1]
    assert result.state["items"] == upto(50)
    assert result.commit_log[0].trace[1].to_dict() == {"path": ["items"], "verb": "set", "value": upto(1)}


def test_a_view_a_stage_kept_never_sees_later_appends() -> None:
    """A stage that keeps the list it read (in a tool, a closure) holds it as it was when its stage
    ended: later stages' appends reach the state, not what it kept."""
    kept: list[Any] = []

    def work(scope: Any) -> None:
        scope.note = len(scope.items)
        kept.append(scope.items)

    result = _loop(20, work).run(max_iterations=21)
    assert [list(k) for k in kept] == [upto(n) for n in range(1, 21)]
    assert len({id(k) for k in kept}) == 20
    assert result.state["items"] == upto(20)


def test_a_view_a_stage_appended_to_and_kept_never_sees_later_appends() -> None:
    """The view a stage appended to and kept stays as that stage left it."""
    kept: list[Any] = []

    def extra(scope: Any, n: int) -> None:
        if n > 1:
            kept.append(scope.items)

    result = _loop(10, produce_extra=extra).run(max_iterations=11)
    assert [list(k) for k in kept] == [upto(n) for n in range(2, 11)]
    assert result.state["items"] == upto(10)


def test_a_committed_list_held_through_raw_read_never_sees_later_appends() -> None:
    """``raw_read`` hands out the committed list itself: whoever keeps it makes it shared, so the
    next append copies it and what was kept keeps its length and items."""
    kept: list[list[int]] = []

    def work(scope: Any) -> None:
        scope.note = len(scope.items)
        if scope.passes % 3 == 0:
            kept.append(raw_read(scope, "items"))

    result = _loop(30, work).run(recorders=[narrative()], max_iterations=31)
    assert kept == [upto(n) for n in range(3, 31, 3)]
    assert result.state["items"] == upto(30)


class KeepsReads:
    """A live recorder that keeps every value it is shown being read, and a copy made at once."""

    live_operations = True

    def __init__(self) -> None:
        self.kept: list[tuple[Any, Any]] = []

    def on_read(self, event: Any) -> None:
        if event.key == "items":
            self.kept.append((event.value, copy.deepcopy(list(event.value))))


def test_a_value_a_recorder_was_shown_is_unchanged_after_later_appends() -> None:
    """Every list a recorder kept from a read ends the run as the stage that read it left it, none
    grown by a later pass: Work's reads exactly as read (it only reads), Produce's with the one item
    that stage appended to the view it was shown."""
    rec = KeepsReads()
    _loop(15).run(recorders=[rec], max_iterations=16)
    work_reads, produce_reads = rec.kept[0::2], rec.kept[1::2]  # W1, P2, W2, P3, ... (P1 only sets)
    assert [list(value) for value, _ in work_reads] == [then for _, then in work_reads]
    assert [then for _, then in work_reads] == [upto(n) for n in range(1, 16)]
    assert [list(value) for value, _ in produce_reads] == [upto(n) for n in range(2, 16)]


def test_a_view_changed_after_its_stage_is_never_lent_again() -> None:
    """A stage keeps its view, a later stage changes it in place (same length) and lets it go:
    the next reader gets the committed items, not the changed view."""
    kept: list[Any] = []
    seen: list[list[int]] = []

    def work(scope: Any) -> None:
        seen.append(list(scope.items))
        if scope.passes == 3:
            kept.append(scope.items)

    def extra(scope: Any, n: int) -> None:
        if kept:
            kept.pop()[0] = 999  # after its stage: changes nothing in the state

    result = _loop(6, work, produce_extra=extra).run(max_iterations=7)
    assert seen == [upto(n) for n in range(1, 7)]
    assert result.state["items"] == upto(6)


def test_a_failed_attempt_that_appended_leaves_the_list_as_it_was() -> None:
    """A retried stage appends then fails: its attempt is discarded, the next attempt reads the
    committed list (not the failed attempt's view) and its one append is what commits."""
    calls = [0]

    def seed(scope: Any) -> None:
        scope.items = [*PRE, 0]

    def read(scope: Any) -> None:
        scope.n = len(scope.items)

    def grow(scope: Any) -> None:
        calls[0] += 1
        scope.items.append(calls[0])
        if calls[0] == 1:
            raise TimeoutError("try 1")

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Grow", grow, "grow")  # the first append copies (the seed's set op holds the list)
        .add_function("Read", read, "read")
        .add_function("Again", grow, "again", retry=Retry(attempts=2, backoff=0, sleep=lambda _s: None))
        .add_function("Last", read, "last")
        .build()
    )
    calls[0] = -1
    result = chart.run()
    assert result.state["items"] == [*PRE, 0, 0, 2] and result.state["n"] == SHORT + 3
    assert result.commit_log[3].trace[0].to_dict() == {"path": ["items"], "verb": "append", "value": [2]}
    assert replay(result.commit_log) == result.state


def test_holders_counts_every_other_reference() -> None:
    """``holders`` is 0 for a value only the caller names, and one more for each other holder."""
    value: list[int] = []
    assert holders(value) == 0
    box = {"k": value}
    assert holders(value) == 1
    other = [value]
    assert holders(value) == 2
    del box, other
    assert holders(value) == 0


# -- any sequence of stages over one list: the state, the log and everything kept agree ------------------
ACTIONS = st.lists(
    st.sampled_from(["append", "extend", "len", "iterate", "set", "pop", "keep_view", "keep_raw", "nested", "none"]),
    min_size=1,
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(actions=ACTIONS, with_narrative=st.booleans())
def test_any_sequence_of_stages_matches_a_plain_list_and_keeps_what_was_kept(
    actions: list[str], with_narrative: bool
) -> None:
    """Each action is one stage over ``items``; a plain Python list run alongside is the model.
    The state after the run, the replay of the log and every kept value (as it was when kept)
    agree with the model, whatever mix of reads, appends, sets and kept references ran."""
    model: list[Any] = list(PRE)
    kept: list[tuple[Any, list[Any]]] = []

    def stage_for(action: str, step: int) -> Any:
        def body(scope: Any) -> None:
            if action == "append":
                scope.items.append(step)
                model.append(step)
            elif action == "extend":
                scope.items.extend([step, step])
                model.extend([step, step])
            elif action == "len":
                scope.n = len(scope.items)
            elif action == "iterate":
                scope.total = sum(x if isinstance(x, int) else 0 for x in scope.items)
            elif action == "set":
                scope.items = [step, *PRE]
                model[:] = [step, *PRE]
            elif action == "pop":
                scope.items.pop()
                model.pop()
            elif action == "keep_view":
                view = scope.items
                kept.append((view, copy.deepcopy(list(view))))
            elif action == "keep_raw":
                value = raw_read(scope, "items")
                kept.append((value, copy.deepcopy(value)))
            elif action == "nested":
                scope.items.append({"k": step})
                scope.items[-1]["k"] = -step
                model.append({"k": -step})

        return body

    def seed(scope: Any) -> None:
        scope.items = list(PRE)

    builder = flow_chart("Seed", seed, "seed")
    length = SHORT
    for i, action in enumerate(actions, start=1):
        if action == "pop" and length <= 1:
            action = "none"  # never pop the list empty
        length = (
            SHORT + 1 if action == "set" else length + {"append": 1, "extend": 2, "nested": 1, "pop": -1}.get(action, 0)
        )
        builder = builder.add_function(f"S{i}", stage_for(action, i), f"s{i}")
    result = builder.build().run(recorders=[narrative()] if with_narrative else [])
    assert result.state["items"] == model
    assert replay(result.commit_log)["items"] == model
    for value, then in kept:
        assert list(value) == then


def test_where_references_cannot_be_counted_everything_copies_to_the_same_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no reference count (another interpreter), no view is lent and no list grows in place:
    the state, the commit log and the narrative are the same, byte for byte."""
    import flowchart._core.owned as owned

    def record() -> tuple[Any, ...]:
        rec = narrative()
        result = _loop(30).run(recorders=[rec], max_iterations=31)
        return result.state, [c.to_dict() for c in result.commit_log], rec.lines()

    counted = record()
    monkeypatch.setattr(owned, "_COUNT", None)
    assert holders([]) > 1_000_000
    assert record() == counted
