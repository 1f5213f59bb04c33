"""The provider contract: what the agent sends a model and what it gets back.

Law of this file: one request shape and one response shape for every provider. The agent
builds an :class:`LLMRequest` from its state, calls ``provider.complete(req)`` (awaiting
the result when it is awaitable — the scripted provider answers synchronously so that
the benchmark's hot path never touches an event loop) and reads an :class:`LLMResponse`
whose ``finish_reason`` is one of four normalised values. Wire formats live in the
provider modules; nothing here knows about HTTP.

Messages use the agent's history shape::

    {"role": "user" | "assistant" | "tool" | "system", "content": str}
    # assistant turns that called tools add  "tool_calls": [{"id", "name", "args"}]
    # tool results add                        "tool_call_id", "tool_name"

Tools are ``{"name", "description", "input_schema"}`` dicts, in registration order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from hashlib import sha256
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from flowchart.lowlevel import canonical_json

FinishReason: TypeAlias = Literal["stop", "tool_use", "max_tokens", "content_filter"]
"""Why the model stopped: normalised across providers (``end_turn`` → ``stop``, ...)."""

FINISH_REASONS: tuple[FinishReason, ...] = ("stop", "tool_use", "max_tokens", "content_filter")


@attrs.frozen
class ToolCall:
    """One tool call the model asked for.

    ``args_error`` is ``None`` for a well-formed call. When the model sent arguments
    that are not a JSON object (bad JSON, a list, ...), the provider does not crash:
    it returns the call with ``args={}`` and ``args_error`` set to a message meant for
    the model ("arguments are not valid JSON: ..."); the agent should send that message
    back as the call's tool result instead of running the tool.
    """

    id: str
    name: str
    args: dict[str, Any] = attrs.field(factory=dict)
    args_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The history shape ``{"id", "name", "args"}`` (plus ``args_error`` when set)."""
        out: dict[str, Any] = {"id": self.id, "name": self.name, "args": self.args}
        # Absent means byte-identical: a well-formed call has no args_error key.
        if self.args_error is not None:
            out["args_error"] = self.args_error
        return out


def _known_sum(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


@attrs.frozen
class Usage:
    """Tokens spent by one call, as the server reported them. Adding two ``Usage`` values sums them.

    ``input_tokens`` counts every prompt token, those read from the provider's cache included;
    ``cached_input_tokens`` says how many of them were (``None``: not reported — unknown, never
    0); ``reasoning_tokens`` how many of ``output_tokens`` the model spent reasoning (``None``:
    not reported). A sum of a reported and an unreported count is unreported.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int | None = None
    reasoning_tokens: int | None = None

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            _known_sum(self.cached_input_tokens, other.cached_input_tokens),
            _known_sum(self.reasoning_tokens, other.reasoning_tokens),
        )

    def to_dict(self) -> dict[str, int]:
        """The reported counts (an unreported one is absent, never 0)."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cached_input_tokens is not None:
            out["cached_input_tokens"] = self.cached_input_tokens
        if self.reasoning_tokens is not None:
            out["reasoning_tokens"] = self.reasoning_tokens
        return out


@attrs.frozen
class RetryRecord:
    """One retry a provider made: which attempt failed, why, and how long it waited.

    ``attempt`` is 1-based (attempt 1 is the first try); ``reason`` is e.g. ``"HTTP 429"``
    or ``"connection reset"``; ``delay`` is the seconds slept before the next attempt.
    """

    attempt: int
    reason: str
    delay: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, for the agent to commit into the run's trace."""
        return {"attempt": self.attempt, "reason": self.reason, "delay": self.delay}


@attrs.frozen
class OutputSchema:
    """The shape the model's final answer must have (``Agent.create(output_schema=...)``).

    ``name`` (letters, digits, ``_``, ``-``) names it on the wire; ``schema`` is a JSON
    Schema whose root is an object; ``strict`` is true when the schema meets OpenAI's strict
    rules (every object closed with ``additionalProperties: false`` and every property
    required). A provider that can constrain the answer natively declares
    ``structured_output = True`` and encodes it (OpenAI ``response_format``, Anthropic a forced
    tool, Ollama ``format``); for any other provider the agent asks in the system prompt.
    """

    name: str
    schema: dict[str, Any] = attrs.field(hash=False)
    strict: bool = False


OutputForm: TypeAlias = Literal["json_schema", "json_object", "instruction"]
"""How the answer's shape is asked for, best first: the schema natively (``json_schema``), a
JSON-only mode with the schema as an instruction (``json_object``), the instruction alone."""

OUTPUT_FORMS: tuple[OutputForm, ...] = ("json_schema", "json_object", "instruction")


def _flag(_self: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"Capabilities({attribute.name}=...): expected True or False, got {value!r}")


@attrs.frozen
class Capabilities:
    """What a provider (and the server behind it) takes; the agent sends the best form it takes.

    ``json_schema``: answers constrained to a JSON Schema natively (OpenAI ``response_format``
    ``json_schema``, Anthropic a forced tool, Ollama ``format``). ``json_mode``: a JSON-only
    mode without a schema (``response_format: {"type": "json_object"}``, Ollama ``"json"``).
    ``tool_choice``: the request may say which tool to call (``auto``/``none``/a name).
    ``stream_tools``: a request that offers tools may be streamed (llama.cpp's server cannot
    stream ``tool_choice="auto"``: it answers 200 with an empty stream). A provider declares
    ``capabilities``; one that declares only ``structured_output = True`` has ``json_schema``.
    """

    json_schema: bool = attrs.field(default=False, validator=_flag)
    json_mode: bool = attrs.field(default=False, validator=_flag)
    tool_choice: bool = attrs.field(default=True, validator=_flag)
    stream_tools: bool = attrs.field(default=True, validator=_flag)

    def output_forms(self) -> tuple[OutputForm, ...]:
        """The structured-output forms to try, best first: each refusal moves one step down."""
        start = 0 if self.json_schema else 1 if self.json_mode else 2
        return OUTPUT_FORMS[start:]


def capabilities_of(provider: Any) -> Capabilities:
    """What ``provider`` declares: its ``capabilities``, else ``structured_output = True`` read as
    native JSON Schema. A wrapper's own ``structured_output = False`` always wins (it may delegate
    ``capabilities`` to the provider it wraps, yet take no schema itself)."""
    declared = getattr(provider, "capabilities", None)
    caps = (
        declared
        if isinstance(declared, Capabilities)
        else Capabilities(json_schema=getattr(provider, "structured_output", False) is True)
    )
    if getattr(provider, "structured_output", None) is False and caps.json_schema:
        caps = attrs.evolve(caps, json_schema=False)
    return caps


@attrs.frozen
class LLMRequest:
    """What the agent asks of a model.

    ``system_prompt`` is not among ``messages``. ``tools`` is empty when no tool is
    offered. ``model`` names the model; an HTTP provider configured with its own model
    uses that one instead (so only the provider line changes between test and
    production). ``temperature`` / ``max_tokens`` are sent only when set.
    ``output_schema`` (``None`` unless the agent has one) is the shape the answer must
    have, for providers that can ask for it natively (see :class:`OutputSchema`);
    ``output_form`` says how: ``"json_schema"`` (the schema itself) or ``"json_object"`` (a
    JSON-only mode; the schema is then in the system prompt). A provider
    may keep the request (the scripted provider records it), so the caller must not
    mutate the lists after the call.
    """

    system_prompt: str | None
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    output_schema: OutputSchema | None = None
    output_form: OutputForm = "json_schema"


def offer_of(request: LLMRequest) -> dict[str, Any]:
    """What ``request`` offers the model besides its messages, as a record keeps it: the tools'
    names and one digest of the tools' schemas, the output schema and the form it is asked in
    (``{"tools": [...], "digest": "<16 hex>"}``) — so a replay can tell a request whose tools or
    answer shape changed from the recorded one."""
    schema = request.output_schema
    shape = None if schema is None else [schema.name, schema.schema, schema.strict, request.output_form]
    text = canonical_json([request.tools, shape])
    return {"tools": [tool.get("name") for tool in request.tools], "digest": sha256(text.encode()).hexdigest()[:16]}


@attrs.frozen
class LLMResponse:
    """What a model answered.

    ``content`` is the text (``""`` when the model only called tools); ``tool_calls`` the
    calls in the model's order; ``usage`` the tokens spent, or ``None`` when the server did
    not report them (unknown is not 0: the agent leaves such a call out of its totals and
    records ``usage_not_reported``); ``finish_reason`` one of
    ``stop | tool_use | max_tokens | content_filter``; ``model`` the model the server
    says answered (``None`` when unknown); ``retries`` the retries the provider made
    before this answer (empty for the scripted provider and for first-try successes).
    """

    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = Usage()
    finish_reason: FinishReason = attrs.field(default="stop", validator=attrs.validators.in_(FINISH_REASONS))
    model: str | None = None
    retries: tuple[RetryRecord, ...] = ()


@attrs.frozen
class Token:
    """One streamed piece of the model's text; ``index`` counts from 0 within a call."""

    index: int
    text: str


StreamEvent: TypeAlias = Token | LLMResponse
"""What ``stream(req)`` yields: :class:`Token` s, then exactly one final :class:`LLMResponse`."""


@runtime_checkable
class LLMProvider(Protocol):
    """A model the agent can call.

    ``complete`` may return the response directly (scripted, mock) or an awaitable
    (HTTP providers). Callers do::

        result = provider.complete(req)
        response = await result if inspect.isawaitable(result) else result
    """

    @property
    def name(self) -> str:
        """Short provider name, used in events and error messages."""
        ...

    def complete(self, req: LLMRequest) -> LLMResponse | Awaitable[LLMResponse]:
        """Answer ``req`` in one piece."""
        ...


@runtime_checkable
class StreamingProvider(LLMProvider, Protocol):
    """A provider that can also stream: ``isinstance(p, StreamingProvider)`` tells.

    ``stream(req)`` is an async iterator of :class:`Token` events followed by exactly
    one :class:`LLMResponse` assembled from the stream (content, tool calls, usage).
    Joining the tokens' ``text`` gives the response's ``content``.
    """

    def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Answer ``req`` token by token, ending with the assembled response."""
        ...
