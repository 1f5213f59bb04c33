"""Project-wide fixtures: the trace snapshot fixture and a small loan-approval chart.

Being the top-level conftest, this file also puts ``tests/`` on ``sys.path`` (pytest's
rootdir-relative import), which ``from strategies import ...`` relies on.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import FlowChart, decide, flow_chart
from flowchart.testing import text_snapshot, trace_snapshot  # noqa: F401


def _application(scope: Any, ctx: Any) -> None:
    for key in ("income", "debt", "credit_score"):
        scope[key] = ctx.args["applicant"][key]


def _dti(scope: Any) -> None:
    scope.dti = round(scope.debt / scope.income, 3)


def _tier(scope: Any) -> None:
    score, dti = scope.credit_score, scope.dti
    scope.risk_tier = "low" if score >= 700 and dti < 0.4 else "high"


def _decide(scope: Any) -> Any:
    return decide(
        scope,
        [{"when": {"risk_tier": {"eq": "low"}}, "then": "approve", "label": "Low risk"}],
        "reject",
    )


def _approve(scope: Any) -> None:
    scope.approved = True


def _reject(scope: Any) -> None:
    scope.approved = False
    scope.reason = f"risk tier {scope.risk_tier}"


def build_loan_chart() -> FlowChart:
    """application → dti → risk tier → decide (approve | reject).

    The run input is ``{"applicant": {"income": ..., "debt": ..., "credit_score": ...}}``.
    """
    return (
        flow_chart("Application", _application, "application")
        .add_function("Dti", _dti, "dti")
        .add_function("RiskTier", _tier, "tier")
        .add_decider_function("Decide", _decide, "decide")
        .add_function_branch("approve", "Approve", _approve)
        .add_function_branch("reject", "Reject", _reject)
        .end()
        .build()
    )


@pytest.fixture(scope="session")
def loan_chart() -> FlowChart:
    """The loan-approval chart (immutable, so shared by the whole session)."""
    return build_loan_chart()
