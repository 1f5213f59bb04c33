"""The provider contract: public surface, value types, protocols, lazy httpx, shared helpers."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import AsyncIterator, Callable

import attrs
import pytest

import agent.providers as providers
from agent.providers import (
    LLMProvider,
    LLMRequest,
    LLMResponse,
    ProviderConfigError,
    ProviderDependencyError,
    RetryPolicy,
    RetryRecord,
    StreamingProvider,
    ToolCall,
    Usage,
    anthropic,
    mock,
    ollama,
    openai_compatible,
    scripted,
)
from agent.providers._http import load_httpx, parse_args, sse_events

EXPECTED = {
    "AnthropicProvider",
    "Capabilities",
    "ContextTooLongError",
    "EmptyStreamError",
    "FinishReason",
    "LLMProvider",
    "LLMRequest",
    "LLMResponse",
    "ModelNotFoundError",
    "OllamaProvider",
    "OpenAICompatibleProvider",
    "OutputSchema",
    "ProviderAuthError",
    "ProviderConfigError",
    "ProviderConnectionError",
    "ProviderDependencyError",
    "ProviderError",
    "ProviderProtocolError",
    "ProviderResponseError",
    "ProviderTimeoutError",
    "RetryPolicy",
    "RetryRecord",
    "ScriptError",
    "ScriptExhaustedError",
    "ScriptedProvider",
    "StreamEvent",
    "StreamingProvider",
    "Token",
    "ToolCall",
    "Usage",
    "anthropic",
    "mock",
    "ollama",
    "openai_compatible",
    "scripted",
    # the recorded world served back (issue 34)
    "ReplayMissError",
    "ReplayedProvider",
    "ReplayedTools",
    "replayed",
    "replayed_tools",
}


def test_public_surface_is_the_contract() -> None:
    """``__all__`` is sorted, names exactly the contract, and every name resolves."""
    assert providers.__all__ == sorted(providers.__all__)
    assert set(providers.__all__) == EXPECTED
    assert all(hasattr(providers, name) for name in providers.__all__)


def test_importing_providers_does_not_import_httpx() -> None:
    """``import agent.providers`` works without the http extra: httpx loads only when used."""
    code = "import sys, agent.providers; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_httpx_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without httpx, using an HTTP provider explains the extra to install."""
    monkeypatch.setitem(sys.modules, "httpx", None)  # makes `import httpx` raise ImportError
    with pytest.raises(
        ProviderDependencyError,
        match=r"^the HTTP providers need httpx: pip install httpx "
        r"\(in a pyfootprint checkout: pip install -e '\.\[http\]'\)$",
    ):
        load_httpx()


def test_every_provider_satisfies_the_protocols() -> None:
    """Scripted, mock and the HTTP providers are LLMProviders that can also stream."""
    for provider in (
        scripted([]),
        mock(),
        openai_compatible("http://127.0.0.1:1/v1"),
        anthropic(api_key="k"),
        ollama("m"),
    ):
        assert isinstance(provider, LLMProvider)
        assert isinstance(provider, StreamingProvider)
        assert isinstance(provider.name, str)


def test_usage_adds_up() -> None:
    """Usage values sum field by field, for the agent's token totals."""
    assert Usage(1, 2) + Usage(10, 20) == Usage(input_tokens=11, output_tokens=22)
    assert Usage() == Usage(0, 0)


def test_tool_call_to_dict_is_the_history_shape() -> None:
    """to_dict gives {id, name, args}; args_error appears only when set."""
    assert ToolCall("c1", "w", {"a": 1}).to_dict() == {"id": "c1", "name": "w", "args": {"a": 1}}
    bad = ToolCall("c2", "w", {}, args_error="arguments are not valid JSON")
    assert bad.to_dict() == {
        "id": "c2",
        "name": "w",
        "args": {},
        "args_error": "arguments are not valid JSON",
    }


def test_response_refuses_an_unknown_finish_reason() -> None:
    """finish_reason is one of stop | tool_use | max_tokens | content_filter."""
    with pytest.raises(ValueError, match=r"'finish_reason' must be in"):
        LLMResponse(content="", finish_reason="end_turn")  # type: ignore[arg-type]


def test_values_are_frozen() -> None:
    """Requests and responses are immutable values."""
    req = LLMRequest(system_prompt=None, messages=[], tools=[], model="m")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        req.model = "other"  # type: ignore[misc]
    assert req.temperature is None and req.max_tokens is None


def test_retry_record_is_json_safe() -> None:
    """A retry record turns into a plain dict for the trace."""
    assert RetryRecord(1, "HTTP 429", 0.5).to_dict() == {
        "attempt": 1,
        "reason": "HTTP 429",
        "delay": 0.5,
    }


def test_retry_policy_backs_off_exponentially_with_a_cap() -> None:
    """Delays double from base_delay, honour a longer Retry-After, and stop at max_delay."""
    policy = RetryPolicy(max_retries=5, base_delay=0.5, max_delay=3.0)
    assert [policy.delay(n) for n in range(1, 5)] == [0.5, 1.0, 2.0, 3.0]
    assert policy.delay(1, retry_after=2.5) == 2.5
    assert policy.delay(1, retry_after=60) == 3.0


@pytest.mark.parametrize(
    ("raw", "args", "error"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}, None),
        ({"city": "Paris"}, {"city": "Paris"}, None),
        ("", {}, None),
        (None, {}, None),
        ("{city: Paris", {}, r"^arguments are not valid JSON \(Expecting property name"),
        ("[1, 2]", {}, r"^arguments must be a JSON object, got list: '\[1, 2\]'$"),
        (7, {}, r"^arguments must be a JSON object, got int$"),
    ],
)
def test_parse_args_never_raises(raw: object, args: dict[str, object], error: str | None) -> None:
    """Wire arguments become (args, args_error); anything but a JSON object is an error text."""
    got_args, got_error = parse_args(raw)
    assert got_args == args
    if error is None:
        assert got_error is None
    else:
        assert got_error is not None
        assert re.search(error, got_error)


async def test_sse_parsing_follows_the_spec() -> None:
    """Blocks end at blank lines; event names, multi-line data and comments are handled."""

    async def lines() -> AsyncIterator[str]:
        for line in [": comment", "event: a", "data: 1", "data: 2", "", "data:3", ""]:
            yield line

    assert [e async for e in sse_events(lines())] == [("a", "1\n2"), (None, "3")]


@pytest.mark.parametrize(
    "factory",
    [
        lambda: openai_compatible("localhost:8000"),
        lambda: ollama("m", base_url="ftp://x"),
    ],
)
def test_base_url_needs_a_scheme(factory: Callable[[], object]) -> None:
    """A base URL without http:// or https:// is refused with the value shown."""
    with pytest.raises(ProviderConfigError, match=r"base_url must start with http:// or https://"):
        factory()
