"""What an agent is told besides the conversation: injected facts, steering, instructions,
skills, RAG chunks and recalled memory — decided, recorded and placed before each model call.

Laws:
- Injected text goes into the SYSTEM slot of the one request it was decided for (after the
  system prompt, under a ``## Context`` heading) — never into the user's message, never
  into ``history``: a later turn of the conversation does not inherit it, and the next
  model call decides its own context again.
- Every model call of an agent with context sets ``context_injected`` (one row per
  injection sent: ``kind``, ``slot``, ``trigger``, ``text`` and where it came from — a
  memory item's ``id``, ``namespace`` and ``origin``, a chunk's ``source``) in its
  call-llm commit (a commit changes it only when it differs from the previous call's), so
  the state at a call's commit names exactly what that call was sent; what was available
  but not sent (under ``min_score``, past ``k``, the next two memory items past ``recall``, a
  trigger that did not fire) is in
  ``context_dropped`` with the reason. Without context configured nothing is written.
- A retriever that raises or returns something that is not text is a recorded failure
  (a ``context_injected`` row of kind ``"error"``) whose message the model is told, like
  a tool error — never a crashed run. A ``when=`` rule that reads a key the agent's state
  does not hold is an ``InjectionError`` naming the injection and the key.
- Memory text comes back from its store checked (``agent.memory.items.read_row``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from agent._chart.state import CONTEXT_DROPPED, CONTEXT_INJECTED, IDENTITY, LLM_LATEST_TOOL_CALLS, USER_MESSAGE
from agent.errors import AgentError
from flowchart import Scope
from flowchart.lowlevel import json_type, peek

__all__ = [
    "CONTEXT_DROPPED",
    "CONTEXT_INJECTED",
    "Injection",
    "InjectionError",
    "Trigger",
    "default_namespace",
    "plan_context",
]

Kind = Literal["fact", "steering", "instruction", "skill", "rag", "memory"]
_PAST_RECALL = 2  # memory items searched past recall=k, recorded as dropped
_MAX_CHUNK = 16_000  # characters of one retrieved chunk kept (longer chunks are cut, the cut recorded)


class InjectionError(AgentError, KeyError):
    """An injection's ``when=`` rule read a state key the agent's state does not hold."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


@attrs.frozen
class Trigger:
    """When an injection fires: ``always``; ``tool`` (the model call right after the named
    tool returned); or ``rule`` (``fn(state) -> bool`` over the agent's state)."""

    kind: Literal["always", "tool", "rule"] = "always"
    tool: str | None = None
    rule: Callable[[Any], Any] | None = None

    @property
    def label(self) -> str:
        """How the record names it: ``always``, ``on tool 'lookup'``, ``rule <name>``."""
        if self.kind == "tool":
            return f"on tool '{self.tool}'"
        if self.kind == "rule":
            return f"rule {getattr(self.rule, '__name__', 'when')}"
        return "always"


def trigger_of(when: Any, owner: str) -> Trigger:
    """``when=`` as a ``Trigger``: ``None``/``"always"``, ``"tool:NAME"``, or a callable."""
    if when is None or when == "always":
        return Trigger()
    if isinstance(when, str) and when.startswith("tool:") and when[5:]:
        return Trigger("tool", tool=when[5:])
    if callable(when):
        return Trigger("rule", rule=when)
    raise ValueError(
        f"{owner}: when= must be 'always', 'tool:NAME' (after that tool returns) or a function state -> bool, "
        f"got {json_type(when)} {when!r}"
    )


@attrs.frozen
class Injection:
    """One configured injection (``AgentBuilder.fact`` / ``steering`` / ``instruction`` /
    ``skill`` / ``rag``); ``text`` for the fixed kinds, ``retriever`` for RAG."""

    kind: Kind
    text: str = ""
    name: str | None = None
    trigger: Trigger = Trigger()
    retriever: Any = None
    k: int = 3
    min_score: float | None = None

    @property
    def label(self) -> str:
        """``fact``, ``skill 'refunds'``: how errors and the record name the injection."""
        return f"{self.kind} '{self.name}'" if self.name else self.kind


class _StateView(Mapping[str, Any]):
    """The agent's state as a ``when=`` rule sees it: recorded reads; a missing key names itself."""

    def __init__(self, scope: Scope, owner: str) -> None:
        self._scope = scope
        self._owner = owner

    def __getitem__(self, key: str) -> Any:
        if key not in self._scope:
            raise InjectionError(
                f"injection {self._owner}: its when= rule read state key {key!r}, which the agent's state "
                "does not hold at this model call (guard it with `key in state` or state.get(key))"
            )
        return peek(self._scope, key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._scope

    def get(self, key: str, default: Any = None) -> Any:
        return peek(self._scope, key, default)

    def __iter__(self) -> Any:
        return iter(())

    def __len__(self) -> int:
        return 0


def _fires(injection: Injection, scope: Scope) -> bool:
    trigger = injection.trigger
    if trigger.kind == "always":
        return True
    if trigger.kind == "tool":
        calls = peek(scope, LLM_LATEST_TOOL_CALLS, [])
        return scope["iteration"] > 1 and any(call.get("name") == trigger.tool for call in calls)
    assert trigger.rule is not None
    return bool(trigger.rule(_StateView(scope, injection.label)))


def default_namespace(identity: Any) -> tuple[str, ...]:
    """The memory namespace of a run: ``(tenant, user)`` from an identity mapping's ``tenant``
    and ``user`` (those present), ``(identity,)`` for a string, else ``("default",)``."""
    if isinstance(identity, str) and identity:
        return (identity,)
    if isinstance(identity, Mapping):
        parts = tuple(str(identity[k]) for k in ("tenant", "user") if identity.get(k) not in (None, ""))
        if parts:
            return parts
    return ("default",)


def _chunk(value: Any, index: int) -> tuple[str, str | None, float | None]:
    """(text, source, score) of one retrieved chunk; ``TypeError`` saying what it was instead."""
    if isinstance(value, str):
        return value, None, None
    if isinstance(value, Mapping):
        text, source, score = value.get("text"), value.get("source", value.get("id")), value.get("score")
    else:
        text = getattr(value, "text", None)
        source = getattr(value, "source", getattr(value, "id", None))
        score = getattr(value, "score", None)
    if not isinstance(text, str):
        raise TypeError(f"chunk {index} is {json_type(value)} without a text string (give str or {{'text': ...}})")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise TypeError(f"chunk {index} has a score that is not a number ({json_type(score)})")
    return text, None if source is None else str(source), None if score is None else float(score)


def _retrieved(injection: Injection, query: str) -> list[tuple[str, str | None, float | None]]:
    found = injection.retriever(query, injection.k)
    if isinstance(found, str | bytes) or not isinstance(found, Sequence):
        raise TypeError(f"it returned {json_type(found)}, not a list of chunks")
    return [_chunk(value, i) for i, value in enumerate(found)]


def _text_checked(text: str) -> str:
    """Retrieved text as a model may be sent it: real Unicode (a lone surrogate escaped)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def plan_context(
    injections: Sequence[Injection],
    memory: Any,
    recall: int,
    namespace_of: Callable[[Any], tuple[str, ...]],
    scope: Scope,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the rows sent, the rows dropped) for this model call, in injection order, memory last."""
    sent: list[dict[str, Any]] = []
    dropped: list[dict[str, Any]] = []
    query: str | None = None
    for injection in injections:
        base = {"kind": injection.kind, "slot": "system", "trigger": injection.trigger.label}
        if injection.name:
            base["name"] = injection.name
        if not _fires(injection, scope):
            if injection.kind != "rag":
                dropped.append({**base, "text": injection.text, "reason": "its trigger did not fire"})
            continue
        if injection.kind != "rag":
            sent.append({**base, "text": injection.text})
            continue
        query = peek(scope, USER_MESSAGE) if query is None else query
        try:
            chunks = _retrieved(injection, query)
        except Exception as exc:  # the retriever is user code: its failure is recorded, the model told
            reason = f"{type(exc).__name__}: {exc}" if not isinstance(exc, TypeError) else str(exc)
            sent.append({**base, "kind": "error", "source": "rag", "text": f"the retriever failed: {reason}"})
            continue
        ranked = sorted(enumerate(chunks), key=lambda pair: (-(pair[1][2] or 0.0), pair[0]))
        taken = 0
        for _, (text, source, score) in ranked:
            row = {**base, "text": _text_checked(text[:_MAX_CHUNK]), "source": source, "score": score}
            if len(text) > _MAX_CHUNK:
                row["cut"] = f"{len(text) - _MAX_CHUNK} characters left out"
            if injection.min_score is not None and (score is None or score < injection.min_score):
                dropped.append({**row, "reason": f"score below min_score={injection.min_score}"})
            elif taken >= injection.k:
                dropped.append({**row, "reason": f"past k={injection.k}"})
            else:
                sent.append(row)
                taken += 1
    if memory is not None and recall > 0:
        query = peek(scope, USER_MESSAGE) if query is None else query
        try:  # two past the cut: what recall=k left out is recorded as dropped
            items = memory.search(namespace_of(peek(scope, IDENTITY, None)), query, k=recall + _PAST_RECALL)
        except Exception as exc:  # a store that fails (or holds a tampered item) is a recorded failure
            failed = f"memory recall failed: {type(exc).__name__}: {exc}"
            sent.append({"kind": "error", "slot": "system", "trigger": "recall", "source": "memory", "text": failed})
            items = []
        for rank, item in enumerate(items):
            recalled: dict[str, Any] = {
                "kind": "memory",
                "slot": "system",
                "trigger": "recall",
                "id": item.id,
                "namespace": list(item.namespace),
                "text": item.text,
                "origin": item.origin,
            }
            if rank < recall:
                sent.append(recalled)
            else:
                dropped.append({**recalled, "reason": f"past recall={recall}"})
    return sent, dropped


def context_block(rows: Sequence[Mapping[str, Any]]) -> str:
    """The text the rows add to the system slot (``""`` when none)."""
    lines = []
    for row in rows:
        kind = row["kind"]
        if kind == "memory":
            lines.append(f"[memory {row['id']}] {row['text']}")
        elif kind == "rag":
            lines.append(f"[source {row.get('source') or '?'}] {row['text']}")
        elif kind == "skill":
            lines.append(f"[skill {row.get('name')}] {row['text']}")
        elif kind == "error":
            lines.append(f"[error] {row['text']}")
        else:
            lines.append(f"[{kind}] {row['text']}")
    return "## Context\n" + "\n".join(lines) if lines else ""


def with_context(system_prompt: str | None, rows: Sequence[Mapping[str, Any]]) -> str | None:
    """``system_prompt`` with the rows' block after it."""
    block = context_block(rows)
    if not block:
        return system_prompt
    return f"{system_prompt}\n\n{block}" if system_prompt else block
