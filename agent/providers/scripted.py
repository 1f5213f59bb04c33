"""The scripted and mock providers: deterministic models for tests, demos and benchmarks.

Law of this file: a scripted provider plays its replies by the conversation's position —
a request already holding *n* assistant turns gets reply *n+1* — records every request it
receives, and never invents an answer: running out of replies is an error that says how
many were scripted and which request (the conversation's, 1-based) asked for more.
Answering by position (not by how many times this object was called) means a freshly
built agent resuming a stored run — the CLI, the inbox, a Celery worker — continues the
script where the run is, and each turn of a conversation (whose history holds the
earlier answers) continues it too. One reply the agent drops from the history is still a
turn played: a request that extends the previous request this object answered, at the
same position (the wrap-up the agent asks for once ``max_iterations`` is spent, after a
reply whose calls it will not run), gets the reply after the one played for it.
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

_REPLY_KEYS = ("content", "tool_calls")
_CALL_KEYS = ("id", "name", "args")
# Split before every word that follows whitespace: the pieces join back to the exact text.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")


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
    # (position, index played) for the last request: a request extending it at the same position
    # is the turn after a reply the agent dropped from its history (the wrap-up)
    _last: tuple[int, int] = attrs.field(default=(-1, -1), repr=False, alias="_last")

    def complete(self, req: LLMRequest) -> LLMResponse:
        """Record ``req`` and return the reply for its position, synchronously.

        A request holding *n* assistant turns gets reply *n+1*. Raises
        :class:`ScriptExhaustedError` when the script has no reply for that position.
        """
        messages = req.messages
        position = 0
        for message in messages:  # a loop, not a generator: this is the benchmark's hot path
            if message.get("role") == "assistant":
                position += 1
        number = position + 1
        last_position, last_index = self._last
        if position == last_position and self.requests:
            previous = self.requests[-1].messages
            if len(messages) > len(previous) and messages[: len(previous)] == previous:
                number = last_index + 2
        self.requests.append(req)
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
        self._last = (position, number - 1)
        template = self.replies[index]
        if index in self.verbatim:
            return template
        # the template with this request's usage and model: ``attrs.evolve`` spelled out, the slots
        # filled directly (the template's finish_reason passed the validator when it was scripted)
        usage = Usage(_input_tokens(req), template.usage.output_tokens if template.usage else 0)
        played = LLMResponse(
            content=template.content,
            tool_calls=template.tool_calls,
            usage=usage,
            finish_reason=template.finish_reason,
            model=req.model,
            retries=template.retries,
        )
        return played

    async def stream(self, req: LLMRequest) -> AsyncIterator[StreamEvent]:
        """Like :meth:`complete`, but yield the content word by word, then the response."""
        response = self.complete(req)
        pieces = [p for p in _WORD_BOUNDARY.split(response.content) if p]
        for index, piece in enumerate(pieces):
            yield Token(index=index, text=piece)
        yield response


def scripted(replies: Sequence[str | Mapping[str, Any] | LLMResponse]) -> ScriptedProvider:
    """A provider answering a request holding *n* assistant turns with ``replies[n]``.

    The script is checked up front. The position is the conversation's, not this object's
    call count: a fresh agent resuming a paused run after two model replies gets
    ``replies[2]``, and a conversation's second turn continues after the first's answer.

    Each reply is a string (the model's text), a dict
    ``{"content": str, "tool_calls": [{"id": str, "name": str, "args": dict}]}`` (both
    keys optional; ``finish_reason`` is ``tool_use`` when calls are present, else
    ``stop``), or an :class:`LLMResponse` played verbatim. A malformed reply raises
    :class:`ScriptError` naming it (``reply #2``, 1-based). A request past the last
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
