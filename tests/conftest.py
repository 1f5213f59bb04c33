"""Project-wide fixtures: the trace snapshot fixture, a small loan-approval chart, and the
hypothesis profile the suite runs under.

Being the top-level conftest, this file also puts ``tests/`` on ``sys.path`` (pytest's
rootdir-relative import), which ``from strategies import ...`` relies on.

Law of the profile: a property test fails because of what it found, never because the
machine was busy. The ``ci`` profile (the default; pick another with
``HYPOTHESIS_PROFILE``) has no per-example deadline and does not fail on the ``too_slow``
health check — on two cores shared with other work, generating a trace or a commit log
legitimately takes over a second. Every other health check stays on, and a test's own
``@settings`` still wins for the options it names.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from flowchart import FlowChart, decide, flow_chart
from flowchart.testing import text_snapshot, trace_snapshot  # noqa: F401

settings.register_profile("ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True)
settings.register_profile("dev", print_blob=True)  # hypothesis's defaults: deadlines and every health check
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


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
