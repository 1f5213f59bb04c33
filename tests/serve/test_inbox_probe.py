"""The inbox is a reader of runs too: the canary probe (``record_probe``) served through it.

The probe agent pays with a secret card under a rule that hides the user's message, the model's
texts and the answer. While it waits, the inbox shows the call as asked (a person approves the
real arguments, as ``agent runs show`` prints them) and nothing else of the secret; once
approved, no page or API answer of the run shows it anywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
from inbox_server import Setup, login

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "record"))
from record_probe import SECRET, leaking, probe_agent

from agent.serve import inbox_app
from flowchart.store import SqliteStore


def _without_the_call(run: dict[str, Any]) -> dict[str, Any]:
    """The run's JSON less what shows the pending call as asked (its arguments, by design)."""
    return {k: v for k, v in run.items() if k not in ("wants", "args", "evidence", "question")}


def test_no_inbox_page_or_answer_shows_what_the_run_hides(setup: Setup, serve: Any) -> None:
    """List, run API and run page while paused (the call's own arguments aside), then after the
    approval through the inbox: the secret is in none of them."""
    store = SqliteStore(setup.db)
    agent = probe_agent(store, turns=1)
    paused = agent.run(f"pay with {SECRET}")
    url = serve(inbox_app(store, agent, users=setup.users))
    listed = httpx.get(f"{url}/api/runs?status=paused", headers=setup.headers("alice")).json()
    run = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("alice")).json()
    assert SECRET in run["wants"]  # the call as asked: what the person approves
    readings: list[tuple[str, Any]] = [
        ("list", [_without_the_call(r) for r in listed["runs"]]),
        ("run", _without_the_call(run)),
    ]
    body = {"request_id": paused.check_in.id, "approved": True}
    decided = httpx.post(f"{url}/api/runs/{paused.run_id}/decision", headers=setup.headers("alice"), json=body)
    assert decided.status_code == 200, decided.text
    done = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("alice")).json()
    with httpx.Client(base_url=url) as browser:
        login(browser, setup.tokens["alice"])
        page = browser.get(f"/runs/{paused.run_id}").text
    readings += [("decision", decided.json()), ("run, done", done), ("page, done", page)]
    assert done["status"] == "done" and store.get(paused.run_id).output == f"done, card {SECRET}"
    assert leaking(readings) == []
