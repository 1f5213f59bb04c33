"""Anthropic Messages API: ``POST {base_url}/v1/messages``.

Law of this file: an :class:`LLMRequest` becomes exactly one Messages body, and the
answer (JSON or server-sent events) becomes exactly one :class:`LLMResponse`:

- the system prompt travels top-level as ``system``; ``role: "system"`` messages in the
  history are appended to it (blank line between), since Messages has no system role
  (agentfootprint drops them; we keep what the agent wrote);
- assistant turns that called tools become content blocks: a ``text`` block when the
  turn has text, then one ``tool_use`` block ``{"id", "name", "input"}`` per call;
- consecutive tool results coalesce into ONE ``user`` message of ``tool_result`` blocks
  ``{"tool_use_id", "content"}``; a user message right after them joins that message as
  a ``text`` block, so roles always alternate;
- tools as ``{"name", "description", "input_schema"}``;
- ``max_tokens`` is required by the API: the request's, else the provider's default;
- an output schema as one more tool, ``{"name": <schema name>, "description",
  "input_schema": <schema>}``, that the model must call: ``tool_choice`` ``{"type": "tool",
  "name"}`` when it is the only tool, ``{"type": "any"}`` when the agent's tools are offered
  too (the model calls a tool or answers). The answer tool's input, as JSON, is the reply's
  ``content`` — it is not a tool call;
- headers ``x-api-key`` and ``anthropic-version``;
- answer: text blocks joined, ``tool_use`` blocks → tool calls; ``end_turn`` and
  ``stop_sequence`` → ``stop``, ``tool_use``, ``max_tokens``, ``refusal`` →
  ``content_filter``; usage from ``input_tokens`` / ``output_tokens``.
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
ANSWER_TOOL_DESCRIPTION = "Give your final answer: its input is the answer, in the required shape."

_FINISH: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "refusal": "content_filter",
}


def _system(req: LLMRequest) -> str | None:
    parts = [req.system_prompt] if req.system_prompt else []
    parts += [m.get("content") or "" for m in req.messages if m["role"] == "system"]
    return "\n\n".join(parts) if parts else None


def encode_messages(req: LLMRequest) -> list[dict[str, Any]]:
    """History messages in Messages shape (system messages excluded: see ``system``)."""
    out: list[dict[str, Any]] = []
    for message in req.messages:
        role, content = message["role"], message.get("content") or ""
        last = out[-1] if out else None
        # The open tool-result message: a list-content user message built just before.
        joinable = last is not None and last["role"] == "user" and isinstance(last["content"], list)
        if role == "system":
            continue
        if role == "tool":
            block = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": content,
            }
            if joinable and last is not None:
                last["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif role == "assistant" and message.get("tool_calls"):
            blocks: list[dict[str, Any]] = [{"type": "text", "text": content}] if content else []
            blocks += [
                {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c.get("args") or {}}
                for c in message["tool_calls"]
            ]
            out.append({"role": "assistant", "content": blocks})
        elif role == "user" and joinable and last is not None:
            last["content"].append({"type": "text", "text": content})
        else:
            out.append({"role": role, "content": content})
    return out


def encode_request(req: LLMRequest, model: str, max_tokens: int, *, stream: bool = False) -> dict[str, Any]:
    """The exact JSON body sent to ``/v1/messages``."""
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": req.max_tokens if req.max_tokens is not None else max_tokens,
        "messages": encode_messages(req),
    }
    system = _system(req)
    if system is not None:
        body["system"] = system
    if req.tools:
        body["tools"] = [
            {
                "name": t["name"],
                "description": t.get("description", ""),
                "input_schema": t.get("input_schema") or {"type": "object"},
            }
            for t in req.tools
        ]
    if req.output_schema is not None:
        wanted = req.output_schema
        answer_tool = {"name": wanted.name, "description": ANSWER_TOOL_DESCRIPTION, "input_schema": wanted.schema}
        body["tools"] = [*body.get("tools", []), answer_tool]
        body["tool_choice"] = {"type": "any"} if req.tools else {"type": "tool", "name": wanted.name}
    if req.temperature is not None:
        body["temperature"] = req.temperature
    if stream:
        body["stream"] = True
    return body


def _finish(raw: object, has_calls: bool) -> FinishReason:
    reason = _FINISH.get(raw, "stop") if isinstance(raw, str) else "stop"
    return "tool_use" if has_calls and reason == "stop" else reason


def _answer_name(req: LLMRequest) -> str | None:
    return req.output_schema.name if req.output_schema is not None else None


def _is_answer(block: dict[str, Any], answer_tool: str | None) -> bool:
    return answer_tool is not None and block.get("name") == answer_tool


def _answer_text(raw: Any) -> str:
    """The answer tool's input as the reply's text (JSON; a streamed input as it arrived)."""
    return raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)


def _tool_call(block: dict[str, Any]) -> ToolCall:
    args, error = parse_args(block.get("input"))
    return ToolCall(id=block.get("id") or "", name=block.get("name") or "", args=args, args_error=error)


@attrs.frozen(kw_only=True)
class AnthropicProvider(HTTPProvider):
    """The Anthropic Messages API; build it with :func:`anthropic`."""

    #: the answer's shape is sent natively (a forced answer tool), not as an instruction
    structured_output = True
    #: a forced tool carries the schema; the Messages API has no JSON mode; this provider sends no
    #: tool_choice of the caller's; streams with tools
    capabilities = Capabilities(json_schema=True, json_mode=False, tool_choice=False, stream_tools=True)

    max_tokens: int = DEFAULT_MAX_TOKENS
    version: str = ANTHROPIC_VERSION

    def _headers(self, stream: bool) -> dict[str, str]:
        headers = super()._headers(stream)
        if self.api_key is not None:
            headers["x-api-key"] = self.api_key.reveal()
        headers["anthropic-version"] = self.version
        return headers

    def _connect_hint(self) -> str:
        return f"is {self.base_url} reachable? check your network and base_url"

    def _auth_hint(self) -> str:
        return "check the API key (api_key= or ANTHROPIC_API_KEY)"

    def _not_found_hint(self) -> str:
        return "check base_url: it should not include /v1"

    @property
    def url(self) -> str:
        """The endpoint every request is posted to."""
        return f"{self.base_url}/v1/messages"

    def decode(self, data: Any, answer_tool: str | None = None) -> LLMResponse:
        """A non-streamed Messages answer → :class:`LLMResponse` (``answer_tool``: the output schema's tool)."""
        try:
            blocks = data["content"]
            uses = [b for b in blocks if b.get("type") == "tool_use"]
            answers = [_answer_text(b.get("input")) for b in uses if _is_answer(b, answer_tool)]
            text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
            text = answers[-1] if answers else text
            calls = tuple(_tool_call(b) for b in uses if not _is_answer(b, answer_tool))
            return LLMResponse(
                content=text,
                tool_calls=calls,
                usage=_with_cache(usage_from(data.get("usage"), "input_tokens", "output_tokens"), data.get("usage")),
                finish_reason=_finish(data.get("stop_reason"), bool(calls)),
                model=data.get("model"),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise self._malformed(self.url, f"no content blocks ({exc!r})") from None

    async def complete(self, req: LLMRequest) -> LLMResponse:
        """Send ``req`` and return the model's answer, with any retries recorded."""
        model = self._model_for(req)
        body = encode_request(req, model, self.max_tokens)
        data, retries = await self._post(self.url, body, model)
        return attrs.evolve(self.decode(data, _answer_name(req)), retries=retries)

    async def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Send ``req`` with ``stream: true``; yield tokens, then the assembled response."""
        model = self._model_for(req)
        body = encode_request(req, model, self.max_tokens, stream=True)
        retries: list[RetryRecord] = []
        text: list[str] = []
        blocks: dict[int, dict[str, Any]] = {}  # tool_use blocks by content index
        tokens_in: int | None = None
        started_usage: Any = None
        tokens_out: int | None = None
        reason, answered_by, done, events = None, None, False, 0
        async with self._open(self.url, body, model, retries, stream=True) as response:
            async for _event, data in sse_events(response.aiter_lines()):
                events += 1
                event = self._loads(self.url, data)
                kind = event.get("type") if isinstance(event, dict) else None
                if kind == "error":
                    detail = json.dumps(event.get("error"))
                    raise self._server_error(self.url, f"stream error: {detail}")
                if kind == "message_start":
                    message = event.get("message") or {}
                    answered_by = message.get("model")
                    usage = message.get("usage") or {}
                    started_usage = usage
                    tokens_in = _count(usage.get("input_tokens"), tokens_in)
                    tokens_out = _count(usage.get("output_tokens"), tokens_out)
                elif kind == "content_block_start":
                    block = event.get("content_block") or {}
                    if block.get("type") == "tool_use":
                        blocks[event.get("index", len(blocks))] = {**block, "json": ""}
                elif kind == "content_block_delta":
                    delta = event.get("delta") or {}
                    if delta.get("type") == "text_delta" and delta.get("text"):
                        yield Token(index=len(text), text=delta["text"])
                        text.append(delta["text"])
                    elif delta.get("type") == "input_json_delta":
                        open_block = blocks.get(event.get("index", -1))
                        if open_block is None:
                            raise self._malformed(self.url, f"json delta for no tool_use: {data}")
                        open_block["json"] += delta.get("partial_json", "")
                        if _is_answer(open_block, _answer_name(req)) and delta.get("partial_json"):
                            # the answer is the reply's text: a UI streams it like text
                            yield Token(index=len(text), text=delta["partial_json"])
                            text.append(delta["partial_json"])
                elif kind == "message_delta":
                    reason = (event.get("delta") or {}).get("stop_reason") or reason
                    usage = event.get("usage") or {}
                    tokens_out = _count(usage.get("output_tokens"), tokens_out)
                elif kind == "message_stop":
                    done = True
                    break
        if not events:  # 200 and nothing at all: the server cannot stream this request
            raise self._empty_stream(self.url, retries, bool(req.tools))
        if not done:
            raise self._cut_short(self.url, retries)
        answer_tool = _answer_name(req)
        ordered = [b for _, b in sorted(blocks.items())]
        answers = [_answer_text(b["json"] or b.get("input")) for b in ordered if _is_answer(b, answer_tool)]
        calls = tuple(
            _tool_call({**b, "input": b["json"] or b.get("input")}) for b in ordered if not _is_answer(b, answer_tool)
        )
        yield LLMResponse(
            content=answers[-1] if answers else "".join(text),
            tool_calls=calls,
            usage=None
            if tokens_in is None or tokens_out is None
            else _with_cache(Usage(tokens_in, tokens_out), started_usage),
            finish_reason=_finish(reason, bool(calls)),
            model=answered_by,
            retries=tuple(retries),
        )


def _count(raw: object, known: int | None) -> int | None:
    """A token count from a stream event; one that is not a count keeps what was known."""
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else known


def anthropic(
    api_key: str | None = None,
    base_url: str | None = None,
    model: str | None = None,
    *,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    timeout: float = 60.0,
    retry: RetryPolicy | None = None,
    sleep: Sleep = asyncio.sleep,
    name: str = "anthropic",
) -> AnthropicProvider:
    """A provider for the Anthropic Messages API.

    ``api_key`` defaults to ``ANTHROPIC_API_KEY`` and is required (a
    :class:`ProviderConfigError` says so); ``base_url`` to ``ANTHROPIC_BASE_URL``, then
    ``https://api.anthropic.com``. ``model``, when given, overrides the request's model.
    ``max_tokens`` is sent when the request sets none. ``timeout``, ``retry`` and
    ``sleep`` as for :func:`openai_compatible`.
    """
    key = api_key or os.environ.get("ANTHROPIC_API_KEY")
    if not key:
        raise ProviderConfigError("anthropic: no API key; pass api_key=... or set ANTHROPIC_API_KEY")
    return AnthropicProvider(
        name=name,
        base_url=base_url_from(
            base_url or os.environ.get("ANTHROPIC_BASE_URL"),
            default=DEFAULT_BASE_URL,
            what="anthropic base_url",
        ),
        model=model,
        api_key=secret_from(key),
        max_tokens=max_tokens,
        timeout=timeout,
        retry=retry or RetryPolicy(),
        sleep=sleep,
    )


def _with_cache(usage: Usage | None, raw: Any) -> Usage | None:
    """``usage`` counting the prompt tokens Anthropic reports apart — ``cache_read_input_tokens`` and
    ``cache_creation_input_tokens`` are not in its ``input_tokens`` — with the cache reads as
    ``cached_input_tokens``; as it was when the server sent neither."""
    if usage is None or not isinstance(raw, dict):
        return usage
    read, made = raw.get("cache_read_input_tokens"), raw.get("cache_creation_input_tokens")
    counts = [n for n in (read, made) if isinstance(n, int) and not isinstance(n, bool) and n >= 0]
    if not counts:
        return usage
    cached = read if isinstance(read, int) and not isinstance(read, bool) and read >= 0 else None
    return Usage(usage.input_tokens + sum(counts), usage.output_tokens, cached, None)
