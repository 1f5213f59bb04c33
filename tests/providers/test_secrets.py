"""The API key never leaves the Authorization header: not in errors, reprs or tracebacks."""

from __future__ import annotations

import traceback
from collections.abc import Callable

import pytest

from agent.providers import LLMRequest, ProviderError, anthropic, openai_compatible

from .wire import Reply, Sleeps, WireServer, closed_port

KEY = "sk-SECRET-do-not-print-0123456789"
REQ = LLMRequest("sys", [{"role": "user", "content": "hi"}], [], "m")

Factory = Callable[[str, Sleeps], object]
FACTORIES: dict[str, Factory] = {
    "openai_compatible": lambda url, sleep: openai_compatible(f"{url}/v1", api_key=KEY, sleep=sleep),
    "anthropic": lambda url, sleep: anthropic(api_key=KEY, base_url=url, sleep=sleep),
}


def assert_no_key(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(exc))
    assert KEY not in text
    assert KEY not in repr(exc)
    assert all(KEY not in repr(value) for value in vars(exc).values())


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
def test_repr_hides_the_key(flavour: str, sleeps: Sleeps) -> None:
    """A provider's repr shows its address and model, never its key."""
    provider = FACTORIES[flavour]("http://127.0.0.1:1", sleeps)
    assert KEY not in repr(provider)
    assert KEY not in str(provider)


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=401, json={"error": {"message": f"Incorrect API key provided: {KEY}"}}),
        Reply(status=404, json={"error": {"message": f"model m not found for key {KEY}"}}),
        Reply(status=400, json={"error": {"message": f"context length exceeded ({KEY})"}}),
        Reply(status=418, body=f"teapot {KEY}".encode()),
        Reply(status=500, json={"error": {"message": KEY}}),
    ],
    ids=["401", "404", "context", "418", "500"],
)
async def test_errors_never_carry_the_key(server: WireServer, sleeps: Sleeps, flavour: str, reply: Reply) -> None:
    """Even when the server echoes the key, the error text shows *** instead."""
    server.push(reply, reply, reply)
    provider = FACTORIES[flavour](server.url, sleeps)
    with pytest.raises(ProviderError, match=r"\*\*\*") as info:
        await provider.complete(REQ)  # type: ignore[attr-defined]
    assert_no_key(info.value)


@pytest.mark.parametrize("flavour", sorted(FACTORIES))
async def test_connection_errors_never_carry_the_key(sleeps: Sleeps, flavour: str) -> None:
    """A refused connection's error and traceback carry no key (and no httpx traceback)."""
    provider = FACTORIES[flavour](f"http://127.0.0.1:{closed_port()}", sleeps)
    with pytest.raises(ProviderError) as info:
        await provider.complete(REQ)  # type: ignore[attr-defined]
    assert_no_key(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__
