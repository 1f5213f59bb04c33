"""A live reader is told how many lines a stage's batch makes before they are worded.

The narrative counts a batch one operation at a time (a note due: ``None``, the teller decides);
the count must be the number of entries the batch is told as.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowchart import events as ev
from flowchart.recorders.narrative import NarrativeRecorder, narrative

CTX = ev.TraversalContext("r", "s", "s#0", "S", ())

operation = st.tuples(
    st.sampled_from(["read", "missing", "write", "emit"]),
    st.sampled_from(["", "a", "b", "total"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers(), max_size=3)),
    st.sampled_from(["set", "delete", "merge", ""]),
    st.just(False),
)


def _told(recorder: NarrativeRecorder, batch: list[Any]) -> int:
    out: list[Any] = []
    recorder._tell_batch(CTX, "S", batch, out.append)
    return len(out)


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(operation, max_size=12), tells_emits=st.booleans())
def test_the_count_is_the_number_of_entries_the_batch_is_told_as(batch: list[Any], tells_emits: bool) -> None:
    """For any batch of reads, misses, writes and emits (empty keys included), with emits told
    or not, the count a stream is given equals the entries the narrative then words."""
    recorder = narrative(include_emits=tells_emits)
    assert recorder._countable(batch) == _told(recorder, batch)


def test_a_note_due_leaves_the_count_to_the_teller() -> None:
    """A write of a noted key is counted by wording it (``None``); a batch without one is counted."""
    recorder = narrative(notes={"total": lambda value: f"total is {value}"})
    batch = [("read", "a", 1, "", False), ("write", "total", 3, "set", False)]
    assert recorder._countable(batch) is None
    assert recorder._countable(batch[:1]) == 1


@settings(max_examples=300, deadline=None)
@given(batch=st.lists(operation, max_size=12))
def test_a_noted_narrative_counts_what_it_tells(batch: list[Any]) -> None:
    """With a noted key (as the agent's narrative has), the count a stream is given is the
    number of entries told whenever no note is due, and ``None`` exactly when a noted key is
    written (not deleted)."""
    recorder = narrative(notes={"total": lambda value: f"total is {value}"})
    count = recorder._countable(batch)
    noted = any(kind == "write" and key == "total" and op != "delete" for kind, key, _v, op, _h in batch)
    assert (count is None) == noted
    if count is not None:
        assert count == _told(recorder, batch)
