"""The governance exception tree.

    GovernanceError(Exception)                   everything this package raises on purpose
    ├── OutcomeError(ValueError)                 allow/deny/ask got an unusable argument
    ├── MiddlewareDefinitionError(TypeError)     a middleware has no name or no hook
    ├── CheckInConfigError(ValueError)           check-in evidence/scorer options conflict
    ├── DecisionInputError(TypeError)            check_in_approved/declined got a bad argument
    ├── WireFormatError(CheckpointError)         from_dict got a malformed dict (has .path);
    │                                            flowchart's CheckpointError (a ValueError):
    │                                            the one tree of untrusted input
    ├── PermissionDefinitionError(TypeError)     a permission checker has no check()
    ├── MessageDeniedError(RuntimeError)         a message middleware refused input/output
    ├── ResumeDecisionError(ValueError)          a decision for another request, a changed
    │                                            call, or a request already answered
    └── DecisionRequiredError(TypeError)         a consent pause answered with a non-decision

(Each class subclasses ``GovernanceError`` and the builtin shown in brackets.)

Law: an error carries the context it was raised in (phase, middleware, request ids, gate)
as attributes, and never the value a person or a model wrote — a refused message is not in
``MessageDeniedError``, and ``DecisionRequiredError.received`` describes a shape, not content.

Chains never raise any of these: a middleware's failure is a denial row, not an exception
(see ``governance.chains``). These errors are raised at the edges: by the verbs, by
validators the agent builder calls, and by the agent's run/resume boundary.
"""

from __future__ import annotations

from typing import Any, Literal

from flowchart._core.errors import CheckpointError


class GovernanceError(Exception):
    """Base class for every error raised on purpose by ``governance``."""


class OutcomeError(GovernanceError, ValueError):
    """``allow``/``deny``/``ask`` (or ``Allow``/``Deny``/``Ask``) got an unusable argument."""


class MiddlewareDefinitionError(GovernanceError, TypeError):
    """A middleware object cannot be a link: it has no ``name`` or no hook (raised at build)."""


class CheckInConfigError(GovernanceError, ValueError):
    """The check-in options conflict or are unknown (e.g. a scorer with ``evidence="minimal"``)."""


class DecisionInputError(GovernanceError, TypeError):
    """``check_in_approved``/``check_in_declined`` got a request without an id, an empty ``by``,
    a non-string note or a value that is not JSON-safe."""


class WireFormatError(GovernanceError, CheckpointError):
    """A dict given to a ``from_dict`` is malformed; ``path`` names the bad field
    (``$.evidence.will_do``). A ``CheckpointError`` (and so a ``ValueError``): what governance
    reads back is untrusted input like a checkpoint, refused by the same codec."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message, path=path)
        self.path: str = path


class PermissionDefinitionError(GovernanceError, TypeError):
    """A permission checker has no callable ``check`` (raised when the agent is built)."""


class MessageDeniedError(GovernanceError, RuntimeError):
    """A message middleware refused the run's input or withheld its output.

    The message is ``Message denied at '<phase>' by '<middleware>': <reason>``; the refused
    text is deliberately not carried (it stays in the commit log, under redaction).
    """

    code = "ERR_MESSAGE_DENIED"

    def __init__(self, reason: str, phase: str, middleware: str) -> None:
        super().__init__(f"Message denied at '{phase}' by '{middleware}': {reason}")
        self.reason = reason
        self.phase = phase
        self.middleware = middleware

    def __reduce__(self) -> tuple[Any, ...]:
        # Exceptions pickle through .args by default; ours take three named arguments.
        return (type(self), (self.reason, self.phase, self.middleware))


ResumeProblem = Literal["another-request", "changed-call", "already-used"]


class ResumeDecisionError(GovernanceError, ValueError):
    """A decision cannot answer the pending pause.

    ``problem`` is ``"another-request"`` (it names a different request),
    ``"changed-call"`` (the call that would run is not the one the person saw) or
    ``"already-used"`` (its request was answered before). ``request_id`` is the id the
    decision names; ``pending_request_id`` the id the run is paused on. Both are opaque
    fingerprints, safe to log.
    """

    code = "ERR_RESUME_DECISION"

    def __init__(self, message: str, *, problem: ResumeProblem, request_id: str, pending_request_id: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.request_id = request_id
        self.pending_request_id = pending_request_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_resume_error,
            (str(self), self.problem, self.request_id, self.pending_request_id),
        )


def _rebuild_resume_error(
    message: str, problem: ResumeProblem, request_id: str, pending_request_id: str
) -> ResumeDecisionError:
    return ResumeDecisionError(message, problem=problem, request_id=request_id, pending_request_id=pending_request_id)


Gate = Literal["check_in", "ask"]


class DecisionRequiredError(GovernanceError, TypeError):
    """A consent pause (a tool's check-in or a middleware's ask) was answered with something
    that is not a ``CheckInDecision``. Raised before anything runs, so the same checkpoint
    can then be answered properly.

    Attributes: ``gate`` (``"check_in"`` | ``"ask"``), ``tool_name``, ``middleware`` (the
    asker, for an ask), ``received`` (the SHAPE of what came, e.g. ``a str`` — never the value).
    """

    code = "ERR_DECISION_REQUIRED"

    def __init__(
        self,
        message: str,
        *,
        gate: Gate,
        tool_name: str | None,
        middleware: str | None,
        received: str,
    ) -> None:
        super().__init__(message)
        self.gate = gate
        self.tool_name = tool_name
        self.middleware = middleware
        self.received = received

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_decision_required,
            (str(self), self.gate, self.tool_name, self.middleware, self.received),
        )


def _rebuild_decision_required(
    message: str, gate: Gate, tool_name: str | None, middleware: str | None, received: str
) -> DecisionRequiredError:
    return DecisionRequiredError(message, gate=gate, tool_name=tool_name, middleware=middleware, received=received)
