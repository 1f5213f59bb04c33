"""The login form's CSRF token and the per-address limit on wrong tokens, over real uvicorn."""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest
from inbox_server import Setup, login

from agent.serve import WrongTokenLimit, inbox_app
from agent.serve.throttle import TooManyWrongTokens
from flowchart.store import SqliteStore


def inbox(setup: Setup, serve: Any, **options: Any) -> tuple[str, Any]:
    """The inbox over the setup's (empty) store, no agent; (base url, the app)."""
    app = inbox_app(SqliteStore(setup.db), users=setup.users, **options)
    return serve(app), app


def limited_rows(app: Any) -> list[tuple[Any, ...]]:
    rows = app.state.inbox.ledger.audit_rows()
    return [(r["action"], r["outcome"], r["detail"]) for r in rows if r["outcome"] == "429"]


def test_a_login_post_without_the_login_forms_csrf_token_is_refused(setup: Setup, serve: Any) -> None:
    """A right token POSTed to /login without the form's CSRF field (a cross-site login form),
    or with a field that does not match the page's ``inbox_login`` cookie, gets 403 and no
    session; the same token through the page logs in."""
    url, _ = inbox(setup, serve)
    with httpx.Client(base_url=url) as browser:
        reply = browser.post("/login", data={"token": setup.tokens["alice"]})
        assert reply.status_code == 403
        assert "CSRF token missing or wrong: reload the login page and log in again" in reply.text
        assert "inbox_session" not in browser.cookies
        page = browser.get("/login")
        assert browser.cookies.get("inbox_login")  # set by the first login page it saw
        assert re.search(r'<input type="hidden" name="csrf" value="[0-9a-f]{64}">', page.text)
        forged = browser.post("/login", data={"token": setup.tokens["alice"], "csrf": "0" * 64})
        assert forged.status_code == 403 and "inbox_session" not in browser.cookies
        assert login(browser, setup.tokens["alice"]).status_code == 303
        assert "inbox_session" in browser.cookies
        assert browser.get("/").status_code == 200
    with httpx.Client(base_url=url) as other:  # another browser's cookie does not fit this field
        field = re.search(r'name="csrf" value="([0-9a-f]+)"', httpx.get(f"{url}/login").text)
        assert field is not None
        other.get("/login")
        assert other.post("/login", data={"token": setup.tokens["alice"], "csrf": field.group(1)}).status_code == 403


def test_wrong_login_tokens_past_the_burst_get_429_with_when_to_retry(setup: Setup, serve: Any) -> None:
    """Two wrong tokens are checked (401); the third attempt from the address — even with the
    right token — is refused with 429 before any check, naming the seconds to wait in the page
    and in ``Retry-After``; one audit row says so for the whole lockout."""
    url, app = inbox(setup, serve, wrong_tokens=WrongTokenLimit(burst=2, refill_seconds=30))
    with httpx.Client(base_url=url) as browser:
        for _ in range(2):
            wrong = login(browser, "alice.not-the-secret")
            assert wrong.status_code == 401 and "that token matches no user" in wrong.text
        for token in ("alice.still-wrong", setup.tokens["alice"]):
            refused = login(browser, token)
            assert refused.status_code == 429
            assert refused.headers["retry-after"] == "30"
            assert "too many wrong tokens from 127.0.0.1: try again in 30 s" in refused.text
        assert "inbox_session" not in browser.cookies
    assert limited_rows(app) == [
        ("authenticate", "429", "too many wrong tokens from 127.0.0.1: try again in 30 s"),
    ]
    logins = [r["outcome"] for r in app.state.inbox.ledger.audit_rows() if r["action"] == "login"]
    assert logins == ["401", "401"]


def test_wrong_bearer_tokens_share_the_limit_and_the_api_answers_json_429(setup: Setup, serve: Any) -> None:
    """The API's bearer tokens count against the same bucket: past it, JSON 429 with
    ``Retry-After``, the right token refused too; once a guess has refilled, the right token
    works again."""
    url, app = inbox(setup, serve, wrong_tokens=WrongTokenLimit(burst=1, refill_seconds=1))
    wrong = {"authorization": "Bearer bob.guess"}
    assert httpx.get(f"{url}/api/runs", headers=wrong).status_code == 401
    refused = httpx.get(f"{url}/api/runs", headers=setup.headers("alice"))
    assert refused.status_code == 429
    assert refused.json() == {"error": "too many wrong tokens from 127.0.0.1: try again in 1 s"}
    assert refused.headers["retry-after"] == "1"
    page = httpx.get(f"{url}/", headers=wrong)  # a page asked with a bearer token: the login page, 429
    assert page.status_code == 429 and "too many wrong tokens from 127.0.0.1" in page.text
    time.sleep(1.1)
    assert httpx.get(f"{url}/api/runs", headers=setup.headers("alice")).status_code == 200
    assert len(limited_rows(app)) == 1


def test_the_bucket_refills_one_guess_per_period_and_forgets_full_buckets() -> None:
    """On a clock of our own: ``burst`` guesses taken, then refusals naming the wait (nothing
    taken); a right token's guess is given back; one guess back per ``refill_seconds``; a look
    (``spend=False``) takes nothing but is refused while locked out; the first refusal of a
    lockout is flagged, later ones not; past ``max_addresses`` the full buckets are dropped."""
    now = [0.0]
    limit = WrongTokenLimit(burst=2, refill_seconds=10, max_addresses=2, clock=lambda: now[0])
    assert limit.take("a") is None
    limit.give_back("a")  # a right token: costs nothing
    assert limit.take("a") is None and limit.take("a") is None
    first = limit.take("a")
    assert first is not None and first[1] is True and first[0].retry_after == 10
    now[0] = 4.0
    again = limit.take("a", spend=False)
    assert again is not None and again[1] is False and again[0].retry_after == 6
    assert again[0].message == "too many wrong tokens from a: try again in 6 s"
    now[0] = 10.0
    assert limit.take("a", spend=False) is None and limit.take("a", spend=False) is None
    assert limit.take("a") is None
    relocked = limit.take("a")
    assert relocked is not None and relocked[1] is True
    now[0] = 100.0
    assert limit.take("b") is None
    assert limit.take("c") is None  # three addresses > 2: "a" has refilled (full) and is forgotten
    assert set(limit._buckets) == {"b", "c"}


def test_concurrent_wrong_tokens_cannot_slip_past_the_last_guess(setup: Setup, serve: Any) -> None:
    """Eight wrong bearer tokens at once from one address with a burst of 2: each takes its guess
    before its scrypt, atomically, so exactly two are checked (401) and six refused (429)."""
    from concurrent.futures import ThreadPoolExecutor

    url, _ = inbox(setup, serve, wrong_tokens=WrongTokenLimit(burst=2, refill_seconds=60))

    def guess(n: int) -> int:
        return httpx.get(f"{url}/api/runs", headers={"authorization": f"Bearer alice.guess-{n}"}).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(guess, range(8)))
    assert codes == [401, 401, 429, 429, 429, 429, 429, 429]


def test_right_tokens_cost_no_guess_and_a_known_token_is_refused_while_locked_out(setup: Setup, serve: Any) -> None:
    """With a burst of 1, right tokens pass again and again (each gives its guess back); after one
    wrong token the address is locked out, and even a token the server already verified is
    refused — so a locked-out guesser learns nothing."""
    url, _ = inbox(setup, serve, wrong_tokens=WrongTokenLimit(burst=1, refill_seconds=60))
    for name in ("alice", "bob", "alice"):
        assert httpx.get(f"{url}/api/runs", headers=setup.headers(name)).status_code == 200
    assert httpx.get(f"{url}/api/runs", headers={"authorization": "Bearer bob.wrong"}).status_code == 401
    refused = httpx.get(f"{url}/api/runs", headers=setup.headers("alice"))
    assert (refused.status_code, refused.json()) == (
        429,
        {"error": "too many wrong tokens from 127.0.0.1: try again in 60 s"},
    )


def test_a_limit_that_cannot_work_is_refused_with_what_to_change() -> None:
    """burst 0 or a refill period of 0 would lock everyone out or nobody: a clear ValueError."""
    with pytest.raises(ValueError, match=r"burst must be >= 1 and refill_seconds > 0"):
        WrongTokenLimit(burst=0)
    with pytest.raises(ValueError, match=r"WrongTokenLimit\(burst=5, refill_seconds=0\)"):
        WrongTokenLimit(refill_seconds=0)
    assert issubclass(TooManyWrongTokens, Exception)
