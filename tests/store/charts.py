"""Small charts for the store tests: one that pauses once for an approval."""

from __future__ import annotations

from typing import Any

from flowchart import FlowChart, Pausable, flow_chart


def _intake(scope: Any, ctx: Any) -> None:
    scope.requested = ctx.args.get("amount", 10)


def _ask(scope: Any) -> Any:
    scope.asked = True
    return {"question": f"approve {scope.requested}?"}


def _answered(scope: Any, answer: Any) -> None:
    scope.approved = bool(answer and answer.get("ok"))


def _finish(scope: Any) -> str:
    scope.done = True
    return "approved" if scope.approved else "declined"


def approval_chart() -> FlowChart:
    """intake → approve (pausable: asks ``approve <amount>?``) → finish (returns the verdict)."""
    return (
        flow_chart("Intake", _intake, "intake")
        .add_pausable_function("Approve", Pausable(execute=_ask, resume=_answered), "approve")
        .add_function("Finish", _finish, "finish")
        .build()
    )


def _boom(scope: Any) -> None:
    raise RuntimeError("the ledger is closed")


def failing_chart() -> FlowChart:
    """intake → boom (raises ``RuntimeError('the ledger is closed')``)."""
    return flow_chart("Intake", _intake, "intake").add_function("Boom", _boom, "boom").build()
