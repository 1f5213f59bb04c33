"""The inbox's policies (four-eyes, expiry, no self-approval), its authentication (users file,
trusted header), its commands (`agent users add`, `agent receipt verify`) and its receipts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from inbox_server import Setup
from test_inbox_api import decide, inbox, paused_refund, refunds_in

from agent.cli import main as agent_main
from agent.serve import Policies, UsersFile, inbox_app, trusted_header
from examples import support_agent as demo
from flowchart.store import SqliteStore


def test_four_eyes_needs_two_different_approvers(setup: Setup, serve: Any) -> None:
    """issue_refund under four-eyes: alice's approval is pending; alice again is 409; bob's
    approval resumes the run, the decision naming both; one refund."""
    paused = paused_refund(setup)
    url, app = inbox(setup, serve, policies=Policies(four_eyes={"issue_refund"}))
    body = {"request_id": paused.check_in.id, "approved": True}
    first = decide(url, setup, "alice", paused.run_id, body)
    assert first.status_code == 200
    assert first.json() == {
        "run_id": paused.run_id,
        "request_id": paused.check_in.id,
        "status": "paused",
        "pending": "four-eyes: approved by alice, waiting for a second approver",
    }
    assert SqliteStore(setup.db).get(paused.run_id).status == "paused"
    again = decide(url, setup, "alice", paused.run_id, body)
    assert (again.status_code, again.json()) == (
        409,
        {"error": "four-eyes: alice approved this already; a second, different approver must approve"},
    )
    second = decide(url, setup, "bob", paused.run_id, body).json()
    assert second["status"] == "done" and second["decision"]["by"] == "alice and bob"
    assert second["receipt"]["receipt"]["policy"] == "four-eyes"
    assert refunds_in(setup, paused.run_id) == ["refunded 129.00 on A-1001"]
    outcomes = [(a["who"], a["outcome"]) for a in app.state.inbox.ledger.audit_rows(paused.run_id)]
    assert outcomes == [("alice", "pending-second-approver"), ("alice", "409"), ("bob", "decided")]


def test_an_expired_pause_is_410_and_shown_expired(setup: Setup, serve: Any) -> None:
    """A pause older than expire_after cannot be decided (410) and lists as expired."""
    paused = paused_refund(setup)
    url, app = inbox(setup, serve, policies=Policies(expire_after=60))
    app.state.inbox.clock = lambda: SqliteStore(setup.db).get(paused.run_id).updated_at + 61
    row = httpx.get(f"{url}/api/runs", headers=setup.headers("alice")).json()["runs"][0]
    assert row["expired"] is True
    reply = decide(url, setup, "alice", paused.run_id, {"request_id": paused.check_in.id, "approved": True})
    assert reply.status_code == 410
    assert reply.json()["error"].startswith(f"the pause of run '{paused.run_id}' expired: paused since ")
    assert reply.json()["error"].endswith("longer than the policy's 60s; it can no longer be decided here")


def test_no_self_approval_refuses_the_runs_starter(setup: Setup, serve: Any) -> None:
    """A run started by alice (its recorded identity) cannot be decided by alice; bob can."""
    paused = paused_refund(setup, identity={"user": "alice"})
    url, app = inbox(setup, serve, policies=Policies(no_self_approval=True))
    body = {"request_id": paused.check_in.id, "approved": True}
    mine = decide(url, setup, "alice", paused.run_id, body)
    assert (mine.status_code, mine.json()) == (
        403,
        {"error": f"alice started run '{paused.run_id}': the policy forbids deciding your own run"},
    )
    assert decide(url, setup, "bob", paused.run_id, body).json()["status"] == "done"
    assert [a["outcome"] for a in app.state.inbox.ledger.audit_rows(paused.run_id)] == ["403", "decided"]


def test_a_policies_file_is_read_strictly(tmp_path: Path) -> None:
    """The command's policies file: the three keys; an unknown key or a wrong type is named."""
    good = tmp_path / "p.json"
    good.write_text(json.dumps({"four_eyes": ["issue_refund"], "expire_after": 3600, "no_self_approval": True}))
    assert Policies.from_file(good) == Policies(frozenset({"issue_refund"}), 3600.0, True)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"four_eye": []}))
    with pytest.raises(ValueError, match=r"unknown key 'four_eye'; allowed: four_eyes, expire_after, no_self_approval"):
        Policies.from_file(bad)
    bad.write_text(json.dumps({"expire_after": "1h"}))
    with pytest.raises(ValueError, match=r"'expire_after' must be a positive number of seconds"):
        Policies.from_file(bad)


def test_users_add_prints_the_token_once_and_keeps_only_its_scrypt_hash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`agent users add` prints NAME.SECRET; the file holds a salt and an scrypt hash, not the token;
    the token authenticates, a changed one does not; a bad role or name is refused."""
    users = tmp_path / "users.json"
    assert agent_main(["users", "add", "alice", "--role", "approver", "--file", str(users)]) == 0
    token = capsys.readouterr().out.splitlines()[-1]
    assert token.startswith("alice.")
    secret = token.split(".", 1)[1]
    stored = json.loads(users.read_text())["users"]["alice"]
    assert secret not in users.read_text() and stored["role"] == "approver" and len(stored["hash"]) == 64
    check = UsersFile(users).check
    assert check(token) is not None and check(token).name == "alice"  # type: ignore[union-attr]
    assert check(token + "x") is None and check("bob." + secret) is None
    assert agent_main(["users", "add", "bob", "--role", "admin", "--file", str(users)]) == 2
    assert "invalid choice: 'admin'" in capsys.readouterr().err
    assert agent_main(["users", "add", "a b", "--file", str(users)]) == 2
    assert "user name 'a b': use 1-64 letters" in capsys.readouterr().err


def test_a_trusted_header_is_believed_only_from_the_given_addresses(setup: Setup, serve: Any) -> None:
    """X-Forwarded-User from 127.0.0.1 (listed) names the approver; from an unlisted proxy it is ignored."""
    paused_refund(setup)
    store = SqliteStore(setup.db)
    trusted = serve(inbox_app(store, None, trusted_header("X-Forwarded-User", ["127.0.0.1"])))
    assert httpx.get(f"{trusted}/api/runs", headers={"x-forwarded-user": "dana"}).status_code == 200
    elsewhere = serve(inbox_app(store, None, trusted_header("X-Forwarded-User", ["10.0.0.7"])))
    assert httpx.get(f"{elsewhere}/api/runs", headers={"x-forwarded-user": "dana"}).status_code == 401


def _receipt_file(setup: Setup, serve: Any, tmp_path: Path) -> tuple[str, Path, dict[str, Any]]:
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    body = {"request_id": paused.check_in.id, "approved": True, "args": {"order_id": "A-1001", "amount": 99.0}}
    assert decide(url, setup, "carol", paused.run_id, body).status_code == 200
    reply = httpx.get(f"{url}/api/runs/{paused.run_id}/receipt/{paused.check_in.id}", headers=setup.headers("vera"))
    assert reply.status_code == 200 and "attachment" in reply.headers["content-disposition"]
    receipt = reply.json()
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(receipt))
    return paused.run_id, path, receipt


def test_a_receipt_is_bound_to_the_decision_and_verifies_offline(
    setup: Setup, serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The receipt names run, request, approver, verdict, policy, the digests and the chain head the
    decision row recorded; `agent receipt verify` says it holds."""
    run_id, path, receipt = _receipt_file(setup, serve, tmp_path)
    body = receipt["receipt"]
    (row,) = SqliteStore(setup.db).get(run_id).record.shown().final_state["human_decisions"]
    assert (body["approver"], body["verdict"], body["policy"]) == ("carol", "approved", "one approver")
    assert body["chain_head"] == row["store_head"] and len(body["evidence_digest"]) == 64
    assert receipt["signature"].startswith("hmac-sha256:")
    assert agent_main(["receipt", "verify", str(path), "--store", setup.db]) == 0
    assert capsys.readouterr().out.startswith(f"receipt holds: approved by carol at {body['at']} on request ")


def test_a_tampered_receipt_names_what_does_not_match(
    setup: Setup, serve: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Change the approver: the signature breaks and the approver differs from the run's row (exit 1)."""
    _run_id, path, receipt = _receipt_file(setup, serve, tmp_path)
    receipt["receipt"]["approver"] = "mallory"
    path.write_text(json.dumps(receipt))
    assert agent_main(["receipt", "verify", str(path), "--store", setup.db]) == 1
    err = capsys.readouterr().err
    assert "signature: does not match the body under this key (a field was changed, or another key)" in err
    assert "approver: the run records 'carol', the receipt 'mallory'" in err
    receipt["receipt"]["run_id"] = "elsewhere"
    path.write_text(json.dumps(receipt))
    assert agent_main(["receipt", "verify", str(path), "--store", setup.db]) == 1
    assert "run_id: no run 'elsewhere' in this store" in capsys.readouterr().err


def test_the_demo_through_the_inbox_names_the_approver_and_the_edit(setup: Setup, serve: Any) -> None:
    """Done when: the demo's paused refund, edited to 64.5 and approved by alice through the inbox;
    `agent why` names alice and the edited args (the inbox story of the issue)."""
    paused = demo.build_agent(SqliteStore(setup.db)).run(demo.QUESTION)
    url, _ = inbox(setup, serve)
    body = {"request_id": paused.check_in.id, "approved": True, "args": {"order_id": "A-1001", "amount": 64.5}}
    assert decide(url, setup, "alice", paused.run_id, body).json()["status"] == "done"
    run = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("alice")).json()
    assert run["decided"] == [
        "alice approved issue_refund(order_id=A-1001, amount=129.0), "
        "edited to issue_refund(order_id=A-1001, amount=64.5)"
    ]
