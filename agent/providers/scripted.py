"""The scripted and mock providers: deterministic models for tests, demos and benchmarks.

Law of this file: a scripted provider plays its replies in order, one per request,
records every request it receives, and never invents an answer — running out of
replies is an error that says how many were scripted and which request asked for more.
Both providers answer synchronously (``complete`` returns an :class:`LLMResponse`, not
an awaitable) and never touch the network, so an agent on them is offline and
byte-for-byte repeatable.

Usage is estimated as characters / 4 with integer division (floor):
``input_tokens = (len(system_prompt) + Σ len(message["content"])) // 4`` and
``output_tokens = len(content) // 4``. (agentfootprint's MockProvider rounds up; we round
down and say so.) A reply given as an :class:`LLMResponse` keeps its own usage.
"""

from __future__ import annotations

import copy
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import attrs

from agent.providers.errors import ScriptError, ScriptExhaustedError
from agent.providers.types import LLMRequest, LLMResponse, StreamEvent, Token, ToolCall, Usage
from flowchart.lowlevel import slot_setters

_REPLY_KEYS = ("content", "tool_calls")
_CALL_KEYS = ("id", "name", "args")
# Split before every word that follows whitespace: the pieces join back to the exact text.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")


# the slots' own setters (``flowchart.lowlevel.slot_setters``): a played reply is made without
# attrs' frozen ``__init__`` — the same value as the class call (tests/providers/test_scripted.py)
_new = object.__new__
_USAGE_IN, _USAGE_OUT, _USAGE_CACHED, _USAGE_REASONING = slot_setters(Usage)
_CONTENT, _CALLS, _USAGE, _FINISH, _MODEL, _RETRIES = slot_setters(LLMResponse)


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(repr(k) for k in keys)


def _tool_call(raw: object, where: str) -> ToolCall:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where} must be a dict {{'id', 'name', 'args'}}, got {type(raw).__name__}")
    unknown = [k for k in raw if k not in _CALL_KEYS]
    if unknown:
        raise ScriptError(f"{where} has unknown key {_keys(unknown)}; allowed keys: {_keys(_CALL_KEYS)}")
    for key in ("id", "name"):
        value = raw.get(key)
        if not isinstance(value, str) or not value:
            raise ScriptError(f"{where} needs {key!r}: a non-empty string, got {value!r}")
    args = raw.get("args", {})
    if not isinstance(args, Mapping):
        raise ScriptError(f"{where} 'args' must be a dict, got {type(args).__name__}")
    # Deep-copied once here, so later edits to the caller's script cannot leak into a run.
    return ToolCall(id=raw["id"], name=raw["name"], args=copy.deepcopy(dict(args)))


def _reply(raw: object, number: int) -> LLMResponse:
    """Validate one reply (1-based ``number``) and turn it into a response template."""
    where = f"scripted: reply #{number}"
    if isinstance(raw, LLMResponse):
        return raw
    if isinstance(raw, str):
        return LLMResponse(content=raw, usage=Usage(0, len(raw) // 4))
    if not isinstance(raw, Mapping):
        raise ScriptError(
            f"{where} must be a string, a dict {{'content', 'tool_calls'}} or an LLMResponse, got {type(raw).__name__}"
        )
    unknown = [k for k in raw if k not in _REPLY_KEYS]
    if unknown:
        raise ScriptError(f"{where} has unknown key {_keys(unknown)}; allowed keys: {_keys(_REPLY_KEYS)}")
    content = raw.get("content", "")
    if not isinstance(content, str):
        raise ScriptError(f"{where} 'content' must be a string, got {type(content).__name__}")
    raw_calls = raw.get("tool_calls", [])
    if isinstance(raw_calls, str | bytes) or not isinstance(raw_calls, Sequence):
        raise ScriptError(f"{where} 'tool_calls' must be a list, got {type(raw_calls).__name__}")
    calls = tuple(_tool_call(call, f"{where} tool_calls[{i}]") for i, call in enumerate(raw_calls))
    ids = [c.id for c in calls]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ScriptError(f"{where} repeats tool call id {_keys(duplicates)}; ids must be unique")
    return LLMResponse(
        content=content,
        tool_calls=calls,
        usage=Usage(0, len(content) // 4),
        finish_reason="tool_use" if calls else "stop",
    )


def _input_tokens(req: LLMRequest) -> int:
    chars = len(req.system_prompt or "")
    for message in req.messages:
        chars += len(message.get("content") or "")
    return chars // 4


@attrs.define(eq=False)
class ScriptedProvider:
    """A provider playing a fixed list of replies; build it with :func:`scripted` / :func:`mock`.

    ``requests`` lists every :class:`LLMRequest` received, in order — including the one
    that found the script exhausted. With ``repeat=True`` the last reply is played
    forever (that is :func:`mock`).
    """

    name: str
    replies: tuple[LLMResponse, ...]
    repeat: bool = False
    requests: list[LLMRequest] = attrs.field(factory=list)
    # Which replies were given as LLMResponse objects: those are played verbatim.
    verbatim: frozenset[int] = attrs.field(default=frozenset(), repr=False)

    def complete(self, req: LLMRequest) -> LLMResponse:
        """Record ``req`` and return the next reply, synchronously.

        Raises :class:`ScriptExhaustedError` when every reply has been played.
        """
        self.requests.append(req)
        number = len(self.requests)
        if number <= len(self.replies):
            index = number - 1
        elif self.repeat and self.replies:
            index = len(self.replies) - 1
        else:
            count = len(self.replies)
            raise ScriptExhaustedError(
                f"{self.name} provider exhausted: {count} "
                f"{'reply was' if count == 1 else 'replies were'} scripted "
                f"but request #{number} asked for another; add a reply to the script",
                provider=self.name,
            )
        template = self.replies[index]
        if index in self.verbatim:
            return template
        # the template with this request's usage and model: ``attrs.evolve`` spelled out, the slots
        # filled directly (the template's finish_reason passed the validator when it was scripted)
        usage = _new(Usage)
        _USAGE_IN(usage, _input_tokens(req))
        _USAGE_OUT(usage, template.usage.output_tokens if template.usage else 0)
        _USAGE_CACHED(usage, None)  # a script reports no cache nor reasoning: unknown, not 0
        _USAGE_REASONING(usage, None)
        played = _new(LLMResponse)
        _CONTENT(played, template.content)
        _CALLS(played, template.tool_calls)
        _USAGE(played, usage)
        _FINISH(played, template.finish_reason)
        _MODEL(played, req.model)
        _RETRIES(played, template.retries)
        return played

    async def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Like :meth:`complete`, but yield the content word by word, then the response."""
        response = self.complete(req)
        pieces = [p for p in _WORD_BOUNDARY.split(response.content) if p]
        for index, piece in enumerate(pieces):
            yield Token(index=index, text=piece)
        yield response


def scripted(replies: Sequence[str | Mapping[str, Any] | LLMResponse]) -> ScriptedProvider:
    """A provider answering request *n* with ``replies[n-1]``; the script is checked up front.

    Each reply is a string (the model's text), a dict
    ``{"content": str, "tool_calls": [{"id": str, "name": str, "args": dict}]}`` (both
    keys optional; ``finish_reason`` is ``tool_use`` when calls are present, else
    ``stop``), or an :class:`LLMResponse` played verbatim. A malformed reply raises
    :class:`ScriptError` naming it (``reply #2``, 1-based). A request beyond the last
    reply raises :class:`ScriptExhaustedError`.
    """
    if isinstance(replies, str | bytes | Mapping) or not isinstance(replies, Sequence):
        raise ScriptError(
            f"scripted() takes a list of replies, got {type(replies).__name__}; "
            f"wrap a single reply in a list: scripted([...])"
        )
    return ScriptedProvider(
        name="scripted",
        replies=tuple(_reply(raw, i) for i, raw in enumerate(replies, start=1)),
        verbatim=frozenset(i for i, raw in enumerate(replies) if isinstance(raw, LLMResponse)),
    )


def mock(reply: str = "text") -> ScriptedProvider:
    """A provider that answers every request with the same text ``reply``.

    It records ``requests`` like :func:`scripted` and never runs out.
    """
    if not isinstance(reply, str):
        raise ScriptError(f"mock(reply=...) must be a string, got {type(reply).__name__}")
    return ScriptedProvider(name="mock", replies=(_reply(reply, 1),), repeat=True)
