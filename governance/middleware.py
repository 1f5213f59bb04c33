"""What a middleware is: a duck type, the call it sees, and the build-time check.

Laws this file enforces:

- **Middleware are duck-typed, and hooks are looked up on the object**, not its class: a
  class instance, a ``SimpleNamespace`` or a module all work, and a hook assigned to one
  instance belongs to that instance only.
- **A link must be able to decide**: a tool middleware has a non-empty ``name`` and at least
  one of ``on_tool_call`` / ``on_tool_result``; a message middleware has a ``name`` and
  ``on_message``. ``validate_tool_middleware`` / ``validate_message_middleware`` refuse
  anything else with an error naming what is missing (the agent builder calls them).
- **The Protocol's own hook bodies are not hooks.** ``ToolMiddleware`` declares both hooks
  so type checkers know their shape; a class that subclasses it and defines only
  ``on_tool_call`` inherits a placeholder ``on_tool_result`` that the chains treat as absent
  (so it files no after-tool row).
- **A hook sees a private copy of the arguments**: mutating ``call.args`` in place changes
  nothing; return ``allow(new_args, why)`` to transform.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

import attrs

from governance._json import as_tuple, describe_shape
from governance.errors import MiddlewareDefinitionError
from governance.outcomes import Allow, Outcome

ToolHook = Literal["on_tool_call", "on_tool_result"]
"""The two tool-moment hook names."""


@attrs.frozen
class ToolCallInfo:
    """The tool call a tool middleware decides about (the ``call`` its hooks receive).

    ``args`` are the arguments as transformed by every earlier link (before-tool) or the
    arguments the tool actually ran with (after-tool). ``history`` is the conversation so
    far (message dicts, including the assistant turn that made this call); treat it as
    read-only. ``result`` and ``error`` are set only for ``on_tool_result``: ``result`` is
    the tool's (possibly already transformed) return value, ``error`` is True when the
    tool raised and ``result`` holds its error message.
    """

    tool_name: str
    tool_call_id: str
    iteration: int
    args: dict[str, Any]
    history: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=as_tuple)
    identity: Any = None
    result: Any = None
    error: bool = False
    #: where the tool came from: ``None`` for a tool defined in code, the server's name for an
    #: MCP tool (``agent.mcp.mcp_tools``), so a middleware can treat outside tools differently
    source: str | None = None


@attrs.frozen
class MessageInfo:
    """The message a message middleware decides about (the ``msg`` ``on_message`` receives).

    ``phase`` is ``"input"`` (the user's message, before the run writes it) or ``"output"``
    (the final answer, before the caller gets it). ``content`` is the text as transformed by
    earlier links. ``history`` is empty at input. ``iteration`` is 0 at input and the
    run's iteration at output (it goes into the ledger row).
    """

    phase: Literal["input", "output"] = attrs.field()

    content: str
    history: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=as_tuple)
    identity: Any = None
    iteration: int = 0

    @phase.validator
    def _check_phase(self, _attribute: object, value: object) -> None:
        if value not in ("input", "output"):
            raise ValueError(f"MessageInfo: phase is 'input' or 'output', got {value!r}")


class ToolMiddleware(Protocol):
    """A link of the tool chain: a ``name`` and at least one hook (any object with these
    attributes qualifies; subclassing is optional).

    ``on_tool_call(call)`` runs before the tool, in declaration order, and may return
    ``allow()``, ``allow(new_args, why)``, ``deny(reason)`` or ``ask(question, detail)``.
    ``on_tool_result(call)`` runs after the tool, in reverse order, and may return
    ``allow()``, ``allow(new_result, why)`` or ``deny(reason)``. Either may be ``async``.
    """

    name: str

    def on_tool_call(self, call: ToolCallInfo) -> Outcome | Awaitable[Outcome]:
        """Decide about a call before it runs (placeholder: a subclass that does not define
        it has no before-tool hook)."""
        return Allow()

    def on_tool_result(self, call: ToolCallInfo) -> Outcome | Awaitable[Outcome]:
        """Decide about a call's result after it ran (placeholder: a subclass that does not
        define it has no after-tool hook)."""
        return Allow()


class MessageMiddleware(Protocol):
    """A link of the message chain: a ``name`` and ``on_message(msg)`` returning ``allow()``,
    ``allow(new_text, why)`` or ``deny(reason)`` (sync or ``async``). It runs at both phases;
    read ``msg.phase`` to act at one only."""

    name: str

    def on_message(self, msg: MessageInfo) -> Outcome | Awaitable[Outcome]:
        """Decide about the input or output message (placeholder: must be defined)."""
        return Allow()


_PLACEHOLDERS: frozenset[object] = frozenset(
    {ToolMiddleware.on_tool_call, ToolMiddleware.on_tool_result, MessageMiddleware.on_message}
)


def find_hook(link: object, hook: str) -> Callable[[Any], Any] | None:
    """The callable ``hook`` of ``link`` looked up on the object, or None when it has none.

    A non-callable attribute and the Protocols' placeholder bodies count as no hook.
    """
    try:
        fn = getattr(link, hook, None)
    except Exception:
        # A property that raises is a link that cannot be consulted for this moment.
        return None
    if fn is None or not callable(fn):
        return None
    if getattr(fn, "__func__", fn) in _PLACEHOLDERS:
        return None
    return fn


def link_name(link: object) -> str:
    """The name a link files its rows under (``"<unnamed>"`` if it somehow has none)."""
    try:
        name = getattr(link, "name", None)
    except Exception:
        name = None
    return name if isinstance(name, str) and name else "<unnamed>"


def _require_name(link: object, kind: str, position: int | None) -> str:
    where = f" #{position}" if position is not None else ""
    name = getattr(link, "name", None)
    if not isinstance(name, str) or not name.strip():
        got = "no 'name' attribute" if name is None else f"'name' = {describe_shape(name)}"
        raise MiddlewareDefinitionError(
            f"{kind}{where} ({type(link).__name__}) has {got}: give it a non-empty string "
            f"'name'; it labels every ledger row the middleware files"
        )
    return name


def _check_callable(link: object, hook: str, kind: str, name: str) -> bool:
    value = getattr(link, hook, None)
    if value is None:
        return False
    if not callable(value):
        raise MiddlewareDefinitionError(f"{kind} '{name}': {hook} is not callable (it is {describe_shape(value)})")
    return find_hook(link, hook) is not None


def validate_tool_middleware(link: object, *, position: int | None = None) -> object:
    """Return ``link`` if it can be a tool-chain link; otherwise raise
    ``MiddlewareDefinitionError`` naming what is missing. ``position`` (its index in the
    declaration) is quoted in the message when given."""
    name = _require_name(link, "tool middleware", position)
    has_call = _check_callable(link, "on_tool_call", "tool middleware", name)
    has_result = _check_callable(link, "on_tool_result", "tool middleware", name)
    if not (has_call or has_result):
        raise MiddlewareDefinitionError(
            f"tool middleware '{name}' has neither on_tool_call nor on_tool_result: give it at "
            f"least one hook (on_tool_call decides before the tool runs, on_tool_result after)"
        )
    return link


def validate_message_middleware(link: object, *, position: int | None = None) -> object:
    """Return ``link`` if it can be a message-chain link; otherwise raise
    ``MiddlewareDefinitionError`` naming what is missing."""
    name = _require_name(link, "message middleware", position)
    if not _check_callable(link, "on_message", "message middleware", name):
        raise MiddlewareDefinitionError(
            f"message middleware '{name}' has no on_message hook: give it "
            f"on_message(msg) returning allow(), allow(text, why) or deny(reason)"
        )
    return link


def validate_chain(links: Sequence[object], kind: Literal["tool", "message"]) -> tuple[object, ...]:
    """Validate every link of a chain (in order) and return them as a tuple."""
    check = validate_tool_middleware if kind == "tool" else validate_message_middleware
    return tuple(check(link, position=i) for i, link in enumerate(links))
