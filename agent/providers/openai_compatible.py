"""OpenAI-compatible Chat Completions: OpenAI, vLLM, llama.cpp server, LM Studio, Ollama ``/v1``.

Law of this file: an :class:`LLMRequest` becomes exactly one ``POST
{base_url}/chat/completions`` body, and the answer (JSON or server-sent events) becomes
exactly one :class:`LLMResponse`:

- the system prompt travels as the first ``{"role": "system"}`` message;
- tools as ``{"type": "function", "function": {"name", "description", "parameters"}}``,
  with ``tool_choice`` — ``"auto"`` unless the provider was given another — whenever tools
  are offered (OpenAI defaults to "auto"; llama.cpp's server, without it, leaves the tools
  out of the prompt); a tool name becomes ``{"type": "function", "function": {"name"}}``.
  No tools, no ``tool_choice``;
- ``extra_body`` fields (server-specific: ``top_k``, ``seed``, ``grammar``, ...) are added
  to every body; they may not set a field this module writes;
- assistant turns that called tools carry ``tool_calls`` whose ``arguments`` are
  JSON-encoded strings, and ``content`` ``""`` when the turn has no text (never ``null``:
  strict servers refuse it);
- tool results as ``{"role": "tool", "tool_call_id", "content"}``;
- ``max_tokens`` (not ``max_completion_tokens``: every compatible server knows it);
- an output schema as ``response_format: {"type": "json_schema", "json_schema": {"name",
  "schema", "strict"}}``, or ``{"type": "json_object"}`` when the request's ``output_form``
  is JSON mode (``extra_body`` may not set ``response_format`` then);
- ``capabilities`` say what the server takes (default: all of it, as OpenAI does); without
  ``tool_choice`` the field is never sent;
- finish reasons ``stop``/``tool_calls``/``length``/``content_filter`` → ``stop``/
  ``tool_use``/``max_tokens``/``content_filter``; a reply with tool calls is ``tool_use``
  whatever the server said (some servers say ``stop``);
- arguments that are not a JSON object never crash: the call gets ``args={}`` and
  ``args_error`` (see :class:`ToolCall`);
- usage from ``prompt_tokens`` / ``completion_tokens`` (with ``prompt_tokens_details.cached_tokens``
  and ``completion_tokens_details.reasoning_tokens`` when sent); ``None`` (unknown) when the answer
  has no usage (many servers send none when streaming);
- a stream that ends before its first event is :class:`EmptyStreamError` (the server cannot
  stream that request: retrying gets the same), one cut short later a connection error.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import attrs

from agent.providers._http import (
    HTTPProvider,
    RetryPolicy,
    Sleep,
    base_url_from,
    parse_args,
    sse_events,
    usage_from,
)
from agent.providers.errors import ProviderConfigError
from agent.providers.secret import secret_from
from agent.providers.types import (
    Capabilities,
    FinishReason,
    LLMRequest,
    LLMResponse,
    RetryRecord,
    StreamEvent,
    Token,
    ToolCall,
    Usage,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filter",
}


def encode_messages(req: LLMRequest) -> list[dict[str, Any]]:
    """History messages (plus the system prompt) in Chat Completions shape."""
    out: list[dict[str, Any]] = []
    if req.system_prompt:
        out.append({"role": "system", "content": req.system_prompt})
    for message in req.messages:
        role = message["role"]
        if role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message["tool_call_id"],
                    "content": message.get("content") or "",
                }
            )
        elif role == "assistant" and message.get("tool_calls"):
            out.append(
                {
                    "role": "assistant",
                    "content": message.get("content") or "",
                    "tool_calls": [
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {
                                "name": call["name"],
                                "arguments": json.dumps(call.get("args") or {}),
                            },
                        }
                        for call in message["tool_calls"]
                    ],
                }
            )
        else:
            out.append({"role": role, "content": message.get("content") or ""})
    return out


TOOL_CHOICES = ("auto", "none", "required")

#: the fields :func:`encode_request` writes; ``extra_body`` may not set them
RESERVED_FIELDS = frozenset(
    {"model", "messages", "tools", "tool_choice", "temperature", "max_tokens", "stream", "stream_options"}
)


def _tool_choice(choice: str, req: LLMRequest) -> str | dict[str, Any]:
    if choice in TOOL_CHOICES:
        return choice
    offered = [tool["name"] for tool in req.tools]
    if choice not in offered:
        raise ProviderConfigError(
            f"openai_compatible: tool_choice={choice!r} names no tool of this request "
            f"(offered: {', '.join(offered)}); use one of them or {', '.join(TOOL_CHOICES)}"
        )
    return {"type": "function", "function": {"name": choice}}


def encode_request(
    req: LLMRequest,
    model: str,
    *,
    stream: bool = False,
    tool_choice: str | None = None,
    extra_body: dict[str, Any] | None = None,
    send_tool_choice: bool = True,
) -> dict[str, Any]:
    """The exact JSON body sent to ``/chat/completions``.

    ``tool_choice`` (``"auto"`` when ``None``) is sent only when the request offers tools (and
    ``send_tool_choice``: the server takes the field).
    """
    body: dict[str, Any] = {"model": model, "messages": encode_messages(req)}
    if extra_body:
        body.update(extra_body)
    if req.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool.get("description", ""),
                    "parameters": tool.get("input_schema") or {"type": "object"},
                },
            }
            for tool in req.tools
        ]
        if send_tool_choice:
            body["tool_choice"] = _tool_choice(tool_choice or "auto", req)
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.max_tokens is not None:
        body["max_tokens"] = req.max_tokens
    if req.output_schema is not None:
        if "response_format" in body:
            raise ProviderConfigError(
                "openai_compatible: extra_body sets response_format and the agent has an output_schema; drop one"
            )
        wanted = req.output_schema
        if req.output_form == "json_object":  # JSON mode: the schema is in the system prompt
            body["response_format"] = {"type": "json_object"}
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": wanted.name, "schema": wanted.schema, "strict": wanted.strict},
            }
    if stream:
        # Without include_usage a streamed answer carries no token counts.
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def _tool_call(raw: dict[str, Any], turn: int, position: int) -> ToolCall:
    function = raw.get("function") or {}
    args, error = parse_args(function.get("arguments"))
    # Some servers omit ids; the agent needs one to pair results with calls, unique in the
    # run: ``turn`` (the number of messages sent) grows with every call.
    call_id = raw.get("id") or f"call_{turn}_{position}"
    return ToolCall(id=call_id, name=function.get("name") or "", args=args, args_error=error)


def _finish(raw: object, has_calls: bool) -> FinishReason:
    reason = _FINISH.get(raw, "stop") if isinstance(raw, str) else "stop"
    if has_calls and reason == "stop":
        return "tool_use"
    return reason


def _usage(raw: object) -> Usage | None:
    return usage_from(
        raw,
        "prompt_tokens",
        "completion_tokens",
        cached=("prompt_tokens_details", "cached_tokens"),
        reasoning=("completion_tokens_details", "reasoning_tokens"),
    )


def _check_tool_choice(_self: object, _attribute: object, value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise ProviderConfigError(
            f"openai_compatible: tool_choice must be 'auto', 'none', 'required' or a tool name, got {value!r}"
        )


def _check_extra_body(_self: object, _attribute: object, value: dict[str, Any] | None) -> None:
    if value is None:
        return
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ProviderConfigError(
            f"openai_compatible: extra_body must be a dict of field names to JSON values, got {value!r}"
        )
    taken = sorted(RESERVED_FIELDS.intersection(value))
    if taken:
        raise ProviderConfigError(
            f"openai_compatible: extra_body may not set {', '.join(taken)} — the provider writes "
            "those from the request (use tool_choice=, or the agent's temperature/max_tokens)"
        )
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ProviderConfigError(f"openai_compatible: extra_body must be JSON-safe ({exc})") from None


#: what OpenAI's own API takes, the default for an OpenAI-compatible server not described otherwise
OPENAI_CAPABILITIES = Capabilities(json_schema=True, json_mode=True, tool_choice=True, stream_tools=True)
#: llama.cpp's server (llama-cpp-python, ``chatml-function-calling``), as measured: JSON mode but no
#: ``json_schema`` (HTTP 500 ``response_format.type: Input should be 'text' or 'json_object'``), and
#: no streamed answer when tools are offered with ``tool_choice="auto"`` (200 and an empty stream)
LLAMA_CPP_CAPABILITIES = Capabilities(json_schema=False, json_mode=True, tool_choice=True, stream_tools=False)
_PRESETS = {"openai": OPENAI_CAPABILITIES, "llama.cpp": LLAMA_CPP_CAPABILITIES}


def capabilities_from(value: object) -> Capabilities:
    """``capabilities=``: a :class:`Capabilities`, a preset name, or a dict of its flags (checked)."""
    if value is None:
        return OPENAI_CAPABILITIES
    if isinstance(value, Capabilities):
        return value
    if isinstance(value, str) and value in _PRESETS:
        return _PRESETS[value]
    names = [field.name for field in attrs.fields(Capabilities)]
    if isinstance(value, dict):
        unknown = sorted(str(key) for key in value if key not in names)
        if unknown:
            raise ProviderConfigError(
                f"openai_compatible: capabilities has unknown key(s) {', '.join(unknown)}; known: {', '.join(names)}"
            )
        try:
            return attrs.evolve(OPENAI_CAPABILITIES, **value)
        except TypeError as exc:
            raise ProviderConfigError(f"openai_compatible: {exc}") from None
    raise ProviderConfigError(
        f"openai_compatible: capabilities must be a Capabilities, a dict of {', '.join(names)} flags, "
        f"or one of {', '.join(repr(name) for name in _PRESETS)}; got {value!r}"
    )


@attrs.frozen(kw_only=True)
class OpenAICompatibleProvider(HTTPProvider):
    """A Chat Completions endpoint; build it with :func:`openai_compatible`.

    ``tool_choice``, ``extra_body`` and ``capabilities`` are as for :func:`openai_compatible`.
    """

    tool_choice: str | None = attrs.field(default=None, validator=_check_tool_choice)
    extra_body: dict[str, Any] | None = attrs.field(default=None, validator=_check_extra_body, hash=False)
    capabilities: Capabilities = OPENAI_CAPABILITIES

    def __attrs_post_init__(self) -> None:
        if self.tool_choice is not None and not self.capabilities.tool_choice:
            raise ProviderConfigError(
                f"openai_compatible: tool_choice={self.tool_choice!r} but capabilities say the server takes no "
                "tool_choice; drop one of them"
            )

    @property
    def structured_output(self) -> bool:
        """True when the answer's shape is sent natively (``response_format`` ``json_schema``)."""
        return self.capabilities.json_schema

    def encode(self, req: LLMRequest, model: str, *, stream: bool = False) -> dict[str, Any]:
        """The exact body this provider posts for ``req``."""
        return encode_request(
            req,
            model,
            stream=stream,
            tool_choice=self.tool_choice,
            extra_body=self.extra_body,
            send_tool_choice=self.capabilities.tool_choice,
        )

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = super()._headers(stream)
        if self.api_key is not None:
            headers["authorization"] = f"Bearer {self.api_key.reveal()}"
        return headers

    def _connect_hint(self) -> str:
        return (
            f"is the server running at {self.base_url}? check base_url / OPENAI_BASE_URL "
            f"(local servers usually listen on http://127.0.0.1:<port>/v1)"
        )

    def _auth_hint(self) -> str:
        return "check the API key (api_key= or OPENAI_API_KEY)"

    def _not_found_hint(self) -> str:
        return "check base_url: OpenAI-compatible servers usually end in /v1"

    @property
    def url(self) -> str:
        """The endpoint every request is posted to."""
        return f"{self.base_url}/chat/completions"

    def decode(self, data: Any, turn: int = 0) -> LLMResponse:
        """A non-streamed ``/chat/completions`` answer → :class:`LLMResponse`.

        ``turn`` (the number of messages sent) makes minted tool-call ids unique.
        """
        try:
            message = data["choices"][0]["message"]
            raw_calls = message.get("tool_calls") or []
            calls = tuple(_tool_call(c, turn, i) for i, c in enumerate(raw_calls, start=1))
            return LLMResponse(
                content=message.get("content") or "",
                tool_calls=calls,
                usage=_usage(data.get("usage")),
                finish_reason=_finish(data["choices"][0].get("finish_reason"), bool(calls)),
                model=data.get("model"),
            )
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._malformed(self.url, f"no choices[0].message ({exc!r})") from None

    async def complete(self, req: LLMRequest) -> LLMResponse:
        """Send ``req`` and return the model's answer, with any retries recorded."""
        model = self._model_for(req)
        data, retries = await self._post(self.url, self.encode(req, model), model)
        return attrs.evolve(self.decode(data, len(req.messages)), retries=retries)

    async def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Send ``req`` with ``stream: true``; yield tokens, then the assembled response."""
        model = self._model_for(req)
        body = self.encode(req, model, stream=True)
        retries: list[RetryRecord] = []
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}  # by the stream's tool-call index
        usage: Usage | None = None
        reason, answered_by, done, events = None, None, False, 0
        async with self._open(self.url, body, model, retries, stream=True) as response:
            async for _event, data in sse_events(response.aiter_lines()):
                events += 1
                if data.strip() == "[DONE]":
                    done = True
                    break
                chunk = self._loads(self.url, data)
                if not isinstance(chunk, dict):
                    raise self._malformed(self.url, f"stream chunk is not an object: {data!r}")
                if "error" in chunk:
                    raise self._server_error(self.url, f"stream error: {json.dumps(chunk['error'])}")
                answered_by = chunk.get("model") or answered_by
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"]) or usage
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        yield Token(index=len(text), text=delta["content"])
                        text.append(delta["content"])
                    for part in delta.get("tool_calls") or []:
                        call = calls.setdefault(part.get("index", len(calls)), {"arguments": ""})
                        call["id"] = part.get("id") or call.get("id")
                        function = part.get("function") or {}
                        call["name"] = function.get("name") or call.get("name")
                        call["arguments"] += function.get("arguments") or ""
                    reason = choice.get("finish_reason") or reason
        if not events:  # 200 and nothing at all: the server cannot stream this request
            raise self._empty_stream(self.url, retries, bool(req.tools))
        if not (done or reason):
            raise self._cut_short(self.url, retries)
        tool_calls = tuple(
            _tool_call({"id": c.get("id"), "function": c}, len(req.messages), i)
            for i, c in enumerate((calls[k] for k in sorted(calls)), start=1)
        )
        yield LLMResponse(
            content="".join(text),
            tool_calls=tool_calls,
            usage=usage,
            finish_reason=_finish(reason, bool(tool_calls)),
            model=answered_by,
            retries=tuple(retries),
        )


def openai_compatible(
    base_url: str | None = None,
    api_key: str | None = None,
    model: str | None = None,
    *,
    timeout: float = 60.0,
    retry: RetryPolicy | None = None,
    sleep: Sleep = asyncio.sleep,
    name: str = "openai_compatible",
    tool_choice: str | None = None,
    extra_body: dict[str, Any] | None = None,
    capabilities: Capabilities | dict[str, bool] | str | None = None,
) -> OpenAICompatibleProvider:
    """A provider for any OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` defaults to ``OPENAI_BASE_URL``, then ``https://api.openai.com/v1``;
    ``api_key`` to ``OPENAI_API_KEY`` (no ``Authorization`` header when there is none —
    local servers need none). ``model``, when given, overrides the request's model.
    ``timeout`` is per request in seconds; ``retry`` bounds retries (see
    :class:`RetryPolicy`); ``sleep`` is awaited between retries (inject one in tests).
    ``tool_choice`` is sent whenever tools are offered: ``"auto"`` (the default),
    ``"none"``, ``"required"`` or the name of one offered tool (that tool must be called).
    ``extra_body`` adds server-specific fields to every request (``{"top_k": 40}``); it may
    not set a field the provider writes. ``capabilities`` says what the server takes (see
    :class:`Capabilities`): a ``Capabilities``, a dict of its flags (the others as OpenAI's), or
    ``"openai"`` (the default) / ``"llama.cpp"``; a form the server refuses anyway is answered with
    the next one by the agent. All are checked here (:class:`ProviderConfigError`).
    """
    return OpenAICompatibleProvider(
        name=name,
        base_url=base_url_from(
            base_url or os.environ.get("OPENAI_BASE_URL"),
            default=DEFAULT_BASE_URL,
            what="openai_compatible base_url",
        ),
        model=model,
        api_key=secret_from(api_key or os.environ.get("OPENAI_API_KEY")),
        timeout=timeout,
        retry=retry or RetryPolicy(),
        sleep=sleep,
        tool_choice=tool_choice,
        extra_body=dict(extra_body) if isinstance(extra_body, dict) else extra_body,
        capabilities=capabilities_from(capabilities),
    )
