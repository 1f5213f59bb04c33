"""Ollama's native chat API: ``POST {base_url}/api/chat`` (JSON, or NDJSON when streaming).

Law of this file: an :class:`LLMRequest` becomes exactly one ``/api/chat`` body, and the
answer (one JSON object, or one JSON object per line when streaming) becomes exactly one
:class:`LLMResponse`:

- the system prompt travels as the first ``{"role": "system"}`` message;
- tools OpenAI-function shaped: ``{"type": "function", "function": {"name",
  "description", "parameters"}}``;
- assistant turns that called tools carry ``tool_calls: [{"function": {"name",
  "arguments": {...}}}]`` — arguments as an object, not a string;
- tool results as ``{"role": "tool", "content", "tool_name"}``;
- an output schema as ``format`` (the JSON Schema itself);
- ``stream`` is always sent (Ollama streams unless told not to); ``temperature`` and
  ``max_tokens`` travel as ``options.temperature`` / ``options.num_predict``;
- answer: ``message.content``, ``message.tool_calls`` (Ollama sends no ids: we mint
  ``call_<turn>_<n>``, unique within a run because ``turn`` is the number of messages
  sent), usage from ``prompt_eval_count`` / ``eval_count`` (``None`` when either is
  missing), ``done_reason`` ``stop`` → ``stop`` (``tool_use`` when calls are present),
  ``length`` → ``max_tokens``;
- a stream line of another shape (no ``message`` object before the ``done`` line, a
  ``message.content`` that is not a string, ``message.tool_calls`` that is not a list) is a
  :class:`ProviderProtocolError` naming the field — never a silent ``""``.

Point it at a local model with ``ollama serve`` and ``ollama pull <model>``; the address
comes from ``base_url``, else ``OLLAMA_HOST``, else ``http://localhost:11434``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import attrs

from agent.providers._http import HTTPProvider, RetryPolicy, Sleep, base_url_from, parse_args, usage_from
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

DEFAULT_BASE_URL = "http://localhost:11434"

_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "max_tokens"}


def host_to_url(host: str) -> str:
    """``OLLAMA_HOST`` as Ollama reads it: scheme defaults to http, an http port to 11434."""
    host = host.strip()
    if "://" not in host:
        host = f"http://{host}"
    parts = urlsplit(host)
    if parts.port is None and parts.hostname and parts.scheme == "http":
        host = host.replace(parts.netloc, f"{parts.netloc}:11434", 1)
    return host


def encode_messages(req: LLMRequest) -> list[dict[str, Any]]:
    """History messages (plus the system prompt) in ``/api/chat`` shape."""
    out: list[dict[str, Any]] = []
    if req.system_prompt:
        out.append({"role": "system", "content": req.system_prompt})
    for message in req.messages:
        role, content = message["role"], message.get("content") or ""
        if role == "tool":
            out.append({"role": "tool", "content": content, "tool_name": message["tool_name"]})
        elif role == "assistant" and message.get("tool_calls"):
            calls = [{"function": {"name": c["name"], "arguments": c.get("args") or {}}} for c in message["tool_calls"]]
            out.append({"role": "assistant", "content": content, "tool_calls": calls})
        else:
            out.append({"role": role, "content": content})
    return out


def encode_request(req: LLMRequest, model: str, *, stream: bool = False) -> dict[str, Any]:
    """The exact JSON body sent to ``/api/chat``."""
    body: dict[str, Any] = {"model": model, "messages": encode_messages(req), "stream": stream}
    if req.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t["name"],
                    "description": t.get("description", ""),
                    "parameters": t.get("input_schema") or {"type": "object"},
                },
            }
            for t in req.tools
        ]
    if req.output_schema is not None:  # JSON mode is ``"json"``; the schema is then in the system prompt
        body["format"] = "json" if req.output_form == "json_object" else req.output_schema.schema
    options: dict[str, Any] = {}
    if req.temperature is not None:
        options["temperature"] = req.temperature
    if req.max_tokens is not None:
        options["num_predict"] = req.max_tokens
    if options:
        body["options"] = options
    return body


def _tool_calls(raw_calls: list[Any], turn: int) -> tuple[ToolCall, ...]:
    calls = []
    for n, raw in enumerate(raw_calls, start=1):
        function = raw.get("function") or {}
        args, error = parse_args(function.get("arguments"))
        call_id = raw.get("id") or f"call_{turn}_{n}"
        calls.append(ToolCall(call_id, function.get("name") or "", args, error))
    return tuple(calls)


def _finish(raw: object, has_calls: bool) -> FinishReason:
    reason = _FINISH.get(raw, "stop") if isinstance(raw, str) else "stop"
    return "tool_use" if has_calls and reason == "stop" else reason


def _usage(data: dict[str, Any]) -> Usage | None:
    return usage_from(data, "prompt_eval_count", "eval_count")


def _line_shape_error(chunk: dict[str, Any], number: int) -> str | None:
    """What is wrong with stream line ``number`` (1-based), or ``None`` when it is /api/chat's shape."""
    keys = ", ".join(sorted(chunk)) or "none"
    message = chunk.get("message")
    if message is None:
        if chunk.get("done") is True:
            return None  # a final line may carry only the counts
        return f"stream line {number} has no 'message' object (keys: {keys}) — is base_url an Ollama /api/chat server?"
    if not isinstance(message, dict):
        return f"stream line {number}: 'message' is {type(message).__name__}, expected an object"
    if not isinstance(message.get("content", ""), str):
        return f"stream line {number}: 'message.content' is {type(message['content']).__name__}, expected a string"
    if not isinstance(message.get("tool_calls") or [], list):
        return f"stream line {number}: 'message.tool_calls' is {type(message['tool_calls']).__name__}, expected a list"
    return None


@attrs.frozen(kw_only=True)
class OllamaProvider(HTTPProvider):
    """Ollama's native ``/api/chat``; build it with :func:`ollama`."""

    #: the answer's shape is sent natively (``format``), not as an instruction
    structured_output = True
    #: ``format`` takes a schema or ``"json"``; no tool_choice field; streams with tools
    capabilities = Capabilities(json_schema=True, json_mode=True, tool_choice=False, stream_tools=True)

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = super()._headers(stream)
        if stream:
            headers["accept"] = "application/x-ndjson"
        return headers

    def _connect_hint(self) -> str:
        return f"is the server running at {self.base_url}? try 'ollama serve'"

    def _model_hint(self, model: str) -> str:
        return f"try 'ollama pull {model}'"

    def _not_found_hint(self) -> str:
        return "check base_url / OLLAMA_HOST: it should be the server root, without /api"

    @property
    def url(self) -> str:
        """The endpoint every request is posted to."""
        return f"{self.base_url}/api/chat"

    def decode(self, data: Any, turn: int = 0) -> LLMResponse:
        """A non-streamed ``/api/chat`` answer → :class:`LLMResponse`.

        ``turn`` (the number of messages sent) makes minted tool-call ids unique.
        """
        try:
            if "error" in data:
                raise self._server_error(self.url, f"error: {data['error']}")
            message = data["message"]
            calls = _tool_calls(message.get("tool_calls") or [], turn)
            return LLMResponse(
                content=message.get("content") or "",
                tool_calls=calls,
                usage=_usage(data),
                finish_reason=_finish(data.get("done_reason"), bool(calls)),
                model=data.get("model"),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise self._malformed(self.url, f"no message ({exc!r})") from None

    async def complete(self, req: LLMRequest) -> LLMResponse:
        """Send ``req`` and return the model's answer, with any retries recorded."""
        model = self._model_for(req)
        data, retries = await self._post(self.url, encode_request(req, model), model)
        return attrs.evolve(self.decode(data, len(req.messages)), retries=retries)

    async def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Send ``req`` with ``stream: true``; yield tokens, then the assembled response."""
        model = self._model_for(req)
        retries: list[RetryRecord] = []
        text: list[str] = []
        raw_calls: list[Any] = []
        final: dict[str, Any] = {}
        body = encode_request(req, model, stream=True)
        number = 0
        async with self._open(self.url, body, model, retries, stream=True) as response:
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                number += 1
                chunk = self._loads(self.url, line)
                if not isinstance(chunk, dict):
                    raise self._malformed(self.url, f"line is not an object: {line!r}")
                if "error" in chunk:
                    raise self._server_error(self.url, f"error: {chunk['error']}")
                problem = _line_shape_error(chunk, number)
                if problem is not None:
                    raise self._malformed(self.url, problem)
                message = chunk.get("message") or {}
                if message.get("content"):
                    yield Token(index=len(text), text=message["content"])
                    text.append(message["content"])
                raw_calls += message.get("tool_calls") or []
                if chunk.get("done"):
                    final = chunk
                    break
        if not number:  # 200 and nothing at all: the server cannot stream this request
            raise self._empty_stream(self.url, retries, bool(req.tools))
        if not final:
            raise self._cut_short(self.url, retries)
        calls = _tool_calls(raw_calls, len(req.messages))
        yield LLMResponse(
            content="".join(text),
            tool_calls=calls,
            usage=_usage(final),
            finish_reason=_finish(final.get("done_reason"), bool(calls)),
            model=final.get("model"),
            retries=tuple(retries),
        )


def ollama(
    model: str | None = None,
    base_url: str | None = None,
    *,
    timeout: float = 120.0,
    retry: RetryPolicy | None = None,
    sleep: Sleep = asyncio.sleep,
    name: str = "ollama",
) -> OllamaProvider:
    """A provider for a local Ollama server's native ``/api/chat``.

    ``base_url`` is used as given; it defaults to ``OLLAMA_HOST`` (``host``, ``host:port``
    or a URL; scheme defaults to http, port to 11434), then
    ``http://localhost:11434``. ``model``, when given, overrides the request's model.
    ``timeout`` defaults to 120 s because a first call may load the model from disk.
    """
    host = os.environ.get("OLLAMA_HOST")
    return OllamaProvider(
        name=name,
        base_url=base_url_from(
            base_url or (host_to_url(host) if host else None),
            default=DEFAULT_BASE_URL,
            what="ollama base_url",
        ),
        model=model,
        timeout=timeout,
        retry=retry or RetryPolicy(),
        sleep=sleep,
    )
