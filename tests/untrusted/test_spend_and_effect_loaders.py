"""The loaders this batch added fail closed on any input: a budget pause's state, a failed map's
``finished`` children in a checkpoint, a stored effect-ledger row, a conversation turn's spend.

Hypothesis feeds arbitrary JSON; two outcomes only: accepted, or the loader's one error type.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_objects, json_values

from agent._chart.budget import BudgetState, check_budget_answer, check_budget_pause
from agent._chart.conversation_turns import spent_through
from agent.errors import ConversationError
from flowchart import Checkpoint, CheckpointError, flow_chart
from flowchart.store import StoreError
from flowchart.store.effects import _row


@settings(max_examples=200, deadline=None)
@given(json_values())
def test_a_budget_state_is_read_or_refused_with_a_checkpoint_error(value: Any) -> None:
    """Any JSON as the ``budget`` state: a ``BudgetState`` or a ``CheckpointError``."""
    with contextlib.suppress(CheckpointError):
        BudgetState.from_dict(value)
    with contextlib.suppress(CheckpointError):
        check_budget_pause({"budget": value})


@settings(max_examples=200, deadline=None)
@given(json_values())
def test_a_budget_answer_is_checked_or_refused_with_a_value_error(value: Any) -> None:
    """Any JSON as the answer to a budget pause: a checked answer or a ``ValueError``."""
    try:
        checked = check_budget_answer(value)
    except ValueError:
        return
    assert isinstance(checked["approved"], bool)


@settings(max_examples=200, deadline=None)
@given(json_values(), json_values())
def test_a_stored_ledger_row_is_read_or_refused_with_a_store_error(body: Any, receipt: Any) -> None:
    """Any JSON (or text that is not JSON) in an effect row's columns: a row or a ``StoreError``."""
    for text in (json.dumps(body), "{not json", json.dumps(receipt)):
        try:
            row = _row("r", "r:c", text, json.dumps(receipt))
        except StoreError:
            continue
        assert isinstance(row["body"], dict)


@settings(max_examples=200, deadline=None)
@given(json_objects())
def test_a_turns_recorded_spend_is_read_or_refused_with_a_conversation_error(state: dict[str, Any]) -> None:
    """Any JSON as a finished turn's ``conversation`` / ``llm_cost``: a spend, None or a
    ``ConversationError``."""
    for shaped in (state, {"conversation": {"spent_before": state}}, {"llm_cost": state}):
        with contextlib.suppress(ConversationError):
            spent_through(shaped)


def _failed_map_checkpoint() -> str:
    def child(scope: Any, ctx: Any) -> int:
        if ctx.index == 1:
            raise ValueError("no")
        return int(ctx.index)

    chart = (
        flow_chart("Seed", lambda s: setattr(s, "xs", [0, 1, 2]), "seed")
        .add_map("M", child, "m", items=lambda s: s.xs, into="out")
        .build()
    )
    try:
        chart.run()
    except Exception as exc:
        return str(exc.checkpoint.to_json())  # type: ignore[attr-defined]
    raise AssertionError("the map did not fail")


TEXT = _failed_map_checkpoint()


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=5), json_values(), max_size=4))
def test_a_checkpoints_finished_map_children_are_read_or_refused(finished: dict[str, Any]) -> None:
    """Any ``recovery.finished``: a checkpoint whose keys are item indexes, or a ``CheckpointError``."""
    data = json.loads(TEXT)
    data["recovery"]["finished"] = finished
    try:
        checkpoint = Checkpoint.from_json(json.dumps(data))
    except CheckpointError:
        return
    assert checkpoint.recovery is not None
    assert all(key.isdigit() for key in checkpoint.recovery.finished)
