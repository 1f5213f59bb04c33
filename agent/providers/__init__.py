"""Providers: the models an agent can call, behind one small typed contract.

Law of this package: the same agent code runs on :func:`scripted` in tests and on a
real model in production; only the provider line changes. Every provider takes an
:class:`LLMRequest` and returns an :class:`LLMResponse` (``complete``, sync for the
scripted providers, awaitable for the HTTP ones) and may stream :class:`Token` events
ending in that response (``stream``). Failures are :class:`ProviderError` s that name
the address and say what to do. The HTTP providers import ``httpx`` only when used
(``pip install httpx``; in a checkout ``pip install -e '.[http]'``).
"""

from agent.providers._http import RetryPolicy
from agent.providers.anthropic import AnthropicProvider, anthropic
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
    ScriptError,
    ScriptExhaustedError,
)
from agent.providers.ollama import OllamaProvider, ollama
from agent.providers.openai_compatible import OpenAICompatibleProvider, openai_compatible
from agent.providers.replayed import ReplayedProvider, ReplayedTools, ReplayMissError, replayed, replayed_tools
from agent.providers.scripted import ScriptedProvider, mock, scripted
from agent.providers.types import (
    Capabilities,
    FinishReason,
    LLMProvider,
    LLMRequest,
    LLMResponse,
    OutputSchema,
    RetryRecord,
    StreamEvent,
    StreamingProvider,
    Token,
    ToolCall,
    Usage,
)

__all__ = [
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
    "ReplayMissError",
    "ReplayedProvider",
    "ReplayedTools",
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
    "replayed",
    "replayed_tools",
    "scripted",
]
