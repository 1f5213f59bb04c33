"""Retries, backoff and cancellation at the HTTP boundary (shown on openai_compatible).

The retry loop is shared by every HTTP provider (``agent/providers/_http.py``); the
provider-specific files show one retry each (Anthropic's 529, Ollama's 503).
"""

from __future__ import annotations

import asyncio

import pytest

from agent.providers import (
    LLMResponse,
    ProviderConnectionError,
    ProviderResponseError,
    RetryPolicy,
    openai_compatible,
)

from .test_openai_compatible import ANSWER, ROUND_TRIP
from .wire import Reply, Sleeps, WireServer, sse


async def test_retry_on_429_then_success_is_recorded(server: WireServer, sleeps: Sleeps) -> None:
    """A 429 is retried after backoff; the response carries the retry record."""
    server.push(Reply(status=429, json={"error": {"message": "slow down"}}), Reply(json=ANSWER))
    provider = openai_compatible(f"{server.url}/v1", sleep=sleeps)
    response = await provider.complete(ROUND_TRIP)
    assert response.content == "It is 72F in Paris."
    assert [(r.attempt, r.reason, r.delay) for r in response.retries] == [(1, "HTTP 429", 0.5)]
    assert sleeps.delays == [0.5]
    assert len(server.seen) == 2


async def test_retry_honours_retry_after(server: WireServer, sleeps: Sleeps) -> None:
    """A Retry-After longer than the backoff is waited for."""
    server.push(Reply(status=503, json={}, headers=(("retry-after", "3"),)), Reply(json=ANSWER))
    await openai_compatible(f"{server.url}/v1", sleep=sleeps).complete(ROUND_TRIP)
    assert sleeps.delays == [3.0]


async def test_retry_on_dropped_connection(server: WireServer, sleeps: Sleeps) -> None:
    """A connection closed without an answer (reset) is retried."""
    server.push(Reply(drop=True), Reply(json=ANSWER))
    response = await openai_compatible(f"{server.url}/v1", sleep=sleeps).complete(ROUND_TRIP)
    assert response.retries[0].reason.startswith("connection reset")
    assert response.content == "It is 72F in Paris."


async def test_retries_are_bounded(server: WireServer, sleeps: Sleeps) -> None:
    """After max_retries the last failure is raised, saying how many retries were spent."""
    server.push(*[Reply(status=500, json={"error": {"message": "boom"}})] * 3)
    provider = openai_compatible(f"{server.url}/v1", sleep=sleeps)
    with pytest.raises(
        ProviderResponseError,
        match=r"^openai_compatible: HTTP 500 from http://127\.0\.0\.1:\d+/v1/chat/completions: "
        r"boom \(gave up after 2 retries\)$",
    ) as info:
        await provider.complete(ROUND_TRIP)
    assert sleeps.delays == [0.5, 1.0]
    assert len(info.value.retries) == 2 and info.value.status == 500
    assert len(server.seen) == 3


async def test_stream_is_retried_before_it_starts(server: WireServer, sleeps: Sleeps) -> None:
    """A 429 on opening a stream is retried; the final event carries the retry record."""
    chunk = {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}
    server.push(Reply(status=429, json={}), Reply(sse=sse(chunk, "[DONE]")))
    provider = openai_compatible(f"{server.url}/v1", sleep=sleeps)
    events = [e async for e in provider.stream(ROUND_TRIP)]
    final = events[-1]
    assert isinstance(final, LLMResponse)
    assert (final.content, [r.reason for r in final.retries]) == ("ok", ["HTTP 429"])


async def test_cancellation_is_not_swallowed(server: WireServer) -> None:
    """A run's timeout cancels the call: asyncio's TimeoutError, not a ProviderError."""
    server.push(Reply(json=ANSWER, delay=1.0))
    provider = openai_compatible(f"{server.url}/v1")
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(provider.complete(ROUND_TRIP), timeout=0.05)


async def test_repeated_resets_give_up_with_a_connection_error(server: WireServer, sleeps: Sleeps) -> None:
    """Connections dropped on every attempt end in a connection error counting the retries."""
    server.push(Reply(drop=True), Reply(drop=True), Reply(drop=True))
    with pytest.raises(
        ProviderConnectionError,
        match=r"^openai_compatible: connection reset \(.*\) talking to http://127\.0\.0\.1:\d+/v1/"
        r"chat/completions \(gave up after 2 retries\)$",
    ) as info:
        await openai_compatible(f"{server.url}/v1", sleep=sleeps).complete(ROUND_TRIP)
    assert [r.attempt for r in info.value.retries] == [1, 2]


async def test_rate_limit_that_persists_says_so(server: WireServer, sleeps: Sleeps) -> None:
    """A 429 on every attempt is raised with rate-limit advice; max_retries=0 means one try."""
    server.push(Reply(status=429, json={"error": {"message": "quota"}}))
    provider = openai_compatible(f"{server.url}/v1", sleep=sleeps, retry=RetryPolicy(0))
    with pytest.raises(ProviderResponseError, match=r"HTTP 429 .*: quota — rate limited; wait and retry"):
        await provider.complete(ROUND_TRIP)
    assert sleeps.delays == []
