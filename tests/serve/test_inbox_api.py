"""The inbox's JSON API over a real uvicorn server: listing, a run's page, decisions (approve,
decline, edit, respond), answer-once, and every refusal with its pinned message."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest
from inbox_server import Setup, cancel_agent, login

from agent import Paused
from agent.cli import main as agent_main
from agent.serve import inbox_app
from examples import support_agent as demo
from flowchart.store import SqliteStore


def paused_refund(setup: Setup, identity: Any = None) -> Paused:
    """The demo's refund of order A-1001, paused at its check-in, in the setup's store."""
    paused = demo.build_agent(SqliteStore(setup.db)).run(demo.QUESTION, identity=identity)
    assert isinstance(paused, Paused) and paused.check_in is not None
    return paused


def inbox(setup: Setup, serve: Any, **options: Any) -> tuple[str, Any]:
    """The inbox over the setup's store with the demo agent; (base url, the app)."""
    store = SqliteStore(setup.db)
    app = inbox_app(store, options.pop("agent", demo.build_agent(store)), users=setup.users, **options)
    return serve(app), app


def decide(url: str, setup: Setup, who: str, run_id: str, body: Any) -> httpx.Response:
    return httpx.post(f"{url}/api/runs/{run_id}/decision", headers=setup.headers(who), json=body, timeout=30)


def refunds_in(setup: Setup, run_id: str) -> list[str]:
    """The issue_refund results the run's history holds (each is one refund that ran)."""
    history = SqliteStore(setup.db).get(run_id).record.shown().final_state["history"]
    return [m["content"] for m in history if m.get("role") == "tool" and m.get("tool_name") == "issue_refund"]


def test_health_is_open_and_every_other_route_needs_a_token(setup: Setup, serve: Any) -> None:
    """/health answers anyone; the API answers 401 without a token or with a wrong one."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    assert httpx.get(f"{url}/health").json() == {"ok": True}
    routes = ["/api/runs", f"/api/runs/{paused.run_id}", f"/api/runs/{paused.run_id}/receipt/x", "/api/events"]
    for route in routes:
        for headers in ({}, {"authorization": "Bearer alice.wrong"}, {"authorization": "Basic abc"}):
            reply = httpx.get(url + route, headers=headers)
            assert reply.status_code == 401, route
            assert reply.json() == {
                "error": "authenticate: send Authorization: Bearer TOKEN (agent users add prints one)"
            }
    reply = httpx.post(f"{url}/api/runs/{paused.run_id}/decision", json={})
    assert reply.status_code == 401


def test_the_list_pages_paused_runs_newest_first_by_cursor(setup: Setup, serve: Any) -> None:
    """Three paused refunds: pages of two by cursor, newest first, each row saying what it wants."""
    ids = [paused_refund(setup).run_id for _ in range(3)]
    url, _ = inbox(setup, serve)
    first = httpx.get(f"{url}/api/runs?status=paused&limit=2", headers=setup.headers("vera")).json()
    assert [r["run_id"] for r in first["runs"]] == ids[::-1][:2]
    assert first["runs"][0]["wants"] == "issue_refund(order_id=A-1001, amount=129.0)"
    assert first["runs"][0]["kind"] == "check_in" and first["runs"][0]["request_id"].startswith("cki_")
    second = httpx.get(
        f"{url}/api/runs", params={"limit": 2, "cursor": first["next"]}, headers=setup.headers("vera")
    ).json()
    assert [r["run_id"] for r in second["runs"]] == ids[:1] and second["next"] is None
    by_tool = httpx.get(f"{url}/api/runs?tool=lookup_order", headers=setup.headers("vera")).json()
    assert by_tool["runs"] == []


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("status=sleeping", "parameter 'status': one of paused, running, done, failed, all; got 'sleeping'"),
        ("limit=0", "parameter 'limit': a whole number from 1 to 200; got '0'"),
        ("limit=x", "parameter 'limit': a whole number from 1 to 200; got 'x'"),
        ("max_age=-3", "parameter 'max_age': a positive number of seconds; got '-3'"),
    ],
)
def test_bad_list_parameters_are_400_naming_the_parameter(setup: Setup, serve: Any, query: str, message: str) -> None:
    """A bad query parameter is refused naming it."""
    url, _ = inbox(setup, serve)
    reply = httpx.get(f"{url}/api/runs?{query}", headers=setup.headers("alice"))
    assert reply.status_code == 400 and reply.json() == {"error": message}


def test_a_bad_cursor_is_400(setup: Setup, serve: Any) -> None:
    """A cursor the store did not make is refused, saying what to pass."""
    url, _ = inbox(setup, serve)
    reply = httpx.get(f"{url}/api/runs?cursor=nope", headers=setup.headers("alice"))
    assert reply.status_code == 400
    assert reply.json()["error"].startswith("parameter 'cursor': list(after='nope'): not a cursor of this listing")


def test_a_runs_page_holds_the_evidence_the_story_and_the_ledger(setup: Setup, serve: Any) -> None:
    """GET /api/runs/{id}: the check-in's evidence pack, the story so far, the ledger (the card
    mask), the request id, the viewer link; the customer's message stays hidden by the run's rule."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    run = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("vera")).json()
    assert run["request_id"] == paused.check_in.id
    assert run["evidence"]["will_do"] == "Refund an amount on an order. — with order_id=A-1001, amount=129.0"
    assert run["evidence"]["drivers"][0]["text"].startswith("lookup_order:")
    assert [row["middleware"] for row in run["ledger"]] == ["mask-cards"]
    assert run["message"] == "REDACTED" and run["message_hidden"] is True and "4111" not in json.dumps(run)
    assert run["viewer"] == f"/runs/{paused.run_id}/view" and run["story"]
    missing = httpx.get(f"{url}/api/runs/nope", headers=setup.headers("vera"))
    assert missing.status_code == 404 and missing.json() == {"error": "no run 'nope' in this store"}


def test_approve_resumes_the_run_refunds_once_and_names_the_approver(setup: Setup, serve: Any) -> None:
    """alice approves through the API: the run finishes in the server's process, the refund ran once,
    the human_decisions row and `agent why` name alice, and the receipt is hers."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    reply = decide(url, setup, "alice", paused.run_id, {"request_id": paused.check_in.id, "approved": True})
    assert reply.status_code == 200, reply.text
    out = reply.json()
    assert out["status"] == "done" and out["resumed"] == "in-process"
    assert out["decision"]["by"] == "alice" and out["decision"]["approved"] is True
    assert out["receipt"]["receipt"]["approver"] == "alice"
    assert refunds_in(setup, paused.run_id) == ["refunded 129.00 on A-1001"]
    run = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("alice")).json()
    assert run["decided"] == ["alice approved issue_refund(order_id=A-1001, amount=129.0)"]
    assert run["output"].startswith("I've refunded the duplicate charge")
    assert any("approved by alice" in line for line in run["story"])


def test_an_edited_approval_runs_the_edited_call_and_keeps_both_versions(
    setup: Setup, serve: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Edit the amount, approve: the refund runs with 64.5, the decision row keeps before and after,
    and `agent why` says who approved and the edited args."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    edited = {"order_id": "A-1001", "amount": 64.5}
    body = {"request_id": paused.check_in.id, "approved": True, "args": edited, "note": "half now"}
    assert decide(url, setup, "alice", paused.run_id, body).status_code == 200
    assert refunds_in(setup, paused.run_id) == ["refunded 64.50 on A-1001"]
    (row,) = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("alice")).json()["human_decisions"]
    assert row["before"] == {"order_id": "A-1001", "amount": 129.0} and row["after"] == edited
    assert agent_main(["why", paused.run_id, "--db", setup.db]) == 0
    why = capsys.readouterr().out
    assert "approved by alice" in why and 'args edited to {"order_id": "A-1001", "amount": 64.5}' in why


def test_edited_args_that_fail_the_schema_are_400_and_nothing_is_recorded(setup: Setup, serve: Any) -> None:
    """An edit the tool's schema refuses: 400 naming the problem; the run is still paused, unanswered."""
    paused = paused_refund(setup)
    url, app = inbox(setup, serve)
    body = {"request_id": paused.check_in.id, "approved": True, "args": {"order_id": "A-1001", "amount": "lots"}}
    reply = decide(url, setup, "alice", paused.run_id, body)
    assert reply.status_code == 400
    assert reply.json()["error"].startswith("the edited args do not fit tool 'issue_refund': ")
    record = SqliteStore(setup.db).get(paused.run_id)
    assert record.status == "paused" and record.answered == frozenset()
    (audit,) = app.state.inbox.ledger.audit_rows(paused.run_id)
    assert (audit["who"], audit["action"], audit["outcome"]) == ("alice", "edit-approve", "400")


def test_decline_with_a_note_runs_nothing(setup: Setup, serve: Any) -> None:
    """A decline: the refund never runs; the model reads the note; the row says declined by bob."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    body = {"request_id": paused.check_in.id, "approved": False, "note": "not a duplicate"}
    out = decide(url, setup, "bob", paused.run_id, body).json()
    assert out["receipt"]["receipt"]["verdict"] == "declined"
    assert refunds_in(setup, paused.run_id) == ["declined by human: not a duplicate"]
    run = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("bob")).json()
    assert run["decided"] == ["bob declined issue_refund(order_id=A-1001, amount=129.0): not a duplicate"]


def test_respond_answers_an_ask_human_pause(setup: Setup, serve: Any) -> None:
    """An ask_human pause takes a text response: the run finishes; a decision body is refused."""
    store = SqliteStore(setup.db)
    paused = cancel_agent(store).run("Cancel my order")
    assert isinstance(paused, Paused)
    url, _ = inbox(setup, serve, agent=cancel_agent(store))
    row = httpx.get(f"{url}/api/runs", headers=setup.headers("alice")).json()["runs"][0]
    assert row["kind"] == "ask_human" and row["wants"] == "asks: Cancel order A-7?"
    wrong = decide(url, setup, "alice", paused.run_id, {"request_id": row["request_id"], "approved": True})
    assert wrong.status_code == 400
    assert wrong.json() == {"error": "field 'response': this run waits on an ask_human question; answer it with text"}
    out = decide(url, setup, "alice", paused.run_id, {"request_id": row["request_id"], "response": "yes, cancel"})
    assert out.status_code == 200, out.text
    assert out.json()["status"] == "done" and out.json()["receipt"]["receipt"]["verdict"] == "answered"
    assert SqliteStore(setup.db).get(paused.run_id).output == "Order A-7 is cancelled."


def test_a_second_decision_is_409_naming_who_decided(setup: Setup, serve: Any) -> None:
    """Answer-once: after alice's approval, bob's decline (and alice's replay) are 409s that name
    alice and when; nothing more is recorded."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    body = {"request_id": paused.check_in.id, "approved": True}
    first = decide(url, setup, "alice", paused.run_id, body).json()
    at = first["decision"]["at"]
    for who, again in (("bob", {**body, "approved": False}), ("alice", body)):
        reply = decide(url, setup, who, paused.run_id, again)
        assert reply.status_code == 409
        assert reply.json() == {
            "error": f"request '{paused.check_in.id}' of run '{paused.run_id}' was already decided by alice at {at}"
        }
    assert refunds_in(setup, paused.run_id) == ["refunded 129.00 on A-1001"]


def test_two_approvers_racing_on_one_pause_one_wins(setup: Setup, serve: Any) -> None:
    """alice and bob approve at the same moment: exactly one 200, the other a 409 naming the winner;
    one refund."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    body = {"request_id": paused.check_in.id, "approved": True}
    replies: dict[str, httpx.Response] = {}
    start = threading.Barrier(2)

    def go(who: str) -> None:
        start.wait()
        replies[who] = decide(url, setup, who, paused.run_id, body)

    threads = [threading.Thread(target=go, args=(who,)) for who in ("alice", "bob")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    codes = sorted(r.status_code for r in replies.values())
    assert codes == [200, 409]
    winner = next(who for who, r in replies.items() if r.status_code == 200)
    loser = next(r for r in replies.values() if r.status_code == 409)
    assert f"was already decided by {winner} at " in loser.json()["error"]
    assert refunds_in(setup, paused.run_id) == ["refunded 129.00 on A-1001"]


def test_refusals_name_the_problem_and_record_only_an_audit_row(setup: Setup, serve: Any) -> None:
    """Each bad decision: its status and pinned message; the run stays paused and unanswered."""
    paused = paused_refund(setup)
    other = paused_refund(setup)
    url, app = inbox(setup, serve)
    rid, run = paused.check_in.id, paused.run_id
    cases: list[tuple[str, Any, int, str]] = [
        ("vera", {"request_id": rid, "approved": True}, 403, "vera has the viewer role: only an approver may decide"),
        (
            "alice",
            {"request_id": rid, "approved": True, "by": "mallory"},
            400,
            "unknown field 'by' (the approver is who you authenticated as, never a field); allowed: "
            "request_id, approved, note, args, response",
        ),
        ("alice", ["approve"], 400, "the body must be a JSON object {request_id, approved, note?, args?, response?}"),
        (
            "alice",
            {"approved": True},
            400,
            "field 'request_id': the id of the request you decide on (a non-empty string)",
        ),
        ("alice", {"request_id": rid, "approved": "yes"}, 400, "field 'approved': true or false"),
        ("alice", {"request_id": rid}, 400, "field 'approved': true to approve, false to decline"),
        (
            "alice",
            {"request_id": rid, "approved": False, "args": {"amount": 1}},
            400,
            "field 'args': only an approval edits the arguments (a decline runs nothing)",
        ),
        (
            "alice",
            {"request_id": rid, "response": "ok"},
            400,
            f"field 'response': run '{run}' waits on a check_in decision; send 'approved'",
        ),
        (
            "alice",
            {"request_id": other.check_in.id, "approved": True},
            409,
            f"request '{other.check_in.id}' is not the pause run '{run}' waits on (it waits on '{rid}'): "
            "reload the run and decide on its current request",
        ),
    ]
    for who, body, status, message in cases:
        reply = decide(url, setup, who, run, body)
        assert (reply.status_code, reply.json()) == (status, {"error": message}), body
    raw = httpx.post(
        f"{url}/api/runs/{run}/decision",
        headers={**setup.headers("alice"), "content-type": "application/json"},
        content=b"{not json",
    )
    assert raw.status_code == 400 and raw.json()["error"].startswith("the body is not JSON: ")
    big = httpx.post(
        f"{url}/api/runs/{run}/decision", headers=setup.headers("alice"), content=b"{" + b" " * (1024 * 1024 + 1)
    )
    assert (big.status_code, big.json()) == (400, {"error": "the request body is over 1 MB"})
    gone = decide(url, setup, "alice", "no-such-run", {"request_id": rid, "approved": True})
    assert (gone.status_code, gone.json()) == (404, {"error": "no run 'no-such-run' in this store"})
    record = SqliteStore(setup.db).get(run)
    assert record.status == "paused" and record.answered == frozenset()
    audit = app.state.inbox.ledger.audit_rows(run)
    assert [(a["who"], a["outcome"]) for a in audit][:2] == [("vera", "403"), ("alice", "400")]
    assert len(audit) == len(cases) + 2


def test_a_decision_on_a_run_that_is_not_paused_is_409(setup: Setup, serve: Any) -> None:
    """A finished run takes no decision."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    decide(url, setup, "alice", paused.run_id, {"request_id": paused.check_in.id, "approved": True})
    reply = decide(url, setup, "bob", paused.run_id, {"request_id": "cki_other", "approved": True})
    assert (reply.status_code, reply.json()) == (
        409,
        {"error": f"run '{paused.run_id}' is done: it is not waiting for a decision"},
    )


def test_an_unknown_tool_is_400(setup: Setup, serve: Any) -> None:
    """An inbox whose agent has no such tool refuses the decision before recording it."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve, agent=cancel_agent(SqliteStore(setup.db)))
    reply = decide(url, setup, "alice", paused.run_id, {"request_id": paused.check_in.id, "approved": True})
    assert (reply.status_code, reply.json()) == (
        400,
        {"error": "unknown tool 'issue_refund': the agent this inbox serves has no such tool"},
    )


def test_a_cookie_session_post_without_the_csrf_header_is_403(setup: Setup, serve: Any) -> None:
    """Logged in by the page (a session cookie), an API POST must carry the page's CSRF token."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    with httpx.Client(base_url=url) as browser:
        assert login(browser, setup.tokens["alice"]).status_code == 303
        body = {"request_id": paused.check_in.id, "approved": True}
        reply = browser.post(f"/api/runs/{paused.run_id}/decision", json=body)
        assert (reply.status_code, reply.json()) == (
            403,
            {"error": "CSRF token missing or wrong: send the page's X-CSRF-Token header"},
        )
        assert browser.get("/api/runs").status_code == 200  # reading needs no CSRF token


def test_a_conversation_turns_page_shows_the_earlier_turns(setup: Setup, serve: Any) -> None:
    """Turn 2 of a conversation, paused: its page lists turn 1's message and answer."""
    second_call = {"content": "", "tool_calls": [{"id": "c2", "name": "confirm", "args": {"order": "B-2"}}]}
    store = SqliteStore(setup.db)
    agent = cancel_agent(store, more=(second_call, "Order B-2 is cancelled."))
    first = agent.run("Cancel A-7", conversation="c-1")
    assert isinstance(first, Paused)
    agent.resume_run(first.run_id, "yes")
    second = agent.run("And B-2 please", conversation="c-1")
    assert isinstance(second, Paused)
    url, _ = inbox(setup, serve, agent=agent)
    run = httpx.get(f"{url}/api/runs/{second.run_id}", headers=setup.headers("alice")).json()
    assert (run["conversation"], run["turn"], run["wants"]) == ("c-1", 2, "asks: Cancel order B-2?")
    assert [(t["turn"], t["message"], t["answer"]) for t in run["earlier_turns"]] == [
        (1, "Cancel A-7", "Order A-7 is cancelled.")
    ]


def test_the_viewer_page_of_a_run_needs_a_login(setup: Setup, serve: Any) -> None:
    """/runs/{id}/view: the login page without a session; with one, the run's viewer page (its own
    CSP, one script by hash) with the agent's story panel."""
    paused = paused_refund(setup)
    url, _ = inbox(setup, serve)
    with httpx.Client(base_url=url) as browser:
        assert browser.get(f"/runs/{paused.run_id}/view").headers["location"] == "/login"
        login(browser, setup.tokens["vera"])
        page = browser.get(f"/runs/{paused.run_id}/view")
        assert page.status_code == 200 and "default-src 'none'" in page.text
        assert paused.run_id in page.text
        assert browser.get("/runs/nope/view").status_code == 404
        # the run's own page words a message the rule hides, never the log's placeholder
        own = browser.get(f"/runs/{paused.run_id}").text
        assert "The person's message is hidden by the run's redaction rule." in own
        assert "REDACTED" not in own.split('id="message-in"')[1].split("</")[0]


def test_a_middleware_ask_is_decided_like_a_check_in(setup: Setup, serve: Any) -> None:
    """A before-tool middleware that asks a person: the row says who asks; approving runs the call."""
    from types import SimpleNamespace

    from agent import Agent, define_tool
    from agent.providers import scripted
    from governance import allow, ask

    def build(store: Any) -> Any:
        refund = define_tool(
            name="refund",
            description="Refund an order.",
            input_schema={"type": "object", "properties": {"amount": {"type": "number"}}},
            execute=lambda args, ctx: f"refunded {args['amount']}",
        )
        big = SimpleNamespace(
            name="big-refunds",
            on_tool_call=lambda call: ask("Refund more than 100?") if call.args["amount"] > 100 else allow(),
        )
        replies = [{"content": "", "tool_calls": [{"id": "c1", "name": "refund", "args": {"amount": 500}}]}, "Ok."]
        return (
            Agent.create(provider=scripted(replies), model="mock", store=store)
            .tool(refund)
            .tool_middleware(big)
            .build()
        )

    store = SqliteStore(setup.db)
    paused = build(store).run("Refund order 42")
    assert isinstance(paused, Paused) and paused.ask is not None
    url, _ = inbox(setup, serve, agent=build(store))
    run = httpx.get(f"{url}/api/runs/{paused.run_id}", headers=setup.headers("alice")).json()
    assert (run["kind"], run["wants"], run["evidence"]["question"]) == (
        "ask",
        "refund(amount=500)",
        "Refund more than 100?",
    )
    out = decide(url, setup, "alice", paused.run_id, {"request_id": paused.ask.id, "approved": True}).json()
    assert out["status"] == "done" and SqliteStore(setup.db).get(paused.run_id).output == "Ok."
