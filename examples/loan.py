"""Loan approval: a small flowchart that shows the whole engine at work.

    application ──► assess (decide(): filter rules → risk tier) ──► route (decider)
        ├─ 'approve'        ──► approve
        ├─ 'manual-review'  ──► manual review
        └─ 'reject' (default) ──► reject
    ──► notify

Every stage commits its net change, so the commit log printed by ``main()`` is the whole
story of the run: which stage wrote what, in order. Run it with ``python -m examples.loan``
(or ``python examples/loan.py``); draw it with ``flowchart show examples.loan:chart``.
"""

from __future__ import annotations

import json
from typing import Any

from flowchart import FlowChart, RunResult, decide, flow_chart

APPLICANT = {"name": "Ada", "income": 84000, "debt": 21000, "credit_score": 712, "amount": 25000}

RISK_RULES: list[dict[str, Any]] = [
    {
        "when": {"credit_score": {"gte": 700}, "dti": {"lt": 0.3}},
        "then": "low",
        "label": "Strong credit, low debt",
    },
    {
        "when": {"credit_score": {"gte": 620}, "dti": {"lt": 0.45}},
        "then": "medium",
        "label": "Fair credit, manageable debt",
    },
]


def application(scope: Any, ctx: Any) -> None:
    """Copy the application (the run input, read-only as ``ctx.args``) into the state."""
    applicant = ctx.args["applicant"]
    scope.application = {"name": applicant["name"], "amount": applicant["amount"]}
    scope.credit_score = applicant["credit_score"]
    scope.dti = round(applicant["debt"] / applicant["income"], 3)
    scope.checks = ["application received"]


def assess(scope: Any) -> None:
    """Give the applicant a risk tier with ``decide()`` filter rules, keeping the evidence."""
    tier = decide(scope, RISK_RULES, "high")
    scope.risk_tier = tier.branch
    scope.risk_rule = next((r["label"] for r in tier.evidence["rules"] if r["matched"]), None)
    scope.checks.append(f"risk tier {tier.branch}")


def route(scope: Any) -> Any:
    """The decider: low risk is approved, medium goes to a person, anything else is rejected."""
    return decide(
        scope,
        [
            {"when": {"risk_tier": {"eq": "low"}}, "then": "approve", "label": "Low risk"},
            {"when": {"risk_tier": {"eq": "medium"}}, "then": "manual-review", "label": "Medium risk"},
        ],
        "reject",
    )


def approve(scope: Any) -> None:
    """Approve the loan at a rate that depends on the credit score."""
    scope.decision = "approved"
    scope.application["rate"] = 0.049 if scope.credit_score >= 750 else 0.061


def manual_review(scope: Any) -> None:
    """Queue the application for a loan officer."""
    scope.decision = "manual-review"
    scope.queue = "loan-officers"


def reject(scope: Any) -> None:
    """Reject the application, saying why."""
    scope.decision = "rejected"
    scope.reason = f"risk tier {scope.risk_tier}"


def notify(scope: Any) -> str:
    """Record the notification and return the message sent."""
    name = scope.application["name"]
    message = f"Dear {name}, your application is {scope.decision}."
    scope.checks.append("applicant notified")
    return message


def build_chart() -> FlowChart:
    """The loan-approval chart."""
    return (
        flow_chart("Application", application, "application", description="reads the application")
        .add_function("Assess", assess, "assess", description="sets the risk tier")
        .add_decider_function("Route", route, "route", description="approve, review or reject")
        .add_function_branch("approve", "Approve", approve)
        .add_function_branch("manual-review", "Manual review", manual_review)
        .add_function_branch("reject", "Reject", reject)
        .set_default("reject")
        .end()
        .add_function("Notify", notify, "notify")
        .build()
    )


chart = build_chart()


def run(applicant: dict[str, Any] | None = None) -> RunResult:
    """Run the chart for ``applicant`` (the example applicant by default)."""
    return chart.run({"applicant": applicant or APPLICANT})


def main() -> None:
    """Print the commit log (one JSON line per commit) and the final state."""
    result = run()
    print("commit log:")
    for commit in result.commit_log:
        print(json.dumps(commit.to_dict(), ensure_ascii=False))
    print("final state:")
    print(json.dumps(result.state, indent=2, ensure_ascii=False))
    print("output:", result.output)


if __name__ == "__main__":
    main()
