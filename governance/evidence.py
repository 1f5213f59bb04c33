"""The evidence pack a check-in carries: what will happen, what was read, what drove it.

Laws this file enforces (agentfootprint's ``checkin`` assemblers, in snake_case):

- ``will_do`` is ``<description> — with k=v, k=v`` (em dash; the tool name when the
  description is empty; no ``— with`` part without args). String values are written raw,
  others as compact JSON; each value is cut to 60 characters.
- ``read`` has one frame per context unit: each sentence of each system message
  (``system-1``, …), each user message (``task-N``), each tool result (``result-N``, text
  ``<tool_name>: <content>``); assistant turns and empty messages are skipped. A frame's
  summary is the text with whitespace collapsed, cut to 160 characters (``…`` marks a cut).
- ``drivers`` are the same units ranked by the configured scorer against
  ``"<name> <description> <k=v ...>"``; no units means no scorer call and no drivers.
- ``trail`` lists the tools run so far (tool messages with a ``tool_name``), each ``ok``
  unless its result starts with ``[permission denied``, ``declined by human``,
  ``credential error`` or ``authorization required``; its summary is
  ``no tools run yet (iteration N)`` or ``N tool(s) run over M iteration(s)``.
- The ``minimal`` assembler fills ``will_do`` only (the other fields are absent).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from governance import _codec
from governance._json import as_tuple
from governance.scorer import ContextUnit, Driver, ScoreInput, Scorer

SUMMARY_LIMIT = 160
"""Longest frame summary, in characters."""
VALUE_LIMIT = 60
"""Longest rendered argument value in ``will_do``, in characters."""

_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
_WHITESPACE = re.compile(r"\s+")
_NOT_OK_PREFIXES = (
    "[permission denied",
    "declined by human",
    "credential error",
    "authorization required",
)


@attrs.frozen
class ContextFrame:
    """One piece of context the run consumed: its unit ``id``, ``channel`` and a short
    ``summary`` (never the full payload)."""

    id: str
    channel: str
    summary: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"id": self.id, "channel": self.channel, "summary": self.summary}

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> ContextFrame:
        """Read a frame back (strict: the one codec, ``WireFormatError`` naming the bad field)."""
        return _codec.load(cls, data, path)


@attrs.frozen
class TrailCall:
    """A tool call already completed this run: its ``name`` and whether it went ``ok``."""

    name: str
    ok: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"name": self.name, "ok": self.ok}

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> TrailCall:
        """Read a trail entry back (strict: the one codec)."""
        return _codec.load(cls, data, path)


@attrs.frozen
class Trail:
    """The run so far: the ``iteration`` the check-in fired on, the ``tool_calls`` completed
    (oldest first) and a one-line ``summary``."""

    iteration: int
    tool_calls: tuple[TrailCall, ...] = attrs.field(converter=as_tuple)
    summary: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "iteration": self.iteration,
            "tool_calls": [c.to_dict() for c in self.tool_calls],
            "summary": self.summary,
        }

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> Trail:
        """Read a trail back (strict: the one codec)."""
        return _codec.load(cls, data, path)


def _optional_tuple(value: Sequence[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen
class CheckInEvidence:
    """The receipts riding a check-in: ``will_do`` always; ``read``, ``drivers`` and
    ``trail`` under the standard assembler (``None`` — absent — under minimal)."""

    will_do: str
    read: tuple[ContextFrame, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    drivers: tuple[Driver, ...] | None = attrs.field(default=None, converter=_optional_tuple)
    trail: Trail | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form; absent fields are omitted."""
        out: dict[str, Any] = {"will_do": self.will_do}
        if self.read is not None:
            out["read"] = [f.to_dict() for f in self.read]
        if self.drivers is not None:
            out["drivers"] = [d.to_dict() for d in self.drivers]
        if self.trail is not None:
            out["trail"] = self.trail.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> CheckInEvidence:
        """Read evidence back (strict: the one codec; absent fields stay ``None``)."""
        return _codec.load(cls, data, path)


_codec.register(ContextFrame)
_codec.register(TrailCall)
_codec.register(Trail)
_codec.register(CheckInEvidence, optional=("read", "drivers", "trail"))


def truncate(text: str, limit: int = SUMMARY_LIMIT) -> str:
    """Collapse whitespace runs to one space, strip, and cut to ``limit`` characters
    (the last one becomes ``…`` when cut)."""
    flat = _WHITESPACE.sub(" ", text).strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_value(value: Any) -> str:
    """An argument value as ``will_do`` writes it: strings raw, ``None`` as ``null``, the
    rest as compact JSON (non-JSON objects through ``str``)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def render_args(args: Mapping[str, Any]) -> str:
    """``k=v, k=v`` in the args' order, each value cut to 60 characters."""
    return ", ".join(f"{k}={truncate(render_value(v), VALUE_LIMIT)}" for k, v in args.items())


def will_do(tool_name: str, description: str, args: Mapping[str, Any]) -> str:
    """``<description> — with k=v, ...`` (the name stands in for an empty description)."""
    desc = description.strip() or tool_name
    rendered = render_args(args)
    return f"{desc} — with {rendered}" if rendered else desc


def tool_text(tool_name: str, description: str, args: Mapping[str, Any]) -> str:
    """What the drivers are scored against: ``"<name> <description> <k=v ...>"``, stripped."""
    return f"{tool_name} {description} {render_args(args)}".strip()


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if content is None:
        return ""
    return content if isinstance(content, str) else render_value(content)


def units_from_history(history: Sequence[Mapping[str, Any]]) -> list[ContextUnit]:
    """The context units of a conversation: system sentences, user tasks, tool results."""
    units: list[ContextUnit] = []
    counts = {"system": 0, "task": 0, "result": 0}

    def add(channel: str, text: str) -> None:
        counts[channel] += 1
        units.append(ContextUnit(id=f"{channel}-{counts[channel]}", channel=channel, text=text))

    for message in history:
        content = _content(message).strip()
        if not content:
            continue
        role = message.get("role")
        if role == "system":
            for piece in _SENTENCE_BREAK.split(content):
                if piece.strip():
                    add("system", piece.strip())
        elif role == "user":
            add("task", content)
        elif role == "tool":
            name = message.get("tool_name")
            add("result", f"{name}: {content}" if name else content)
    return units


def trail_from_history(history: Sequence[Mapping[str, Any]], iteration: int) -> Trail:
    """The run-so-far trail: every tool message with a ``tool_name``, oldest first."""
    calls = [
        TrailCall(name=str(m["tool_name"]), ok=not _content(m).lower().startswith(_NOT_OK_PREFIXES))
        for m in history
        if m.get("role") == "tool" and m.get("tool_name")
    ]
    n = len(calls)
    if n == 0:
        summary = f"no tools run yet (iteration {iteration})"
    else:
        tools = "tool" if n == 1 else "tools"
        iterations = "iteration" if iteration == 1 else "iterations"
        summary = f"{n} {tools} run over {iteration} {iterations}"
    return Trail(iteration=iteration, tool_calls=calls, summary=summary)


@attrs.frozen
class AssemblerInput:
    """Everything an evidence assembler needs for one check-in. ``history`` already starts
    with the system prompt as a system message (see ``history_for_check_in``)."""

    tool_name: str
    tool_description: str
    args: dict[str, Any]
    iteration: int
    history: tuple[Mapping[str, Any], ...] = attrs.field(converter=as_tuple)
    scorer: Scorer
    intent: str | None = None


async def standard_evidence(inp: AssemblerInput) -> CheckInEvidence:
    """The ``standard`` assembler: ``will_do``, ``read``, ``drivers`` (scored) and ``trail``."""
    units = units_from_history(inp.history)
    read = [ContextFrame(u.id, u.channel, truncate(u.text)) for u in units]
    drivers: list[Driver] = []
    if units:
        text = tool_text(inp.tool_name, inp.tool_description, inp.args)
        ranked = inp.scorer(ScoreInput(tool_name=inp.tool_name, tool_text=text, units=units))
        if inspect.isawaitable(ranked):
            ranked = await ranked
        # A custom scorer may hand back plain dicts; they are read as strictly as a checkpoint.
        drivers = [d if isinstance(d, Driver) else Driver.from_dict(d, f"$.drivers[{i}]") for i, d in enumerate(ranked)]
    return CheckInEvidence(
        will_do=will_do(inp.tool_name, inp.tool_description, inp.args),
        read=read,
        drivers=drivers,
        trail=trail_from_history(inp.history, inp.iteration),
    )


def minimal_evidence(inp: AssemblerInput) -> CheckInEvidence:
    """The ``minimal`` assembler: ``will_do`` only (zero cost, no scorer call)."""
    return CheckInEvidence(will_do=will_do(inp.tool_name, inp.tool_description, inp.args))
