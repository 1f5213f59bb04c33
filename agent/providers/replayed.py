"""``replayed`` and ``replayed_tools``: a recorded run's world served back — its model replies and
its tool results — so the run can be run again on today's code without a model or a side effect.

Laws:
- The world is read from the RECORD alone (a ``Trace``, a trace file, a ``Record`` /
  ``ShownRecord``, a ``RunResult`` or a stored run), shown under the run's own rule: each
  ``call-llm`` commit is one recorded call — the request it was sent (the system prompt and the
  history as the state held them before the commit, and the model the run names) and the reply
  it wrote (``llm_latest_content``, ``llm_latest_tool_calls``, the usage added to the totals).
- A request is served the reply of the recorded request that is the SAME, compared canonically
  (sorted-key JSON of the system prompt, the messages, the model and the offer — the tools and
  answer shape the call was offered, ``llm_offer`` — today's request shown under
  the record's rule first, so a hidden field compares as hidden on both sides). Identical
  requests are served their replies in recorded order.
- A request the record does not hold: with ``on_new="fail"`` a ``ReplayMissError`` naming the
  first thing that differs from the recorded call at the same position (the system prompt, the
  model, or the first message, with both texts); with ``on_new="call"`` the ``fallback``
  provider answers, and the call is kept in ``new_calls`` (the run records it like any other).
- A replayed reply goes through the same untrusted-input checks as a reply from a server: the
  limits of ``flowchart._core.untrusted`` and the reply shape (content a string, each tool call
  ``{id, name, args}`` with unique ids); a record whose replies are hidden by its rule, or
  that holds no model call, is refused when the provider is made, naming the commit.
- Tools: ``replayed_tools(record, tools)`` gives each tool an ``execute`` that serves the
  recorded result for the same tool, the same args (canonical JSON) and the same position among
  that tool's calls with those args. A call the record does not hold is NEVER run for real —
  a replay has no business repeating side effects: the miss is the tool's error (the model reads
  it, the diff shows it) and is kept in ``misses``. A tool named in ``live=`` is today's code
  under test (a read-only lookup whose output format may have changed): it always runs for real
  and is never served from the record.
"""

from __future__ import annotations

import copy
import functools
import json
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from agent.providers.errors import ProviderConfigError, ProviderError
from agent.providers.scripted import _reply
from agent.providers.types import LLMRequest, LLMResponse, ToolCall, Usage, offer_of
from flowchart import CheckpointError, Commit, Redaction, ShownRecord
from flowchart.lowlevel import apply_commit, canonical_json, check_untrusted, copy_json, shown_of, thaw

__all__ = [
    "RecordedCall",
    "ReplayMissError",
    "ReplayedProvider",
    "ReplayedTools",
    "recorded_calls",
    "replayed",
    "replayed_tools",
]

CALL_LLM = "call-llm"
TOOL_CALLS = "tool-calls"
_SNIPPET = 80
#: ``canonical_json`` without making an encoder per call (the same text: sorted keys, no spaces)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


class ReplayMissError(ProviderError):
    """A replayed provider was sent a request its record does not hold (``on_new="fail"``)."""


# -- reading the record ----------------------------------------------------------------------------
def shown_record(source: Any) -> ShownRecord:
    """The shown record of ``source`` (a ``Trace``, a trace path, a ``Record``/``ShownRecord``, a
    ``RunResult``, an agent snapshot or a stored run)."""
    found = shown_of(source)
    if found is not None:
        return found
    raise TypeError(
        "replayed takes a Trace, a trace file path, a Record, a ShownRecord, a RunResult or a stored run, "
        f"got {type(source).__name__}"
    )


@attrs.frozen
class RecordedCall:
    """One recorded model call: where it is in the log, what it was sent, what it answered."""

    number: int
    idx: int
    runtime_stage_id: str
    request: dict[str, Any]
    """``{"system_prompt", "messages", "model", "offer"}`` as the record shows them (``offer``: the
    tools and answer shape the call offered, ``offer_of``; ``None`` in a record made before runs kept it)."""
    reply: dict[str, Any]
    """``{"content", "tool_calls"}`` as the record shows them."""
    usage: tuple[int, int] | None

    @property
    def key(self) -> str:
        """The canonical text requests are matched by."""
        request = self.request
        key = request_key(request["system_prompt"], request["messages"], request["model"], canonical_json)
        return key + _offer_digest(request["offer"])


def _offer_digest(offer: Any) -> str:
    """The part of a request's key its offer adds (nothing for a record that kept none)."""
    return "" if not isinstance(offer, dict) else "|" + str(offer.get("digest"))


def request_key(system_prompt: Any, messages: Sequence[Any], model: Any, text_of: Any) -> str:
    """The canonical text of a request: its system prompt, model and each message (``text_of``
    gives a message's canonical JSON), joined."""
    return _head(system_prompt, model) + "[" + ",".join([text_of(message) for message in messages]) + "]"


def _head(system_prompt: Any, model: Any) -> str:
    if (system_prompt is None or type(system_prompt) is str) and (model is None or type(model) is str):
        return _text_head(system_prompt, model)
    return canonical_json([system_prompt, model])


@functools.lru_cache(maxsize=64)
def _text_head(system_prompt: str | None, model: str | None) -> str:
    return canonical_json([system_prompt, model])


def _fold(shown: ShownRecord) -> Iterable[tuple[Commit, dict[str, Any], dict[str, Any]]]:
    state: dict[str, Any] = dict(shown.initial_state)
    for commit in shown.commits:
        before = dict(state)
        apply_commit(state, commit)
        yield commit, before, state


def _int(value: Any) -> int | None:
    return value if type(value) is int else None


def recorded_calls(source: Any) -> list[RecordedCall]:
    """Every model call the record holds, in order (see the module law)."""
    shown = shown_record(source)
    hides = shown.rule.hides
    calls: list[RecordedCall] = []
    model: Any = None
    for commit, before, after in _fold(shown):
        if commit.stage_id != CALL_LLM:
            continue
        recorded_model = after.get("llm_model")
        if isinstance(recorded_model, dict) and model is None:
            model = recorded_model.get("model")
        written = commit.written_keys
        usage = None
        if "total_input_tokens" in written:
            used_in = (_int(after.get("total_input_tokens")) or 0) - (_int(before.get("total_input_tokens")) or 0)
            used_out = (_int(after.get("total_output_tokens")) or 0) - (_int(before.get("total_output_tokens")) or 0)
            usage = (used_in, used_out)
        content, tool_calls = after.get("llm_latest_content"), after.get("llm_latest_tool_calls")
        if hides("llm_latest_content") or hides("llm_latest_tool_calls") or not isinstance(tool_calls, list):
            raise ProviderConfigError(
                f"replayed: the record of run {shown.run_id} hides the reply of model call {commit.runtime_stage_id} "
                "(llm_latest_content / llm_latest_tool_calls are redacted): a replay needs the replies — export "
                "the run under a rule that keeps them"
            )
        calls.append(
            RecordedCall(
                number=len(calls) + 1,
                idx=commit.idx,
                runtime_stage_id=commit.runtime_stage_id,
                request={
                    "system_prompt": thaw(before.get("system_prompt")),
                    "messages": thaw(before.get("history", [])),
                    "model": None,
                    "offer": thaw(after.get("llm_offer")),
                },
                reply={"content": thaw(content), "tool_calls": thaw(tool_calls)},
                usage=usage,
            )
        )
    if not calls:
        raise ProviderConfigError(
            f"replayed: the record of run {shown.run_id} holds no model call (no {CALL_LLM!r} commit): "
            "there is nothing to serve — is it an agent run?"
        )
    return [attrs.evolve(call, request={**call.request, "model": model}) for call in calls]


# -- the provider ----------------------------------------------------------------------------------
def _snippet(value: Any) -> str:
    text = value if isinstance(value, str) else canonical_json(value)
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= _SNIPPET else flat[: _SNIPPET - 1] + "…")


def _first_difference(recorded: dict[str, Any], now: dict[str, Any]) -> str:
    """The first thing ``now`` says differently from ``recorded``."""
    if recorded["model"] is not None and recorded["model"] != now["model"]:
        return f"the model differs: recorded {recorded['model']!r}, now {now['model']!r}"
    offered, offering = recorded.get("offer"), now.get("offer")
    if isinstance(offered, dict) and offering is not None and offered.get("digest") != offering["digest"]:
        if offered.get("tools") != offering["tools"]:
            return f"the tools offered differ: recorded {offered.get('tools')!r}, now {offering['tools']!r}"
        return "the tools' schemas or the answer's shape differ (the same tool names, another offer)"
    if recorded["system_prompt"] != now["system_prompt"]:
        return (
            f"the system prompt differs: recorded {_snippet(recorded['system_prompt'])}, "
            f"now {_snippet(now['system_prompt'])}"
        )
    old, new = recorded["messages"], now["messages"]
    for index in range(max(len(old), len(new))):
        a = old[index] if index < len(old) else None
        b = new[index] if index < len(new) else None
        if canonical_json(a) == canonical_json(b):
            continue
        role = (b or a or {}).get("role", "?") if isinstance(b or a, dict) else "?"
        if a is None:
            return f"message {index} ({role}) is new: {_snippet(b)}"
        if b is None:
            return f"message {index} ({role}) is missing: recorded {_snippet(a)}"
        for field in ("content", "tool_calls", "tool_call_id", "role"):
            if isinstance(a, dict) and isinstance(b, dict) and a.get(field) != b.get(field):
                return (
                    f"message {index} ({role}) differs in {field}: recorded {_snippet(a.get(field))}, "
                    f"now {_snippet(b.get(field))}"
                )
        return f"message {index} ({role}) differs: recorded {_snippet(a)}, now {_snippet(b)}"
    return "the request differs from the recorded one"


@attrs.define(eq=False)
class ReplayedProvider:
    """A provider serving a recorded run's replies (make it with ``replayed``)."""

    name: str
    run_id: str
    calls: tuple[RecordedCall, ...]
    rule: Redaction
    on_new: Literal["fail", "call"] = "fail"
    fallback: Any = None
    served: list[RecordedCall] = attrs.field(factory=list)
    """The recorded calls served, in order."""
    new_calls: list[tuple[LLMRequest, Any]] = attrs.field(factory=list)
    """The requests the record did not hold that ``fallback`` answered (``on_new="call"``)."""
    _queues: dict[str, deque[RecordedCall]] = attrs.field(factory=dict, repr=False)
    _asked: int = attrs.field(default=0, repr=False)

    _hides: bool = attrs.field(default=False, repr=False)
    _offers: bool = attrs.field(default=False, repr=False)
    _replies: dict[int, LLMResponse] = attrs.field(factory=dict, repr=False)
    _texts: dict[int, tuple[Any, str]] = attrs.field(factory=dict, repr=False)

    def __attrs_post_init__(self) -> None:
        self._hides = self.rule.active
        self._offers = any(isinstance(call.request["offer"], dict) for call in self.calls)
        for call in self.calls:
            self._queues.setdefault(call.key, deque()).append(call)
            self._replies[call.number] = _served(call)  # checked once, when the record is read

    def _text_of(self, message: Any) -> str:
        """A message's canonical JSON, made once per message object (a history shares its
        messages from call to call; the object is held, so its id is never reused meanwhile)."""
        held = self._texts.get(id(message))
        if held is not None and held[0] is message:
            return held[1]
        text = _CANONICAL(message)
        self._texts[id(message)] = (message, text)
        return text

    def _shown(self, req: LLMRequest) -> dict[str, Any]:
        offer = offer_of(req) if self._offers else None
        if not self._hides:  # nothing to hide: the request's own values (read, never changed)
            return {"system_prompt": req.system_prompt, "messages": req.messages, "model": req.model, "offer": offer}
        seen = self.rule.scrub_state({"system_prompt": req.system_prompt, "history": thaw(list(req.messages))})
        return {"system_prompt": seen["system_prompt"], "messages": seen["history"], "model": req.model, "offer": offer}

    def complete(self, req: LLMRequest) -> Any:
        """The recorded reply to ``req``; a miss fails or goes to ``fallback`` (see the module law)."""
        position = self._asked
        self._asked += 1
        now = self._shown(req)
        model = None if self.calls[0].request["model"] is None else now["model"]
        key = request_key(now["system_prompt"], now["messages"], model, self._text_of) + _offer_digest(now["offer"])
        queue = self._queues.get(key)
        if queue:
            call = queue.popleft()
            self.served.append(call)
            return _fresh(self._replies[call.number])
        if self.on_new == "call":
            answer = self.fallback.complete(req)
            self.new_calls.append((req, answer))
            return answer
        if position >= len(self.calls):
            why = f"the record holds {len(self.calls)} model calls and this is call {position + 1}"
        else:
            recorded = self.calls[position]
            why = f"against recorded call {recorded.number} ({recorded.runtime_stage_id}): " + _first_difference(
                recorded.request, now
            )
        raise ReplayMissError(
            f"replayed: request {position + 1} is not in the record of run {self.run_id}: {why} "
            "(replayed(..., on_new='call', fallback=provider) answers it live instead)"
        )


def _fresh(reply: LLMResponse) -> LLMResponse:
    """A response of its own for each serving (the tool calls' args copied: a run may keep them)."""
    calls = tuple(ToolCall(c.id, c.name, copy_json(c.args)) for c in reply.tool_calls) if reply.tool_calls else ()
    return LLMResponse(content=reply.content, tool_calls=calls, usage=reply.usage, finish_reason=reply.finish_reason)


def _served(call: RecordedCall) -> LLMResponse:
    """The recorded reply, through the untrusted-input checks a server's reply goes through."""
    reply = copy.deepcopy(call.reply)
    try:
        check_untrusted(reply, what=f"replayed reply of {call.runtime_stage_id}")
    except CheckpointError as exc:
        raise ReplayMissError(f"replayed: {exc}") from None
    shaped = _reply(reply, call.number)
    usage = Usage(*call.usage) if call.usage is not None else None
    calls: tuple[ToolCall, ...] = shaped.tool_calls
    return LLMResponse(
        content=shaped.content,
        tool_calls=calls,
        usage=usage,
        finish_reason="tool_use" if calls else "stop",
    )


def replayed(
    trace_or_record: Any,
    on_new: Literal["fail", "call"] = "fail",
    fallback: Any = None,
) -> ReplayedProvider:
    """A provider serving the recorded replies of ``trace_or_record`` (see the module law)."""
    if on_new not in ("fail", "call"):
        raise ProviderConfigError(f"replayed: on_new must be 'fail' or 'call', got {on_new!r}")
    if on_new == "call" and (fallback is None or not callable(getattr(fallback, "complete", None))):
        raise ProviderConfigError("replayed: on_new='call' needs fallback=<a provider> to answer what the record lacks")
    shown = shown_record(trace_or_record)
    calls = recorded_calls(shown)
    final = shown.final_state.get("llm_model")
    name = str(final.get("provider")) if isinstance(final, dict) and final.get("provider") else "replayed"
    return ReplayedProvider(name, shown.run_id, tuple(calls), shown.rule, on_new, fallback)


# -- tools -----------------------------------------------------------------------------------------
def recorded_results(source: Any) -> dict[tuple[str, str], list[str]]:
    """Each recorded tool result, by ``(tool name, canonical args)``, in call order."""
    shown = shown_record(source)
    results: dict[tuple[str, str], list[str]] = {}
    asked: dict[str, tuple[str, str]] = {}  # call id → (tool, args): a resumed call's result comes later
    for commit, _before, after in _fold(shown):
        if commit.stage_id != TOOL_CALLS:
            continue
        history = after.get("history")
        if not isinstance(history, list):
            continue
        added = [op for op in commit.trace if op.path == ("history",) and op.verb == "append"]
        messages = [thaw(m) for op in added for m in (op.value or [])]
        for message in messages:
            if not isinstance(message, dict):
                continue
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict):
                    asked[str(call.get("id"))] = (str(call.get("name")), canonical_json(call.get("args")))
            if message.get("role") == "tool":
                where = asked.get(str(message.get("tool_call_id")))
                if where is not None:
                    results.setdefault(where, []).append(str(message.get("content")))
    return results


@attrs.define(eq=False)
class ReplayedTools:
    """Tools serving a recorded run's results (make them with ``replayed_tools``): ``tools`` is
    the list to hand the agent; ``misses`` the calls the record did not hold."""

    tools: list[Any]
    served: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)
    misses: list[tuple[str, dict[str, Any]]] = attrs.field(factory=list)

    def __iter__(self) -> Any:
        return iter(self.tools)

    def __len__(self) -> int:
        return len(self.tools)


def replayed_tools(trace_or_record: Any, tools: Sequence[Any], *, live: Iterable[str] = ()) -> ReplayedTools:
    """``tools`` with each ``execute`` serving the recorded result (see the module law); a tool
    named in ``live`` runs for real, as today's code."""
    results = recorded_results(trace_or_record)
    let_run = set(live)
    known = {str(getattr(tool, "name", "")) for tool in tools}
    unknown = sorted(let_run - known)
    if unknown:
        raise ValueError(f"replayed_tools: live= names {unknown}, which are not among the tools {sorted(known)}")
    box = ReplayedTools([])
    positions: dict[tuple[str, str], int] = {}

    def serving(tool: Any) -> Any:
        real = tool.execute

        def execute(args: dict[str, Any], ctx: Any) -> Any:
            if tool.name in let_run:
                return real(args, ctx)
            where = (tool.name, canonical_json(args))
            n = positions.get(where, 0)
            recorded = results.get(where, [])
            if n < len(recorded):
                positions[where] = n + 1
                box.served.append((tool.name, args))
                return recorded[n]
            box.misses.append((tool.name, args))
            held = len(recorded)
            raise LookupError(
                f"replayed: {tool.name}({canonical_json(args)}) call {n + 1} is not in the record "
                f"(it holds {held} such call{'s' if held != 1 else ''}); a replay never runs a tool for real "
                f"unless told: replayed_tools(..., live=[{tool.name!r}]) runs it as today's code"
            )

        return attrs.evolve(tool, execute=execute, is_async=False, retry=None)

    box.tools = [serving(tool) for tool in tools]
    return box
