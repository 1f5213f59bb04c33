"""What a tool's call does to the world: ``effect="read" | "idempotent" | "unsafe" | checkable(fn)``.

Laws:
- ``"read"`` (every tool that declares nothing): safe to repeat; nothing is recorded for it.
- ``"idempotent"``: repeats are harmless when sent with the same key (``ctx.idempotency_key``).
- ``checkable(fn)``: after a crash the engine asks ``fn(key, args)`` whether the call with that key
  happened — its result when it did, ``None`` when it did not.
- ``"unsafe"``: must not be repeated blindly: a call in doubt is put to a person.
- Anything else is refused when the tool is made (``ToolDefinitionError`` naming the tool).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs

from agent.errors import ToolDefinitionError

__all__ = ["EFFECTS", "Checkable", "check_effect", "checkable", "effect_name"]

EFFECTS = ("read", "idempotent", "unsafe")


@attrs.frozen
class Checkable:
    """A tool effect the engine can check after a crash: ``fn(key, args)`` → the call's result when
    the call with idempotency key ``key`` happened, ``None`` when it did not (sync or async)."""

    fn: Callable[..., Any]

    @property
    def is_async(self) -> bool:
        """True when ``fn`` must be awaited."""
        return inspect.iscoroutinefunction(self.fn)


def checkable(fn: Callable[[str, dict[str, Any]], Any]) -> Checkable:
    """``define_tool(..., effect=checkable(was_it_done))``: ``was_it_done(key, args)`` answers after
    a crash whether the call with ``key`` happened (its result) or not (``None``)."""
    if not callable(fn):
        raise ToolDefinitionError(f"checkable(fn): expected a function fn(key, args), got {type(fn).__name__}")
    return Checkable(fn)


def check_effect(tool: str, effect: Any) -> Any:
    """``effect`` when it is one of the four, else ``ToolDefinitionError`` naming the tool."""
    if isinstance(effect, Checkable) or (isinstance(effect, str) and effect in EFFECTS):
        return effect
    raise ToolDefinitionError(
        f"tool '{tool}': effect={effect!r} is not an effect; use 'read' (safe to repeat), 'idempotent' "
        "(harmless when repeated with the same key), 'unsafe' (a person decides after a crash) or "
        "checkable(fn) (fn(key, args) says whether the call happened)"
    )


def effect_name(effect: Any) -> str:
    """``"read"``, ``"idempotent"``, ``"unsafe"`` or ``"checkable"``: how the record names it."""
    return "checkable" if isinstance(effect, Checkable) else str(effect)
