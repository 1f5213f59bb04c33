"""Provider errors: every failure a provider raises says what went wrong, where, and what to do.

Law of this file: a provider never lets an HTTP-layer exception escape. Each failure is
one of the classes below, its message names the provider and the address it talked to
and ends with an actionable hint, and no message, ``repr`` or attribute ever carries the
API key (text that may echo it passes :func:`agent.providers.secret.redact` first).

Every class is also an ``agent.errors.AgentError`` (the agent's tree); the builtin base
each one keeps is drawn here::

    RuntimeError
    └── ProviderError                 any failure while talking to a model
        ├── ProviderConnectionError   the server could not be reached or dropped the connection
        │   └── ProviderTimeoutError  no answer within the provider's timeout
        ├── ProviderAuthError         401/403: the API key is missing, wrong or not allowed
        ├── ModelNotFoundError        404 for the model: the server does not know that model
        ├── ContextTooLongError       the request does not fit in the model's context window
        ├── ProviderResponseError     any other refusal (4xx/5xx after retries) or a malformed body
        │   ├── ProviderProtocolError the body is not the wire format spoken (names the field)
        │   └── EmptyStreamError      200 and a stream with no event: the server cannot stream that request
        └── ScriptExhaustedError      the scripted provider has no reply left for a request

    ValueError
    ├── ScriptError                   ``scripted(...)`` was given a reply it cannot play
    └── ProviderConfigError           a provider was misconfigured (no model, no key, bad URL)

    ImportError
    └── ProviderDependencyError       an HTTP provider was used without httpx (the ``http`` extra)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agent.errors import AgentError

if TYPE_CHECKING:
    from agent.providers.types import RetryRecord


class ProviderError(AgentError, RuntimeError):
    """A provider failed to produce a response.

    Attributes carry the context the error was raised in: ``provider`` (the provider's
    ``name``), ``url`` (the address it talked to, or ``None``), ``status`` (the HTTP
    status, or ``None``) and ``retries`` (the :class:`RetryRecord` s spent before
    giving up, oldest first).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        url: str | None = None,
        status: int | None = None,
        retries: Sequence[RetryRecord] = (),
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.url = url
        self.status = status
        self.retries: tuple[RetryRecord, ...] = tuple(retries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.args[0]!r})"


class ProviderConnectionError(ProviderError):
    """The server could not be reached (refused, unknown host) or dropped the connection."""


class ProviderTimeoutError(ProviderConnectionError):
    """The server did not answer within the provider's ``timeout``."""


class ProviderAuthError(ProviderError):
    """The server refused the credentials (HTTP 401 or 403): check the API key."""


class ModelNotFoundError(ProviderError):
    """The server does not serve the requested model (HTTP 404 naming the model)."""


class ContextTooLongError(ProviderError):
    """The request (prompt + history + tools) exceeds the model's context window."""


class ProviderResponseError(ProviderError):
    """Any other refusal from the server, or a body that is not the expected wire format."""


class ProviderProtocolError(ProviderResponseError):
    """The server answered, but not in the wire format the provider speaks.

    The message names the field that had another shape (``message.content``, a stream
    line without ``message``, ...) — a sign that ``base_url`` points at another API or
    that the server speaks another version of it.
    """


class EmptyStreamError(ProviderResponseError):
    """The server answered 200 and then closed a stream that carried no event at all.

    Not a dropped connection: the server could not stream that request (llama.cpp's server,
    given tools and ``tool_choice="auto"``), so trying again gets the same. The agent answers it
    with one non-streamed call when the request offers tools (recorded in ``llm_not_streamed``).
    """


class ScriptExhaustedError(ProviderError):
    """A scripted provider received more requests than it has replies."""


class ScriptError(AgentError, ValueError):
    """``scripted(replies)`` was given a script it cannot play; raised by ``scripted``."""


class ProviderConfigError(AgentError, ValueError):
    """A provider factory or request lacks something it needs (model, API key, base URL)."""


class ProviderDependencyError(AgentError, ImportError):
    """An HTTP provider was used but ``httpx`` is not installed."""
