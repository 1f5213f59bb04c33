"""OpenAI-compatible Chat Completions: OpenAI, vLLM, llama.cpp server, LM Studio, Ollama ``/v1``.

Law of this file: an :class:`LLMRequest` becomes exactly one ``POST
{base_url}/chat/completions`` body, and the answer (JSON or server-sent events) becomes
exactly one :class:`LLMResponse`:

- the system prompt travels as the first ``{"role": "system"}`` message;
- tools as ``{"type": "function", "function": {"name", "description", "parameters"}}``;
- assistant turns that called tools carry ``tool_calls`` whose ``arguments`` are
  JSON-encoded strings (``content`` is ``null`` when the turn has no text);
- tool results as ``{"role": "tool", "tool_call_id", "content"}``;
- ``max_tokens`` (not ``max_completion_tokens``: every compatible server knows it);
- finish reasons ``stop``/``tool_calls``/``length``/``content_filter`` → ``stop``/
  ``tool_use``/``max_tokens``/``content_filter``; a reply with tool calls is ``tool_use``
  whatever the server said (some servers say ``stop``);
- arguments that are not a JSON object never crash: the call gets ``args={}`` and
  ``args_error`` (see :class:`ToolCall`);
- usage from ``prompt_tokens`` / ``completion_tokens``.
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
    secret_from,
    sse_events,
)
from agent.providers.types import (
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
                    "content": message.get("content") or None,
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


def encode_request(req: LLMRequest, model: str, *, stream: bool = False) -> dict[str, Any]:
    """The exact JSON body sent to ``/chat/completions``."""
    body: dict[str, Any] = {"model": model, "messages": encode_messages(req)}
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
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if req.max_tokens is not None:
        body["max_tokens"] = req.max_tokens
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


def _usage(raw: object) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    return Usage(int(raw.get("prompt_tokens") or 0), int(raw.get("completion_tokens") or 0))


@attrs.frozen(kw_only=True)
class OpenAICompatibleProvider(HTTPProvider):
    """A Chat Completions endpoint; build it with :func:`openai_compatible`."""

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = super()._headers(stream)
        if self.api_key is not None:
            headers["authorization"] = f"Bearer {self.api_key.value}"
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
        data, retries = await self._post(self.url, encode_request(req, model), model)
        return attrs.evolve(self.decode(data, len(req.messages)), retries=retries)

    async def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Send ``req`` with ``stream: true``; yield tokens, then the assembled response."""
        model = self._model_for(req)
        body = encode_request(req, model, stream=True)
        retries: list[RetryRecord] = []
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}  # by the stream's tool-call index
        usage, reason, answered_by, done = Usage(), None, None, False
        async with self._open(self.url, body, model, retries, stream=True) as response:
            async for _event, data in sse_events(response.aiter_lines()):
                if data.strip() == "[DONE]":
                    done = True
                    break
                chunk = self._loads(self.url, data)
                if not isinstance(chunk, dict):
                    raise self._malformed(self.url, f"stream chunk is not an object: {data!r}")
                if "error" in chunk:
                    raise self._malformed(self.url, f"stream error: {json.dumps(chunk['error'])}")
                answered_by = chunk.get("model") or answered_by
                if chunk.get("usage"):
                    usage = _usage(chunk["usage"])
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
) -> OpenAICompatibleProvider:
    """A provider for any OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` defaults to ``OPENAI_BASE_URL``, then ``https://api.openai.com/v1``;
    ``api_key`` to ``OPENAI_API_KEY`` (no ``Authorization`` header when there is none —
    local servers need none). ``model``, when given, overrides the request's model.
    ``timeout`` is per request in seconds; ``retry`` bounds retries (see
    :class:`RetryPolicy`); ``sleep`` is awaited between retries (inject one in tests).
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
    )
