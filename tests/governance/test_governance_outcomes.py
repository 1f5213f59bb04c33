"""The verbs: allow / deny / ask build frozen values and refuse unusable arguments."""

from __future__ import annotations

import attrs
import pytest

from governance import Allow, Ask, Deny, OutcomeError, allow, ask, deny


def test_allow_without_arguments_passes_through() -> None:
    """``allow()`` has no value and no why."""
    assert allow() == Allow(value=None, why=None)


def test_allow_with_value_and_why_is_a_transform() -> None:
    """``allow(value, why)`` keeps both."""
    assert allow({"a": 1}, "capped") == Allow(value={"a": 1}, why="capped")


def test_allow_with_only_a_why_is_a_noted_pass_through() -> None:
    """``allow(why=...)`` keeps the note and no value."""
    assert allow(why="looked fine") == Allow(value=None, why="looked fine")


def test_allow_treats_an_empty_why_as_none() -> None:
    """An empty why on a pass-through is dropped."""
    assert allow(why="") == Allow()


def test_a_value_without_why_is_refused() -> None:
    """A transform must say why (a ValueError)."""
    with pytest.raises(ValueError, match=r"^allow\(value, why\): a transform must say why$"):
        allow({"a": 1})


def test_a_value_with_a_blank_why_is_refused() -> None:
    """Whitespace is not a reason."""
    with pytest.raises(OutcomeError, match=r"^allow\(value, why\): a transform must say why$"):
        allow("x", "   ")


def test_building_allow_directly_applies_the_same_law() -> None:
    """The class itself refuses a value without a why."""
    with pytest.raises(OutcomeError, match=r"^allow\(value, why\): a transform must say why$"):
        Allow(value=1)


def test_a_non_string_why_is_refused() -> None:
    """why must be text."""
    with pytest.raises(OutcomeError, match=r"^allow\(value, why\): why must be a string, got an int$"):
        Allow(value=None, why=3)  # type: ignore[arg-type]


def test_deny_keeps_its_reason() -> None:
    """``deny(reason)``."""
    assert deny("no refunds on Sunday") == Deny(reason="no refunds on Sunday")


@pytest.mark.parametrize("reason", ["", "  ", None, 3])
def test_deny_refuses_an_empty_or_non_string_reason(reason: object) -> None:
    """A refusal must carry a reason (a ValueError)."""
    with pytest.raises(ValueError, match=r"^deny\(reason\): a refusal must carry a reason$"):
        deny(reason)  # type: ignore[arg-type]


def test_ask_keeps_question_and_detail() -> None:
    """``ask(question, detail)``."""
    assert ask("approve?", {"amount": 5}) == Ask(question="approve?", detail={"amount": 5})


@pytest.mark.parametrize("question", ["", " ", None])
def test_ask_refuses_an_empty_question(question: object) -> None:
    """A question is a non-empty string (a ValueError)."""
    with pytest.raises(ValueError, match=r"^ask\(question, detail=None\): a question must be a non-empty string$"):
        ask(question)  # type: ignore[arg-type]


def test_outcomes_are_frozen() -> None:
    """An outcome cannot be edited after the fact."""
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        deny("x").reason = "y"  # type: ignore[misc]


def test_outcomes_name_their_kind() -> None:
    """Each class says which outcome it is."""
    assert (allow().kind, deny("x").kind, ask("q").kind) == ("allow", "deny", "ask")


def test_outcome_reprs_are_readable() -> None:
    """The repr shows the fields."""
    assert repr(allow(1, "w")) == "Allow(value=1, why='w')"
