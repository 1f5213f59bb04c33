"""Ledger rows: exactly the contract's keys, in order; absent fields omitted; values only
with a change; events without values; the rows a person's answer files."""

from __future__ import annotations

import json

import pytest

from governance import LEDGER_KEY
from governance.ledger import (
    answer_why,
    ask_answer_row,
    ask_resumed_second_ask_reason,
    event_payload,
    message_row,
    tool_row,
)


def test_the_ledger_key_is_middleware_decisions() -> None:
    """Rows are committed under ``middleware_decisions``."""
    assert LEDGER_KEY == "middleware_decisions"


def test_a_tool_row_has_the_tool_keys_in_order() -> None:
    """A tool row: no phase; tool name and call id; no why/before/after when absent."""
    row = tool_row(
        middleware="m",
        moment="before-tool",
        tool_name="t",
        tool_call_id="c",
        iteration=1,
        outcome="allow",
    )
    assert list(row) == [
        "middleware",
        "moment",
        "at",
        "tool_name",
        "tool_call_id",
        "iteration",
        "outcome",
        "changed",
    ]
    assert row["at"] == "tool"


def test_a_message_row_has_the_message_keys_in_order() -> None:
    """A message row: phase, no tool keys; moment equals phase."""
    row = message_row(middleware="m", phase="output", iteration=4, outcome="deny", why="no")
    assert row == {
        "middleware": "m",
        "moment": "output",
        "at": "message",
        "phase": "output",
        "iteration": 4,
        "outcome": "deny",
        "changed": False,
        "why": "no",
    }


def test_a_changed_row_carries_json_safe_copies_of_before_and_after() -> None:
    """before/after are copies (tuples become lists) and the row is JSON-safe."""
    before = {"ids": (1, 2)}
    row = tool_row(
        middleware="m",
        moment="after-tool",
        tool_name="t",
        tool_call_id="c",
        iteration=1,
        outcome="allow",
        changed=True,
        why="w",
        before=before,
        after={"ids": [1]},
    )
    assert (row["before"], row["after"]) == ({"ids": [1, 2]}, {"ids": [1]})
    assert row["before"] is not before
    assert json.loads(json.dumps(row)) == row


def test_values_without_a_change_are_refused() -> None:
    """A row cannot show values nobody changed."""
    with pytest.raises(
        ValueError,
        match=r"^ledger row: before and after are given together, and only when changed$",
    ):
        message_row(middleware="m", phase="input", iteration=0, outcome="allow", before="a", after="a")


def test_a_change_without_values_is_refused() -> None:
    """A changed row must show both values."""
    with pytest.raises(
        ValueError,
        match=r"^ledger row: before and after are given together, and only when changed$",
    ):
        message_row(middleware="m", phase="input", iteration=0, outcome="allow", changed=True)


def test_an_unknown_outcome_is_refused() -> None:
    """outcome is allow, deny or ask."""
    with pytest.raises(
        ValueError,
        match=r"^ledger row: outcome must be one of \('allow', 'deny', 'ask'\), got 'maybe'$",
    ):
        message_row(middleware="m", phase="input", iteration=0, outcome="maybe")  # type: ignore[arg-type]


def test_an_unknown_tool_moment_is_refused() -> None:
    """Tool rows are before-tool or after-tool."""
    with pytest.raises(
        ValueError,
        match=r"^tool_row: moment must be one of \('before-tool', 'after-tool'\), got 'input'$",
    ):
        tool_row(
            middleware="m",
            moment="input",
            tool_name="t",
            tool_call_id="c",
            iteration=0,
            outcome="allow",
        )  # type: ignore[arg-type]


def test_an_unknown_phase_is_refused() -> None:
    """Message rows are input or output."""
    with pytest.raises(ValueError, match=r"^message_row: phase must be 'input' or 'output', got 'window'$"):
        message_row(middleware="m", phase="window", iteration=0, outcome="allow")  # type: ignore[arg-type]


def test_the_event_payload_drops_the_values() -> None:
    """An event never carries before/after."""
    row = message_row(
        middleware="m",
        phase="input",
        iteration=0,
        outcome="allow",
        changed=True,
        why="w",
        before="a",
        after="b",
    )
    assert event_payload(row) == {
        "middleware": "m",
        "moment": "input",
        "at": "message",
        "phase": "input",
        "iteration": 0,
        "outcome": "allow",
        "changed": True,
        "why": "w",
    }


def test_an_approval_row_is_filed_under_the_asker() -> None:
    """Approve: outcome allow, why ``approved by <by>: <note>``."""
    row = ask_answer_row(
        approved=True,
        by="alice",
        note="verified",
        middleware="gate",
        tool_name="refund",
        tool_call_id="c1",
        iteration=2,
    )
    assert row == {
        "middleware": "gate",
        "moment": "before-tool",
        "at": "tool",
        "tool_name": "refund",
        "tool_call_id": "c1",
        "iteration": 2,
        "outcome": "allow",
        "changed": False,
        "why": "approved by alice: verified",
    }


def test_a_decline_row_without_note_is_a_deny() -> None:
    """Decline: outcome deny, why ``declined by <by>``."""
    row = ask_answer_row(
        approved=False,
        by="bob",
        note=None,
        middleware="gate",
        tool_name="refund",
        tool_call_id="c1",
        iteration=2,
    )
    assert (row["outcome"], row["why"]) == ("deny", "declined by bob")


def test_answer_why_spells_both_answers() -> None:
    """The why text with and without a note."""
    assert [answer_why(True, "a"), answer_why(False, "b", "too much")] == [
        "approved by a",
        "declined by b: too much",
    ]


def test_the_second_ask_reason_is_exact() -> None:
    """The denial for a second ask on an approved resume."""
    assert ask_resumed_second_ask_reason("second-gate", "sure?") == (
        "middleware 'second-gate' asked a person to decide, and there is no pause here to carry that ask: sure?"
    )


def test_a_row_with_nan_or_a_lone_surrogate_can_still_be_committed() -> None:
    """A ledger row is committed to the run's state, so it must pass flowchart's own check
    (``copy_json``): a NaN becomes its text and a lone surrogate is written out, never kept."""
    from flowchart._core.values import copy_json

    row = tool_row(
        middleware="m",
        moment="after-tool",
        tool_name="t",
        tool_call_id="c",
        iteration=1,
        outcome="allow",
        changed=True,
        why="w",
        before={"score": float("nan")},
        after={"\ud800": "x\udfff"},
    )
    assert (row["before"], row["after"]) == ({"score": "nan"}, {"\\ud800": "x\\udfff"})
    assert copy_json(row) == row
