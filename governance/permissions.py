"""The permission gate: the first gate a tool call meets, before any middleware.

Laws this file enforces (agentfootprint's ``PermissionChecker``):

- A checker is any object with ``check(request)`` (sync or async) returning a
  ``PermissionDecision``: ``allow``, ``deny`` or ``halt``.
- **A deny is data the model adapts to**: it reads ``tell_llm``, or
  ``[permission denied: <rationale>]`` (``policy`` when no rationale was given), and the
  run goes on. No middleware runs for a denied call, and it files no ledger row.
- **A halt stops the run** after the model's tool result is recorded; the model reads
  ``tell_llm`` or ``Tool '<name>' is not available in this context.`` (never the reason).
- **A checker that raises, or answers something that is not a decision, is a deny**
  (never a pass): the model reads a terminal refusal; the failure goes to ``rationale``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from typing import Any, Literal, Protocol

import attrs

from governance._json import as_tuple, describe_shape
from governance.errors import PermissionDefinitionError

PermissionResult = Literal["allow", "deny", "halt"]
"""A permission decision's result."""


@attrs.frozen
class PermissionRequest:
    """What a checker is asked about: the ``tool_name`` with ``args`` (as the model proposed
    them), its ``tool_call_id``, the ``iteration``, the ``history`` so far and the run's
    ``identity``. ``capability`` is ``"tool_call"``."""

    tool_name: str
    args: dict[str, Any]
    tool_call_id: str
    iteration: int
    history: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=as_tuple)
    identity: Any = None
    capability: str = "tool_call"


@attrs.frozen
class PermissionDecision:
    """A checker's answer. Build it with ``PermissionDecision.allow()``, ``.deny(rationale)``
    or ``.halt(reason)``. ``tell_llm`` overrides what the model reads; ``policy_rule_id``
    names the rule that decided (for the record)."""

    result: PermissionResult = attrs.field()
    rationale: str | None = None
    tell_llm: str | None = None
    policy_rule_id: str | None = None

    @result.validator
    def _check_result(self, _attribute: object, value: object) -> None:
        if value not in ("allow", "deny", "halt"):
            raise ValueError(f"PermissionDecision: result is 'allow', 'deny' or 'halt', got {value!r}")

    @classmethod
    def allow(cls, rationale: str | None = None, *, policy_rule_id: str | None = None) -> PermissionDecision:
        """Let the call go on to the middleware chain."""
        return cls("allow", rationale, None, policy_rule_id)

    @classmethod
    def deny(
        cls,
        rationale: str | None = None,
        *,
        tell_llm: str | None = None,
        policy_rule_id: str | None = None,
    ) -> PermissionDecision:
        """Refuse this call; the model reads the refusal and the run goes on."""
        return cls("deny", rationale, tell_llm, policy_rule_id)

    @classmethod
    def halt(
        cls,
        reason: str | None = None,
        *,
        tell_llm: str | None = None,
        policy_rule_id: str | None = None,
    ) -> PermissionDecision:
        """Refuse this call and stop the run."""
        return cls("halt", reason, tell_llm, policy_rule_id)


class PermissionChecker(Protocol):
    """Anything with ``check(request) -> PermissionDecision`` (sync or async); a ``name``
    attribute, when present, labels its verdicts."""

    def check(self, request: PermissionRequest) -> PermissionDecision | Awaitable[PermissionDecision]:
        """Decide about one tool call."""
        ...


@attrs.frozen
class PermissionVerdict:
    """What the permission gate decided about one call.

    ``result``: allow / deny / halt. ``model_text``: what the model reads as the tool result
    (``None`` on allow). ``rationale``: why (for events; on a failed checker,
    ``permission-checker threw: <message>``). ``checker``: the checker's name. ``failed``:
    True when the checker raised or answered a non-decision. ``policy_rule_id``: as given.
    """

    result: PermissionResult
    model_text: str | None
    rationale: str | None
    checker: str
    failed: bool = False
    policy_rule_id: str | None = None

    @property
    def allowed(self) -> bool:
        """True when the call may go on."""
        return self.result == "allow"


def denied_text(rationale: str | None) -> str:
    """``[permission denied: <rationale or 'policy'>]``."""
    return f"[permission denied: {rationale or 'policy'}]"


def unauthorized_text(tool_name: str) -> str:
    """What the model reads when the checker itself failed: a terminal refusal."""
    return denied_text(
        f"Tool '{tool_name}' could not be authorized. This will not change during this run — do "
        f"not call it again. Continue without it, or say what you are unable to do."
    )


def halted_text(tool_name: str) -> str:
    """``Tool '<name>' is not available in this context.``"""
    return f"Tool '{tool_name}' is not available in this context."


def checker_name(checker: object) -> str:
    """The checker's ``name`` attribute, or its type name."""
    name = getattr(checker, "name", None)
    return name if isinstance(name, str) and name else type(checker).__name__


def validate_permission_checker(checker: object) -> object:
    """Return ``checker`` if it has a callable ``check``; otherwise raise
    ``PermissionDefinitionError``."""
    if not callable(getattr(checker, "check", None)):
        raise PermissionDefinitionError(
            f"permission_checker ({type(checker).__name__}) has no check(request) method: give "
            "it check(request) returning PermissionDecision.allow(), .deny(rationale) or "
            ".halt(reason)"
        )
    return checker


async def evaluate_permission(checker: object, request: PermissionRequest) -> PermissionVerdict:
    """Ask ``checker`` about ``request``. Never raises: a checker that raises or answers a
    non-decision is a deny with the terminal refusal text."""
    name = checker_name(checker)
    try:
        answer = checker.check(request)  # type: ignore[attr-defined]
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        failure = f"permission-checker threw: {str(exc) or type(exc).__name__}"
        return PermissionVerdict("deny", unauthorized_text(request.tool_name), failure, name, failed=True)
    if not isinstance(answer, PermissionDecision):
        failure = f"permission-checker returned {describe_shape(answer)}, not a PermissionDecision"
        return PermissionVerdict("deny", unauthorized_text(request.tool_name), failure, name, failed=True)
    rule = answer.policy_rule_id
    if answer.result == "allow":
        return PermissionVerdict("allow", None, answer.rationale, name, policy_rule_id=rule)
    if answer.result == "deny":
        text = answer.tell_llm or denied_text(answer.rationale)
        return PermissionVerdict("deny", text, answer.rationale, name, policy_rule_id=rule)
    text = answer.tell_llm or halted_text(request.tool_name)
    return PermissionVerdict("halt", text, answer.rationale, name, policy_rule_id=rule)
