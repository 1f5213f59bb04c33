"""The HTTP boundary shared by the real providers: send, retry, classify failures.

Law of this file: every byte a real provider exchanges goes through
:meth:`HTTPProvider._open`, which (1) posts JSON with a timeout, (2) retries a bounded
number of times with exponential backoff on 429, 5xx and dropped connections, recording
each retry — never a 500 whose body says the request itself is malformed — and (3) turns
every failure into a :mod:`agent.providers.errors` class whose message names the address
and says what to do — never a bare httpx traceback, never the API key: server text is
masked before it is cut (:mod:`agent.providers._said`), and every exception leaving
:meth:`HTTPProvider._open` has its chain scrubbed of httpx requests (and their headers).
``httpx`` is imported lazily, so ``import agent.providers`` works without the ``http``
extra. Wire formats belong to the provider modules, not here.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from types import ModuleType
from typing import Any

import attrs

from agent.providers._said import excerpt, is_request_invalid, server_message
from agent.providers.errors import (
    ContextTooLongError,
    EmptyStreamError,
    ModelNotFoundError,
    ProviderAuthError,
    ProviderConfigError,
    ProviderConnectionError,
    ProviderDependencyError,
    ProviderError,
    ProviderProtocolError,
    ProviderResponseError,
    ProviderTimeoutError,
)
from agent.providers.secret import Secret, redact, scrub_chain
from agent.providers.types import LLMRequest, RetryRecord, Usage

Sleep = Callable[[float], Awaitable[None]]

# 529 is Anthropic's "overloaded"; the others are the usual transient statuses.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
_CONTEXT_TOO_LONG = re.compile(
    r"context[ _]length|context window|context size|maximum context|prompt is too long"
    r"|too many tokens|exceeds? the (?:available )?context",
    re.IGNORECASE,
)


def load_httpx() -> ModuleType:
    """Import httpx, or explain how to install it."""
    try:
        import httpx
    except ImportError:
        raise ProviderDependencyError(
            "the HTTP providers need httpx: pip install httpx (in a pyfootprint checkout: pip install -e '.[http]')"
        ) from None
    return httpx


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context per process: building it (loading the CA bundle) costs tens of
    milliseconds, and a fresh client per call would otherwise pay that on every call."""
    return load_httpx().create_ssl_context()


def base_url_from(value: str | None, *, default: str, what: str) -> str:
    """Validate a base URL (``http://`` or ``https://``) and drop trailing slashes."""
    url = (value or default).strip()
    if not url.startswith(("http://", "https://")):
        raise ProviderConfigError(f"{what} must start with http:// or https://, got {url!r}")
    return url.rstrip("/")


@attrs.frozen
class RetryPolicy:
    """How a provider retries 429, 5xx and dropped connections.

    At most ``max_retries`` retries (so ``max_retries + 1`` attempts). Before retry *n*
    it waits ``base_delay * 2**(n-1)`` seconds — or the server's ``Retry-After``
    when that is longer — capped at ``max_delay``. No jitter: runs stay repeatable.
    """

    max_retries: int = attrs.field(default=2, validator=attrs.validators.ge(0))
    base_delay: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    max_delay: float = attrs.field(default=8.0, validator=attrs.validators.ge(0))

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based)."""
        wait = self.base_delay * 2 ** (attempt - 1)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.max_delay)


def parse_args(raw: object) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments from the wire → ``(args, args_error)``; never raises.

    ``None`` and ``""`` mean no arguments. Text that is not a JSON object gives ``{}``
    and an error message meant for the model (see :class:`ToolCall`).
    """
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if not isinstance(raw, str):
        return {}, f"arguments must be a JSON object, got {type(raw).__name__}"
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return {}, f"arguments are not valid JSON ({exc.msg} at char {exc.pos}): {raw[:200]!r}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}: {raw[:200]!r}"
    return value, None


def _count_at(raw: dict[str, Any], path: tuple[str, ...]) -> int | None:
    """The count at ``path`` inside ``raw`` (``("prompt_tokens_details", "cached_tokens")``), or
    ``None`` when it is absent or not a non-negative integer (unknown, never 0)."""
    value: Any = raw
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_from(
    raw: object,
    input_key: str,
    output_key: str,
    cached: tuple[str, ...] = (),
    reasoning: tuple[str, ...] = (),
) -> Usage | None:
    """Token counts from a wire ``usage`` object, or ``None`` when the server did not report both.

    A missing object or count is unknown, never 0: totals built from a made-up 0 would be
    silently wrong. ``cached`` / ``reasoning`` are where the server reports the cached prompt
    tokens and the reasoning tokens (OpenAI: ``prompt_tokens_details.cached_tokens``,
    ``completion_tokens_details.reasoning_tokens``); not there, they stay ``None``.
    """
    if not isinstance(raw, dict):
        return None
    counts = raw.get(input_key), raw.get(output_key)
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None
    return Usage(
        int(raw[input_key]),
        int(raw[output_key]),
        _count_at(raw, cached) if cached else None,
        _count_at(raw, reasoning) if reasoning else None,
    )


def _retry_after(headers: Any) -> float | None:
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None  # absent, or an HTTP date: fall back to our own backoff


def _gave_up(retries: list[RetryRecord]) -> str:
    if not retries:
        return ""
    return f" (gave up after {len(retries)} {'retry' if len(retries) == 1 else 'retries'})"


@attrs.frozen(kw_only=True)
class HTTPProvider:
    """Fields and plumbing shared by the HTTP providers; subclasses speak a wire format."""

    name: str
    base_url: str
    model: str | None = None
    api_key: Secret | None = attrs.field(default=None, repr=False)
    timeout: float = 60.0
    retry: RetryPolicy = RetryPolicy()
    sleep: Sleep = attrs.field(default=asyncio.sleep, repr=False, eq=False)

    # --- hints each provider tailors -------------------------------------------------
    def _connect_hint(self) -> str:
        return f"is the server running at {self.base_url}? check base_url"

    def _auth_hint(self) -> str:
        return "check the API key"

    def _model_hint(self, model: str) -> str:
        return "check the model name"

    def _not_found_hint(self) -> str:
        return "check base_url"

    # --- helpers ---------------------------------------------------------------------
    def _model_for(self, req: LLMRequest) -> str:
        """The provider's own model when configured, else the request's."""
        model = self.model or req.model
        if not model:
            raise ProviderConfigError(
                f"{self.name}: no model to ask for; pass model=... to the provider or set it on the request"
            )
        return model

    def _redact(self, text: str) -> str:
        return redact(text, self.api_key)

    def _malformed(self, url: str, detail: str) -> ProviderProtocolError:
        """The answer is not the wire format this provider speaks; ``detail`` names the field."""
        return ProviderProtocolError(
            self._redact(f"{self.name}: unexpected response from {url}: {detail}"),
            provider=self.name,
            url=url,
        )

    def _server_error(self, url: str, detail: str) -> ProviderResponseError:
        """The server reported an error inside an answer (a stream's error event)."""
        return ProviderResponseError(
            f"{self.name}: unexpected response from {url}: {excerpt(self._redact(detail))}",
            provider=self.name,
            url=url,
        )

    def _cut_short(self, url: str, retries: list[RetryRecord]) -> ProviderConnectionError:
        """A stream that closed before its end marker: the answer may be truncated."""
        message = (
            f"{self.name}: the stream from {url} ended before the answer was complete "
            f"— the server closed the connection; try again"
        )
        return ProviderConnectionError(self._redact(message), provider=self.name, url=url, retries=retries)

    def _empty_stream(self, url: str, retries: list[RetryRecord], tools: bool) -> EmptyStreamError:
        """A stream that ended before its first event: the server cannot stream this request."""
        why = (
            "it cannot stream this request (llama.cpp's server streams nothing when tools are offered "
            'with tool_choice="auto"; name the tool in tool_choice=, or declare '
            "capabilities={'stream_tools': False} so tool-bearing calls are not streamed)"
            if tools
            else "it cannot stream this request (call without stream=True)"
        )
        message = (
            f"{self.name}: the server at {url} answered 200 with an empty event stream — {why}; "
            "not retried: the same request gets the same answer"
        )
        return EmptyStreamError(self._redact(message), provider=self.name, url=url, status=200, retries=retries)

    def _loads(self, url: str, text: str | bytes) -> Any:
        try:
            return json.loads(text)
        except ValueError:
            pass  # raised below, outside the ``except``: a JSONDecodeError keeps the whole body (``doc``)
        raw = text if isinstance(text, str) else text.decode("utf-8", "replace")
        raise self._malformed(url, f"not JSON: {excerpt(self._redact(raw))!r}")

    def _status_error(self, status: int, body: str, url: str, model: str, retries: list[RetryRecord]) -> ProviderError:
        """Classify a failed HTTP status into the error hierarchy, with a hint."""
        said = server_message(self._redact(body))  # masked before it is read or cut
        ctx: dict[str, Any] = {"provider": self.name, "url": url, "status": status}
        ctx["retries"] = retries
        if status in (401, 403):
            message = f"{self.name}: HTTP {status} from {url}: {said} — {self._auth_hint()}"
            return ProviderAuthError(self._redact(message), **ctx)
        if status == 404 and "model" in said.lower():
            message = f"{self.name}: model '{model}' not found at {url}: {said} — "
            return ModelNotFoundError(self._redact(message + self._model_hint(model)), **ctx)
        if 400 <= status < 500 and status != 429 and _CONTEXT_TOO_LONG.search(said):
            message = (
                f"{self.name}: the request is too long for model '{model}' at {url}: {said}"
                " — shorten the history or system prompt, or use a model with a larger context"
            )
            return ContextTooLongError(self._redact(message), **ctx)
        message = f"{self.name}: HTTP {status} from {url}: {said}"
        if status == 404:
            message += f" — {self._not_found_hint()}"
        elif status == 429:
            message += " — rate limited; wait and retry, or lower the request rate"
        elif is_request_invalid(said):
            message += " — the server refused the request's shape (not retried: it would fail again)"
        return ProviderResponseError(self._redact(message + _gave_up(retries)), **ctx)

    def _headers(self, stream: bool) -> dict[str, str]:
        """Headers for one request; subclasses add authentication."""
        return {
            "content-type": "application/json",
            "accept": "text/event-stream" if stream else "application/json",
        }

    @contextlib.asynccontextmanager
    async def _open(
        self,
        url: str,
        body: dict[str, Any],
        model: str,
        retries: list[RetryRecord],
        *,
        stream: bool,
    ) -> AsyncIterator[Any]:
        """POST ``body`` to ``url``; yield the successful (streaming) ``httpx.Response``.

        Retries are appended to ``retries`` as they happen. Transport failures while the
        caller reads the body are mapped too (a stream is never retried once it began:
        its tokens may already have been shown).
        """
        try:
            async with self._exchange(url, body, model, retries, stream=stream) as response:
                yield response
        except BaseException as exc:
            # An httpx error (raised, or chained under ours) holds its request, headers
            # and all: none of it leaves this boundary.
            scrub_chain(exc)
            raise

    @contextlib.asynccontextmanager
    async def _exchange(
        self,
        url: str,
        body: dict[str, Any],
        model: str,
        retries: list[RetryRecord],
        *,
        stream: bool,
    ) -> AsyncIterator[Any]:
        """:meth:`_open` without the scrubbing: send, retry, classify."""
        httpx = load_httpx()
        payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
        attempt = 0
        async with httpx.AsyncClient(timeout=httpx.Timeout(self.timeout), verify=_tls_context()) as client:
            while True:
                attempt += 1
                retry_after: float | None = None
                status, text = 0, ""
                try:
                    request = client.build_request("POST", url, content=payload, headers=self._headers(stream))
                    response = await client.send(request, stream=True)
                except httpx.TimeoutException:
                    raise self._timeout_error(url, retries) from None
                except httpx.ConnectError as exc:
                    raise self._connect_error(url, exc, retries) from None
                except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError) as exc:
                    reason = f"connection reset ({self._redact(str(exc)) or type(exc).__name__})"
                except httpx.HTTPError as exc:
                    raise self._connect_error(url, exc, retries) from None
                else:
                    status = response.status_code
                    if status < 400:
                        try:
                            yield response
                        except httpx.TimeoutException:
                            raise self._timeout_error(url, retries) from None
                        except httpx.HTTPError as exc:
                            message = f"{self.name}: connection to {url} lost mid-response ({exc})"
                            raise ProviderConnectionError(
                                self._redact(message),
                                provider=self.name,
                                url=url,
                                retries=retries,
                            ) from None
                        finally:
                            await response.aclose()
                        return
                    try:
                        text = (await response.aread()).decode("utf-8", "replace")
                    except httpx.HTTPError:
                        text = ""
                    finally:
                        await response.aclose()
                    if status not in RETRY_STATUSES or (status == 500 and is_request_invalid(text)):
                        raise self._status_error(status, text, url, model, retries)
                    reason = f"HTTP {status}"
                    retry_after = _retry_after(response.headers)
                if attempt > self.retry.max_retries:
                    if status:
                        raise self._status_error(status, text, url, model, retries)
                    message = f"{self.name}: {reason} talking to {url}{_gave_up(retries)}"
                    raise ProviderConnectionError(self._redact(message), provider=self.name, url=url, retries=retries)
                delay = self.retry.delay(attempt, retry_after)
                retries.append(RetryRecord(attempt=attempt, reason=reason, delay=delay))
                await self.sleep(delay)

    def _timeout_error(self, url: str, retries: list[RetryRecord]) -> ProviderTimeoutError:
        message = (
            f"{self.name}: no answer from {url} within {self.timeout:g}s — the model may be "
            f"loading or the server busy; raise timeout= or check the server"
        )
        return ProviderTimeoutError(self._redact(message), provider=self.name, url=url, retries=retries)

    def _connect_error(self, url: str, exc: Exception, retries: list[RetryRecord]) -> ProviderConnectionError:
        detail = str(exc) or type(exc).__name__
        if "refused" in detail.lower() or "all connection attempts failed" in detail.lower():
            detail = "connection refused"
        message = f"{self.name}: cannot connect to {url} ({detail}) — {self._connect_hint()}"
        return ProviderConnectionError(self._redact(message), provider=self.name, url=url, retries=retries)

    async def _post(self, url: str, body: dict[str, Any], model: str) -> tuple[Any, tuple[RetryRecord, ...]]:
        """POST and parse the JSON answer; returns ``(data, retries)``."""
        retries: list[RetryRecord] = []
        async with self._open(url, body, model, retries, stream=False) as response:
            raw = await response.aread()
        return self._loads(url, raw), tuple(retries)


async def sse_events(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str | None, str]]:
    """Server-sent events from text lines: yields ``(event name or None, data)``."""
    event: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        # Comments (":...") and unknown fields are ignored, as the SSE spec says.
    if data:
        yield event, "\n".join(data)
