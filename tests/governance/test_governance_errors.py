"""The exception tree: natural builtins, context attributes, exact messages, pickling."""

from __future__ import annotations

import pickle

import pytest

from governance import (
    CheckInConfigError,
    DecisionInputError,
    DecisionRequiredError,
    GovernanceError,
    MessageDeniedError,
    MiddlewareDefinitionError,
    OutcomeError,
    PermissionDefinitionError,
    ResumeDecisionError,
    WireFormatError,
)


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (OutcomeError, ValueError),
        (MiddlewareDefinitionError, TypeError),
        (CheckInConfigError, ValueError),
        (DecisionInputError, TypeError),
        (WireFormatError, ValueError),
        (PermissionDefinitionError, TypeError),
        (MessageDeniedError, RuntimeError),
        (ResumeDecisionError, ValueError),
        (DecisionRequiredError, TypeError),
    ],
)
def test_each_error_is_a_governance_error_and_its_natural_builtin(
    error: type[Exception], builtin: type[Exception]
) -> None:
    """Catchable as the package's base and as the builtin it resembles."""
    assert issubclass(error, GovernanceError)
    assert issubclass(error, builtin)


def test_message_denied_error_says_where_and_who_but_not_the_text() -> None:
    """``Message denied at '<phase>' by '<middleware>': <reason>``, with attributes."""
    err = MessageDeniedError("contains a card number", "input", "pci")
    with pytest.raises(MessageDeniedError, match=r"^Message denied at 'input' by 'pci': contains a card number$"):
        raise err
    assert (err.reason, err.phase, err.middleware, err.code) == (
        "contains a card number",
        "input",
        "pci",
        "ERR_MESSAGE_DENIED",
    )


def test_message_denied_error_pickles_with_its_context() -> None:
    """It survives a process boundary (a worker raising it)."""
    err = pickle.loads(pickle.dumps(MessageDeniedError("r", "output", "m")))
    assert (str(err), err.reason, err.phase, err.middleware) == (
        "Message denied at 'output' by 'm': r",
        "r",
        "output",
        "m",
    )


def test_resume_and_decision_required_errors_pickle_with_their_context() -> None:
    """Both keep their attributes across pickling."""
    resume = pickle.loads(
        pickle.dumps(ResumeDecisionError("m", problem="already-used", request_id="a", pending_request_id="b"))
    )
    required = pickle.loads(
        pickle.dumps(DecisionRequiredError("m", gate="ask", tool_name="t", middleware="g", received="a str"))
    )
    assert (str(resume), resume.problem, resume.request_id, resume.pending_request_id) == (
        "m",
        "already-used",
        "a",
        "b",
    )
    assert (required.gate, required.tool_name, required.middleware, required.received) == (
        "ask",
        "t",
        "g",
        "a str",
    )


def test_wire_format_error_carries_the_path() -> None:
    """The path of the bad field is an attribute too."""
    err = WireFormatError("$.x: bad", path="$.x")
    assert (str(err), err.path) == ("$.x: bad", "$.x")
