"""The three answers a middleware may give: ``allow``, ``deny``, ``ask``.

Laws this file enforces (agentfootprint's ``middleware/outcomes``):

- **A middleware cannot answer for the tool.** There are three outcomes and no "result"
  one: whatever the chain decides, the model reads the real tool's output or a refusal.
- **A transform declares itself.** ``allow(value, why)`` replaces what the chain carries
  and must say why; the ledger keeps both the value before and after. A value without a
  non-empty ``why`` raises ``allow(value, why): a transform must say why``.
- **A refusal carries a reason** and **a question is a question**: ``deny`` and ``ask``
  refuse empty text.

``None`` means "no value": ``allow()`` passes the carried value through unchanged. There is
no spelling for "replace it with None" (deny instead). The checks live in the classes, so
``Allow(value=1)`` built directly is refused exactly like ``allow(1)``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from governance._json import describe_shape
from governance.errors import OutcomeError

_TRANSFORM_MUST_SAY_WHY = "allow(value, why): a transform must say why"
_DENY_NEEDS_REASON = "deny(reason): a refusal must carry a reason"
_ASK_NEEDS_QUESTION = "ask(question, detail=None): a question must be a non-empty string"


def _filled(text: object) -> bool:
    return isinstance(text, str) and bool(text.strip())


@attrs.frozen
class Allow:
    """Let the call or message through; with a ``value``, replace what the chain carries.

    ``why`` is required whenever ``value`` is given, and optional (a note) otherwise.
    """

    kind: ClassVar[str] = "allow"
    value: Any = None
    why: str | None = None

    def __attrs_post_init__(self) -> None:
        if self.why is not None and not isinstance(self.why, str):
            got = describe_shape(self.why)
            raise OutcomeError(f"allow(value, why): why must be a string, got {got}")
        if self.value is not None and not _filled(self.why):
            raise OutcomeError(_TRANSFORM_MUST_SAY_WHY)


@attrs.frozen
class Deny:
    """Refuse. For a tool call the model reads ``reason`` as the tool result and the run goes
    on; for a message the run raises ``MessageDeniedError``."""

    kind: ClassVar[str] = "deny"
    reason: str

    def __attrs_post_init__(self) -> None:
        if not _filled(self.reason):
            raise OutcomeError(_DENY_NEEDS_REASON)


@attrs.frozen
class Ask:
    """Pause the run and put ``question`` to a person (before-tool only, where a pause exists).

    ``detail`` is anything the answering screen should show; it travels in the pause
    payload as a JSON-safe copy and is never interpreted here.
    """

    kind: ClassVar[str] = "ask"
    question: str
    detail: Any = None

    def __attrs_post_init__(self) -> None:
        if not _filled(self.question):
            raise OutcomeError(_ASK_NEEDS_QUESTION)


Outcome = Allow | Deny | Ask
"""Everything a hook may return."""


def allow(value: Any = None, why: str | None = None) -> Allow:
    """Let it through: ``allow()`` passes the value on unchanged, ``allow(value, why)`` replaces it.

    An empty ``why`` counts as none. Raises ``OutcomeError`` (a ``ValueError``)
    ``allow(value, why): a transform must say why`` when a value comes without a reason.
    """
    return Allow(value=value, why=why if _filled(why) else None)


def deny(reason: str) -> Deny:
    """Refuse, saying why. Raises ``OutcomeError`` (a ``ValueError``)
    ``deny(reason): a refusal must carry a reason`` for an empty or non-string reason."""
    return Deny(reason=reason)


def ask(question: str, detail: Any = None) -> Ask:
    """Ask a person before the tool runs. Raises ``OutcomeError`` (a ``ValueError``)
    ``ask(question, detail=None): a question must be a non-empty string`` otherwise."""
    return Ask(question=question, detail=detail)
