"""``inbox_app``: the approval inbox as a Starlette ASGI application (pages and JSON API).

Laws:
- Every route but ``/health`` and the login page needs an approver: a bearer token (the JSON
  API), a trusted header, or the signed session cookie a login set (the pages). Without one:
  401 (the API) or the login page. A ``viewer`` reads; only an ``approver`` decides (403).
- A page's every form carries the session's CSRF token; a POST without it is refused (403)
  before anything is read. A cookie-authenticated API POST must send it as ``X-CSRF-Token``.
- Every page is sent with the viewer's kind of Content-Security-Policy: nothing from another
  origin, no inline script, scripts and styles from the app's own ``/static`` only; values are
  escaped by Jinja2's autoescape, and the script writes text with ``textContent`` only.
- The login form is CSRF-protected too: the login page sets a random ``inbox_login`` cookie
  (HttpOnly, SameSite=Strict) and its form carries that cookie's HMAC; a login POST without
  both is refused (403) before its token is looked at.
- Wrong tokens are rate limited per client address (:mod:`.throttle`): past the burst, a token
  is refused with 429 and ``Retry-After`` before any scrypt; the first refusal of each lockout
  is an audit row (``authenticate``/``429``).
- Errors are JSON ``{"error": message}`` (the API) with 400/401/403/404/409/410/429; a page
  shows the same message, escaped.
- Store and agent calls run in a worker thread, never on the event loop; so does the token
  check (a token this process has not seen costs one scrypt).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from flowchart.store import RunNotFoundError, RunStore
from flowchart.store.summaries import summaries

from .auth import (
    LOGIN_COOKIE,
    SESSION_COOKIE,
    Approver,
    Authenticate,
    UsersFile,
    bearer_token,
    check_csrf,
    check_login_csrf,
    csrf_token,
    first_of,
    login_csrf_token,
    make_session,
    read_session,
)
from .decide import MAX_BODY, Inbox, InboxRefusal, decide
from .ledger import InboxLedger, default_path
from .policies import Policies
from .throttle import TooManyWrongTokens, WrongTokenLimit
from .views import detail, row

HERE = Path(__file__).parent
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
_STATUSES = ("paused", "running", "done", "failed", "all")


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


async def _body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        raise InboxRefusal(400, "the request body is over 1 MB")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise InboxRefusal(400, "the request body is over 1 MB")
        chunks.append(chunk)
    return b"".join(chunks)


def _json_body(raw: bytes) -> Any:
    def no_constant(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = value
        return out

    try:
        return json.loads(raw.decode("utf-8"), parse_constant=no_constant, object_pairs_hook=no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise InboxRefusal(400, f"the body is not JSON: {exc}") from None


def _list_params(query: Any) -> dict[str, Any]:
    status = query.get("status", "paused")
    if status not in _STATUSES:
        raise InboxRefusal(400, f"parameter 'status': one of {', '.join(_STATUSES)}; got {status!r}")
    limit_text = query.get("limit", "50")
    if not limit_text.isdigit() or not 1 <= int(limit_text) <= 200:
        raise InboxRefusal(400, f"parameter 'limit': a whole number from 1 to 200; got {limit_text!r}")
    max_age = query.get("max_age")
    if max_age is not None:
        try:
            age = float(max_age)
        except ValueError:
            age = -1.0
        if not age > 0:
            raise InboxRefusal(400, f"parameter 'max_age': a positive number of seconds; got {max_age!r}")
    return {
        "status": None if status == "all" else status,
        "limit": int(limit_text),
        "cursor": query.get("cursor") or None,
        "tool": query.get("tool") or None,
        "conversation": query.get("conversation") or None,
        "max_age": None if max_age is None else float(max_age),
    }


def inbox_app(
    store: RunStore,
    agent: Any = None,
    authenticate: Authenticate | None = None,
    policies: Policies | None = None,
    *,
    users: str | Path | None = None,
    state: str | Path | None = None,
    queue: Any = None,
    poll: float = 0.5,
    wrong_tokens: WrongTokenLimit | None = None,
) -> Starlette:
    """The approval inbox over ``store``.

    ``agent`` (the runs' agent) resumes a decided run in this process and knows the tools'
    schemas (edited arguments are checked against them); without it a decision is recorded and
    the run left for a worker — or enqueued on ``queue`` (a Celery app). ``authenticate(request)
    -> Approver | None`` says who is asking; ``users`` (a users file, ``agent users add``) adds
    bearer tokens and the login page. ``policies`` (:class:`Policies`): four-eyes, expiry, no
    self-approval. ``state``: the inbox's own SQLite file (audit rows, receipts, keys; default
    ``<store file>.inbox.db``). ``poll``: how often the live list looks for news, in seconds.
    ``wrong_tokens``: the per-address limit on wrong tokens (default
    ``WrongTokenLimit(burst=5, refill_seconds=12)``: five wrong guesses, then one per 12 s).
    """
    users_file = UsersFile(users) if users is not None else None
    auth = first_of(authenticate, users_file)
    ledger = InboxLedger(state if state is not None else default_path(store))
    changes = {"version": 0}

    def changed(_run_id: str) -> None:
        changes["version"] += 1

    inbox = Inbox(store, agent, policies or Policies(), ledger, queue=queue, on_change=changed)
    watched: dict[str, Any] = {"lock": threading.Lock(), "at": float("-inf"), "value": None}
    session_key = ledger.key("sessions")
    templates = _templates()
    limit = wrong_tokens if wrong_tokens is not None else WrongTokenLimit()

    def client(request: Request) -> str:
        return request.client.host if request.client is not None else "unknown"

    def door(address: str, spend: bool = True) -> None:
        """Take a guess for a token ``address`` sent (``spend=False``: a known token, only look);
        raise the 429 when it has none left (audited once a lockout)."""
        refused = limit.take(address, spend)
        if refused is not None:
            refusal, first = refused
            if first:
                ledger.audit(None, None, None, "authenticate", "429", refusal.message)
            raise refusal

    def who(request: Request) -> Approver | None:
        token = bearer_token(request)
        guessed = token is not None and (users_file is None or users_file.known(token) is None)
        if token is not None:
            door(client(request), spend=guessed)
        found = auth(request)
        if found is None and token is None:
            found = read_session(session_key, request.cookies.get(SESSION_COOKIE))
        elif found is not None and guessed:
            limit.give_back(client(request))
        return found

    def need(request: Request) -> Approver:
        approver = who(request)
        if approver is None:
            raise InboxRefusal(401, "authenticate: send Authorization: Bearer TOKEN (agent users add prints one)")
        return approver

    def api(handler: Callable[[Request], Any]) -> Callable[[Request], Any]:
        async def endpoint(request: Request) -> Response:
            try:
                return await handler(request)
            except TooManyWrongTokens as refused:
                return _error(refused.status, refused.message, {"retry-after": str(refused.retry_after)})
            except InboxRefusal as refused:
                return _error(refused.status, refused.message)

        return endpoint

    def listing(params: dict[str, Any]) -> dict[str, Any]:
        try:
            page = summaries(
                store,
                params["status"],
                limit=params["limit"],
                after=params["cursor"],
                conversation=params["conversation"],
            )
        except ValueError as exc:
            raise InboxRefusal(400, f"parameter 'cursor': {exc}") from None
        now = time.time()
        rows = [
            row(inbox, r)
            for r in page
            if (params["tool"] is None or row_tool(r) == params["tool"])
            and (params["max_age"] is None or now - r.updated_at <= params["max_age"])
        ]
        return {"runs": rows, "next": page.next, "unreadable": [e.run_id for e in page.unreadable]}

    def row_tool(record: Any) -> Any:
        from .decide import tool_and_args

        return tool_and_args(record)[0]

    async def health(_request: Request) -> Response:
        return JSONResponse({"ok": True})

    async def api_runs(request: Request) -> Response:
        await run_in_threadpool(need, request)
        params = _list_params(request.query_params)
        return JSONResponse(await run_in_threadpool(listing, params))

    def one(run_id: str) -> dict[str, Any]:
        try:
            return detail(inbox, store.get(run_id))
        except RunNotFoundError:
            raise InboxRefusal(404, f"no run '{run_id}' in this store") from None

    async def api_run(request: Request) -> Response:
        await run_in_threadpool(need, request)
        return JSONResponse(await run_in_threadpool(one, request.path_params["run_id"]))

    async def api_decision(request: Request) -> Response:
        approver = await run_in_threadpool(need, request)
        if bearer_token(request) is None and auth(request) is None:  # a browser session: CSRF header
            session = request.cookies.get(SESSION_COOKIE)
            if not check_csrf(session_key, session, request.headers.get("x-csrf-token")):
                raise InboxRefusal(403, "CSRF token missing or wrong: send the page's X-CSRF-Token header")
        run_id = request.path_params["run_id"]
        try:
            body = _json_body(await _body(request))
        except InboxRefusal as refused:
            ledger.audit(approver.name, run_id, None, "decide", str(refused.status), refused.message)
            raise
        return JSONResponse(await run_in_threadpool(decide, inbox, approver, run_id, body))

    async def api_receipt(request: Request) -> Response:
        await run_in_threadpool(need, request)
        run_id, request_id = request.path_params["run_id"], request.path_params["request_id"]
        kept = await run_in_threadpool(ledger.receipt, run_id, request_id)
        if kept is None:
            raise InboxRefusal(404, f"no receipt for request '{request_id}' of run '{run_id}'")
        name = f"receipt-{run_id}-{request_id}.json"
        return JSONResponse(kept, headers={"content-disposition": f'attachment; filename="{name}"'})

    async def events(request: Request) -> Response:
        await run_in_threadpool(need, request)

        def signature() -> Any:
            # one store read per poll interval, however many pages are listening
            with watched["lock"]:
                if time.monotonic() - watched["at"] >= poll:
                    page = summaries(store, "paused", limit=50)
                    watched["value"] = [(r.run_id, r.updated_at) for r in page]
                    watched["at"] = time.monotonic()
                return watched["value"]

        async def stream() -> AsyncIterator[str]:
            last: Any = None
            quiet = 0.0
            while not await request.is_disconnected():
                now = (changes["version"], await run_in_threadpool(signature))
                if now != last:
                    if last is not None:
                        yield f"event: runs\ndata: {json.dumps({'version': now[0]})}\n\n"
                    else:
                        yield "event: hello\ndata: {}\n\n"
                    last, quiet = now, 0.0
                elif quiet > 15:
                    yield ": keep-alive\n\n"
                    quiet = 0.0
                await asyncio.sleep(poll)
                quiet += poll

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"cache-control": "no-store"})

    # -- pages ------------------------------------------------------------------------------
    def page(name: str, request: Request, status: int = 200, **context: Any) -> HTMLResponse:
        session = request.cookies.get(SESSION_COOKIE)
        context.setdefault("csrf", csrf_token(session_key, session) if session else "")
        html = templates.get_template(name).render(request=request, **context)
        return HTMLResponse(html, status_code=status, headers={"content-security-policy": CSP})

    def refused_page(request: Request, approver: Approver, refused: InboxRefusal) -> HTMLResponse:
        """The list page, empty, saying what was refused (with the refusal's status)."""
        return page(
            "list.html",
            request,
            status=refused.status,
            approver=approver,
            runs=[],
            next=None,
            params={},
            message=refused.message,
        )

    def login_form(request: Request, status: int = 200, message: str | None = None, **headers: str) -> Response:
        """The login page; its form carries the HMAC of the ``inbox_login`` cookie (set if absent)."""
        nonce = request.cookies.get(LOGIN_COOKIE) or secrets.token_urlsafe(18)
        response = page(
            "login.html",
            request,
            status=status,
            approver=None,
            message=message,
            login_csrf=login_csrf_token(session_key, nonce),
        )
        for name, value in headers.items():
            response.headers[name.replace("_", "-")] = value
        if request.cookies.get(LOGIN_COOKIE) != nonce:
            secure = request.url.scheme == "https"
            response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="strict", path="/", secure=secure)
        return response

    async def login_page(request: Request) -> Response:
        return login_form(request)

    async def login(request: Request) -> Response:
        try:
            form = urllib.parse.parse_qs((await _body(request)).decode("utf-8", "replace"))
        except InboxRefusal as refused:
            return login_form(request, refused.status, refused.message)
        if not check_login_csrf(session_key, request.cookies.get(LOGIN_COOKIE), (form.get("csrf") or [""])[0]):
            return login_form(request, 403, "CSRF token missing or wrong: reload the login page and log in again")
        token = (form.get("token") or [""])[0].strip()
        approver = None
        if users_file is not None and token:
            try:
                door(client(request))
            except TooManyWrongTokens as refused:
                return login_form(request, 429, refused.message, retry_after=str(refused.retry_after))
            approver = await run_in_threadpool(users_file.check, token)
            if approver is not None:
                limit.give_back(client(request))
        if approver is None:
            ledger.audit(None, None, None, "login", "401", "a token that matches no user")
            return login_form(request, 401, "that token matches no user")
        ledger.audit(approver.name, None, None, "login", "ok", approver.role)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(
            SESSION_COOKIE,
            make_session(session_key, approver),
            httponly=True,
            samesite="strict",
            path="/",
            secure=request.url.scheme == "https",  # behind TLS the cookie never travels in clear
        )
        return response

    async def logout(request: Request) -> Response:
        form = urllib.parse.parse_qs((await _body(request)).decode("utf-8", "replace"))
        if not check_csrf(session_key, request.cookies.get(SESSION_COOKIE), (form.get("csrf") or [""])[0]):
            return login_form(request, 403, "CSRF token missing or wrong")
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    async def list_page(request: Request) -> Response:
        approver = await run_in_threadpool(who, request)
        if approver is None:
            return RedirectResponse("/login", status_code=303)
        try:
            params = _list_params(request.query_params)
            data = await run_in_threadpool(listing, params)
        except InboxRefusal as refused:
            return refused_page(request, approver, refused)
        return page(
            "list.html", request, approver=approver, runs=data["runs"], next=data["next"], params=params, message=None
        )

    async def run_page(request: Request) -> Response:
        approver = await run_in_threadpool(who, request)
        if approver is None:
            return RedirectResponse("/login", status_code=303)
        try:
            run = await run_in_threadpool(one, request.path_params["run_id"])
        except InboxRefusal as refused:
            return refused_page(request, approver, refused)
        return page("run.html", request, approver=approver, run=run, message=None, ok=None)

    async def decide_page(request: Request) -> Response:
        approver = await run_in_threadpool(who, request)
        if approver is None:
            return RedirectResponse("/login", status_code=303)
        run_id = request.path_params["run_id"]
        try:
            form = urllib.parse.parse_qs((await _body(request)).decode("utf-8", "replace"), keep_blank_values=True)
        except InboxRefusal as refused:
            return await _run_with(request, approver, run_id, refused.status, refused.message, None)
        field = {k: v[0] for k, v in form.items()}
        if not check_csrf(session_key, request.cookies.get(SESSION_COOKIE), field.get("csrf")):
            return await _run_with(request, approver, run_id, 403, "CSRF token missing or wrong: reload the page", None)
        body: dict[str, Any] = {"request_id": field.get("request_id", "")}
        action = field.get("action")
        if field.get("note"):
            body["note"] = field["note"]
        if action == "respond":
            body["response"] = field.get("response", "")
        elif action in ("approve", "edit"):
            body["approved"] = True
            if action == "edit":
                try:
                    body["args"] = json.loads(field.get("args", ""))
                except ValueError as exc:
                    return await _run_with(request, approver, run_id, 400, f"field 'args': not JSON ({exc})", None)
        elif action == "decline":
            body["approved"] = False
        try:
            result = await run_in_threadpool(decide, inbox, approver, run_id, body)
        except InboxRefusal as refusal:
            return await _run_with(request, approver, run_id, refusal.status, refusal.message, None)
        done = result.get("pending") or f"{action}: recorded; the run is {result['status']}"
        return await _run_with(request, approver, run_id, 200, None, done)

    async def _run_with(
        request: Request, approver: Approver, run_id: str, status: int, message: str | None, ok: str | None
    ) -> Response:
        try:
            run = await run_in_threadpool(one, run_id)
        except InboxRefusal as refused:
            return refused_page(request, approver, refused)
        return page("run.html", request, status=status, approver=approver, run=run, message=message, ok=ok)

    async def viewer_page(request: Request) -> Response:
        if await run_in_threadpool(who, request) is None:
            return RedirectResponse("/login", status_code=303)
        from agent.viewer_panel import PANEL
        from flowchart.store.export import record_trace
        from flowchart.viewer import render_page

        def build() -> str:
            try:
                return render_page(record_trace(store.get(request.path_params["run_id"])), [PANEL])
            except RunNotFoundError:
                raise InboxRefusal(404, f"no run '{request.path_params['run_id']}' in this store") from None

        try:
            html = await run_in_threadpool(build)
        except InboxRefusal as refused:
            return _error(refused.status, refused.message)
        return HTMLResponse(html)  # the page carries its own CSP (one script, by hash)

    routes = [
        Route("/health", health),
        Route("/favicon.ico", lambda _request: Response(status_code=204)),
        Route("/api/runs", api(api_runs)),
        Route("/api/runs/{run_id}", api(api_run)),
        Route("/api/runs/{run_id}/decision", api(api_decision), methods=["POST"]),
        Route("/api/runs/{run_id}/receipt/{request_id}", api(api_receipt)),
        Route("/api/events", api(events)),
        Route("/login", login_page),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/", list_page),
        Route("/runs/{run_id}", run_page),
        Route("/runs/{run_id}/decide", decide_page, methods=["POST"]),
        Route("/runs/{run_id}/view", viewer_page),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]

    async def locked_out(request: Request, exc: Exception) -> Response:
        """A page asked with a bearer token from a locked-out address (the API answers JSON)."""
        assert isinstance(exc, TooManyWrongTokens)
        return login_form(request, 429, exc.message, retry_after=str(exc.retry_after))

    app = Starlette(routes=routes, exception_handlers={TooManyWrongTokens: locked_out})
    app.state.inbox = inbox
    return app


def _templates() -> Any:
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        keep_trailing_newline=True,
    )
