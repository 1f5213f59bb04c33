"""The loan-approval example: its commit log is snapshot-tested and its routes are exact."""

from __future__ import annotations

import json

import pytest

from examples import loan
from flowchart import replay

APPLICANTS = {
    "approve": loan.APPLICANT,
    "manual-review": {**loan.APPLICANT, "credit_score": 650, "debt": 30000},
    "reject": {**loan.APPLICANT, "credit_score": 580},
}


@pytest.mark.parametrize("route", list(APPLICANTS))
def test_loan_commit_log_matches_its_snapshot(route, snapshot):
    """The whole commit log of each route is stable, JSON-safe and replays to the final state."""
    result = loan.run(APPLICANTS[route])
    log = [c.to_dict() for c in result.commit_log]
    assert result.state["decision"] == {"approve": "approved", "reject": "rejected"}.get(route, route)
    assert json.loads(json.dumps(log)) == log
    assert replay(result.commit_log) == result.state
    assert log == snapshot


def test_loan_routes_run_one_branch_then_notify():
    """Each application runs application → assess → route → its one branch → notify."""
    stages = {route: [c.stage_id for c in loan.run(a).commit_log] for route, a in APPLICANTS.items()}
    assert stages == {
        "approve": ["application", "assess", "route", "approve", "notify"],
        "manual-review": ["application", "assess", "route", "manual-review", "notify"],
        "reject": ["application", "assess", "route", "reject", "notify"],
    }


def test_loan_main_prints_the_log_and_the_state(capsys):
    """``main()`` prints one JSON line per commit, then the final state."""
    loan.main()
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "commit log:"
    assert [json.loads(line)["stage_id"] for line in lines[1:6]] == [
        "application",
        "assess",
        "route",
        "approve",
        "notify",
    ]
    assert lines[6] == "final state:"
    assert lines[-1] == "output: Dear Ada, your application is approved."
