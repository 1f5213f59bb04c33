"""A chart that takes its input: a stage may copy a run input into the state key of the same name.

``scope.amount = ctx.args["amount"]`` — the natural first line of a chart — is an unchanged
copy and is allowed (it commits as any write does). Any write that would make the state's
``amount`` differ from the input's (a new value, a nested change, a delete) is still
footprintjs's ``Cannot write to readonly input key`` (API.md's exact message), and its
traceback ends at the stage's line, without the engine's frames.
"""

from __future__ import annotations

import asyncio
import traceback
from typing import Any

import pytest

from flowchart import flow_chart, replay
from flowchart._core.errors import ReadonlyInputError

MESSAGE = r'^Cannot write to readonly input key "amount" — use ctx.args to read input values$'


def _copy(scope: Any, ctx: Any) -> None:
    scope.amount = ctx.args["amount"]
    scope.items = ctx.args["items"]


def _double(scope: Any) -> None:
    scope.total = scope.amount * 2


def test_copying_an_input_into_its_own_name_works() -> None:
    """The copy commits as a write; later stages read it from the state."""
    chart = flow_chart("Copy", _copy, "copy").add_function("Double", _double, "double").build()
    result = chart.run({"amount": 129, "items": [1, 2]})
    assert result.state == {"amount": 129, "items": [1, 2], "total": 258}
    assert [(op.path, op.verb) for op in result.commit_log[0].trace] == [(("amount",), "set"), (("items",), "set")]
    assert replay(result.commit_log) == result.state


@pytest.mark.parametrize(
    "write",
    [
        lambda scope, ctx: setattr(scope, "amount", ctx.args["amount"] + 1),
        lambda scope, ctx: setattr(scope, "amount", True if ctx.args["amount"] == 1 else 0),
        lambda scope, ctx: scope.__delitem__("amount"),
    ],
    ids=["new-value", "same-by-python-but-not-json", "delete"],
)
def test_a_write_that_changes_an_input_is_refused_with_the_api_message(write: Any) -> None:
    """A changed value (``True`` is not ``1`` in JSON) or a delete is refused with API.md's message,
    exactly, naming the key."""
    chart = flow_chart("Write", write, "write").build()
    with pytest.raises(ReadonlyInputError, match=MESSAGE) as caught:
        chart.run({"amount": 1})
    assert caught.value.key == "amount"


def _copy_then_append(scope: Any, ctx: Any) -> None:
    scope.items = ctx.args["items"]
    scope.items.append(3)


def test_changing_a_copied_input_in_place_is_refused() -> None:
    """After the copy, a nested change (``append``) would make it differ: refused at the change."""
    chart = flow_chart("Append", _copy_then_append, "append").build()
    with pytest.raises(ReadonlyInputError, match=r'^Cannot write to readonly input key "items"'):
        chart.run({"items": [1, 2]})


def _bump(scope: Any, ctx: Any) -> None:
    scope.amount = ctx.args["amount"] + 1  # the line the traceback ends at


def test_the_refusal_traceback_ends_at_the_stage_line_without_engine_frames() -> None:
    """The traceback runs from the caller through ``chart.run`` to the stage's line — no traversal,
    no scope frames (it was 14 frames, 39 lines; now 4 frames, 13 lines); ``arun`` does the same."""
    chart = flow_chart("Bump", _bump, "bump").build()
    for call in (lambda: chart.run({"amount": 1}), lambda: asyncio.run(chart.arun({"amount": 1}))):
        with pytest.raises(ReadonlyInputError) as caught:
            call()
        frames = traceback.extract_tb(caught.value.__traceback__)
        assert (
            frames[-1].name == "_bump"
            and frames[-1].line == 'scope.amount = ctx.args["amount"] + 1  # the line the traceback ends at'
        )
        assert not any("/flowchart/_engine/" in f.filename or f.filename.endswith("scope.py") for f in frames)
        called = max(i for i, f in enumerate(frames) if f.filename.endswith("chart.py"))
        assert len(frames) - called <= 3  # chart.run(…) → the entry point's re-raise → the stage's line
