"""The inbox in Chromium: log in with a token, see the paused refund with its evidence, approve,
decline, edit, respond, race two browsers on one pause, and watch the list update live (SSE).
Every page: no console error, no request to another origin."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from inbox_server import Setup, cancel_agent, make_setup, served

from agent import Paused
from agent.serve import inbox_app
from examples import support_agent as demo
from flowchart.store import SqliteStore


@attrs.define
class Inbox:
    """A served inbox, its setup and the browser contexts opened on it."""

    url: str
    setup: Setup
    browser: Any
    shots: Path
    errors: list[str] = attrs.field(factory=list)
    requests: list[str] = attrs.field(factory=list)
    contexts: list[Any] = attrs.field(factory=list)

    def logged_in(self, who: str) -> Any:
        """A new browser context logged in as ``who``; its page on the list."""
        context = self.browser.new_context(viewport={"width": 1200, "height": 900}, service_workers="block")
        self.contexts.append(context)
        page = context.new_page()
        page.on("console", lambda m: self.errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))
        page.goto(f"{self.url}/login")
        page.fill("#token", self.setup.tokens[who])
        page.click("#login")
        page.wait_for_selector("#runs")
        return page

    def check_clean(self) -> None:
        assert self.errors == []
        assert [u for u in self.requests if not u.startswith(self.url)] == []


@pytest.fixture
def inbox(browser: Any, tmp_path: Path) -> Iterator[Any]:
    """``open_inbox(agent_factory=demo.build_agent)``: the inbox over a fresh store, served."""
    stack: list[Any] = []
    made: list[Inbox] = []

    def open_inbox(factory: Any = demo.build_agent) -> Inbox:
        setup = make_setup(tmp_path)
        store = SqliteStore(setup.db)
        server = served(inbox_app(store, factory(store), users=setup.users, poll=0.2))
        stack.append(server)
        made.append(Inbox(server.__enter__(), setup, browser, tmp_path))
        return made[-1]

    yield open_inbox
    for one in made:
        for context in one.contexts:
            context.close()
    for server in reversed(stack):
        server.__exit__(None, None, None)


def paused_refund(setup: Setup) -> Paused:
    paused = demo.build_agent(SqliteStore(setup.db)).run(demo.QUESTION)
    assert isinstance(paused, Paused) and paused.check_in is not None
    return paused


def test_log_in_see_the_refund_with_its_evidence_and_approve(inbox: Any) -> None:
    """The list shows what the run wants; its page shows the evidence; Approve finishes the run and
    the page says who decided, with the receipt to download."""
    box = inbox()
    paused = paused_refund(box.setup)
    page = box.logged_in("alice")
    row = page.locator(f'tr[data-run="{paused.run_id}"]')
    assert row.locator("a").inner_text() == "issue_refund(order_id=A-1001, amount=129.0)"
    page.screenshot(path=str(box.shots / "inbox-list.png"))
    row.locator("a").click()
    page.wait_for_selector("#request")
    assert page.inner_text("#will-do") == "Refund an amount on an order. — with order_id=A-1001, amount=129.0"
    page.screenshot(path=str(box.shots / "inbox-run.png"), full_page=True)
    page.fill("#note", "duplicate confirmed")
    page.click("#approve")
    page.wait_for_selector("#ok")
    assert page.inner_text("#ok") == "approve: recorded; the run is done"
    assert (
        page.inner_text("#decided") == "alice approved issue_refund(order_id=A-1001, amount=129.0): duplicate confirmed"
    )
    assert page.inner_text("#answer").startswith("I've refunded the duplicate charge")
    assert "receipt (JSON)" in page.inner_text("#receipts")
    box.check_clean()


def test_decline_and_edit_from_the_page(inbox: Any) -> None:
    """Decline with a note on one run; edit the amount and approve on another."""
    box = inbox()
    declined, edited = paused_refund(box.setup), paused_refund(box.setup)
    page = box.logged_in("bob")
    page.goto(f"{box.url}/runs/{declined.run_id}")
    page.fill("#note", "not a duplicate")
    page.click("#decline")
    page.wait_for_selector("#ok")
    assert page.inner_text("#decided") == "bob declined issue_refund(order_id=A-1001, amount=129.0): not a duplicate"
    page.goto(f"{box.url}/runs/{edited.run_id}")
    page.click("#edit-box summary")
    page.fill("#args", '{"order_id": "A-1001", "amount": 64.5}')
    page.click("#edit-approve")
    page.wait_for_selector("#ok")
    assert page.inner_text("#decided") == (
        "bob approved issue_refund(order_id=A-1001, amount=129.0), edited to issue_refund(order_id=A-1001, amount=64.5)"
    )
    box.check_clean()


def test_a_bad_edit_is_shown_and_the_run_stays_paused(inbox: Any) -> None:
    """Arguments the schema refuses: the page says why (400) and the run still waits."""
    box = inbox()
    paused = paused_refund(box.setup)
    page = box.logged_in("alice")
    page.goto(f"{box.url}/runs/{paused.run_id}")
    page.click("#edit-box summary")
    page.fill("#args", '{"order_id": "A-1001", "amount": "lots"}')
    page.click("#edit-approve")
    page.wait_for_selector("#message")
    assert page.inner_text("#message").startswith("the edited args do not fit tool 'issue_refund': ")
    assert page.inner_text("#status") == "paused"


def test_respond_to_an_ask_human_pause(inbox: Any) -> None:
    """An ask_human question gets a text box; the response finishes the run."""
    box = inbox(cancel_agent)
    paused = cancel_agent(SqliteStore(box.setup.db)).run("Cancel my order")
    page = box.logged_in("carol")
    page.goto(f"{box.url}/runs/{paused.run_id}")
    assert page.inner_text("#ask-question") == "asks: Cancel order A-7?"
    page.fill("#response", "yes, cancel it")
    page.click("#respond")
    page.wait_for_selector("#ok")
    assert page.inner_text("#answer") == "Order A-7 is cancelled."
    box.check_clean()


def test_two_browsers_racing_on_one_pause(inbox: Any) -> None:
    """alice and bob both have the run open and both approve: one is recorded, the other is told
    who decided first; the refund ran once."""
    box = inbox()
    paused = paused_refund(box.setup)
    pages = {who: box.logged_in(who) for who in ("alice", "bob")}
    for page in pages.values():
        page.goto(f"{box.url}/runs/{paused.run_id}")
    pages["alice"].click("#approve")
    pages["alice"].wait_for_selector("#ok")
    pages["bob"].click("#approve")
    pages["bob"].wait_for_selector("#message")
    assert (
        pages["bob"]
        .inner_text("#message")
        .startswith(f"request '{paused.check_in.id}' of run '{paused.run_id}' was already decided by alice at ")
    )
    history = SqliteStore(box.setup.db).get(paused.run_id).record.shown().final_state["history"]
    assert [m["content"] for m in history if m.get("tool_name") == "issue_refund"] == ["refunded 129.00 on A-1001"]


def test_the_list_updates_live_as_runs_pause_and_get_answered(inbox: Any) -> None:
    """With the list open, a run pausing elsewhere appears, and a run answered elsewhere leaves
    (server-sent events; the page fetches the list again)."""
    box = inbox()
    page = box.logged_in("vera")
    page.wait_for_function("document.getElementById('live').textContent.includes('on')")
    paused = paused_refund(box.setup)
    page.wait_for_selector(f'tr[data-run="{paused.run_id}"]', timeout=10000)
    done = threading.Thread(
        target=lambda: demo.build_agent(SqliteStore(box.setup.db)).resume_run(
            paused.run_id,
            __import__("governance").check_in_approved(request=paused.check_in, by="someone"),
        )
    )
    done.start()
    done.join()
    page.wait_for_selector(f'tr[data-run="{paused.run_id}"]', state="detached", timeout=10000)
    box.check_clean()


def test_a_viewer_sees_no_decision_forms(inbox: Any) -> None:
    """The viewer role reads the run but gets no forms."""
    box = inbox()
    paused = paused_refund(box.setup)
    page = box.logged_in("vera")
    page.goto(f"{box.url}/runs/{paused.run_id}")
    assert page.locator("#approve").count() == 0
    assert "You have the viewer role" in page.inner_text("#request")


def test_hostile_values_are_shown_as_text(inbox: Any) -> None:
    """A run asking about markup: the list and the run page show it as text; no script runs, no
    request leaves the app (the CSP and the escaping)."""
    hostile = '<img src=x onerror="window.pwned=1"><script>window.pwned=2</script>'
    box = inbox(cancel_agent)
    paused = cancel_agent(SqliteStore(box.setup.db), order=hostile).run("Cancel my order")
    page = box.logged_in("alice")
    row = page.locator(f'tr[data-run="{paused.run_id}"]')
    assert row.locator("a").inner_text() == f"asks: Cancel order {hostile}?"
    page.goto(f"{box.url}/runs/{paused.run_id}")
    assert page.inner_text("#ask-question") == f"asks: Cancel order {hostile}?"
    assert page.evaluate("window.pwned === undefined")
    assert page.locator("img").count() == 0
    box.check_clean()
