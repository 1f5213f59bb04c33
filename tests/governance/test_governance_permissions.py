"""The permission gate: allow / deny / halt, and a checker that fails is a deny."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from governance import PermissionDecision, PermissionDefinitionError, PermissionRequest
from governance.permissions import evaluate_permission, validate_permission_checker

REQ = PermissionRequest(tool_name="wire", args={"to": "x"}, tool_call_id="t1", iteration=1)


def checker(answer: Any, name: str = "policy") -> NS:
    """A checker that always gives ``answer``."""
    return NS(name=name, check=lambda req: answer)


async def test_an_allow_lets_the_call_on_with_no_model_text() -> None:
    """allow: nothing for the model to read."""
    verdict = await evaluate_permission(checker(PermissionDecision.allow("ok", policy_rule_id="r1")), REQ)
    assert (verdict.result, verdict.allowed, verdict.model_text, verdict.policy_rule_id) == (
        "allow",
        True,
        None,
        "r1",
    )


async def test_a_deny_tells_the_model_the_rationale() -> None:
    """deny: ``[permission denied: <rationale>]``."""
    verdict = await evaluate_permission(checker(PermissionDecision.deny("wires need two approvers")), REQ)
    assert (verdict.result, verdict.model_text, verdict.checker) == (
        "deny",
        "[permission denied: wires need two approvers]",
        "policy",
    )


async def test_a_deny_without_rationale_says_policy() -> None:
    """No rationale: ``[permission denied: policy]``."""
    verdict = await evaluate_permission(checker(PermissionDecision.deny()), REQ)
    assert verdict.model_text == "[permission denied: policy]"


async def test_tell_llm_overrides_the_model_text() -> None:
    """A checker may word the refusal itself."""
    verdict = await evaluate_permission(checker(PermissionDecision.deny("r", tell_llm="Not today.")), REQ)
    assert verdict.model_text == "Not today."


async def test_a_halt_tells_the_model_the_tool_is_unavailable() -> None:
    """halt: the model never reads the reason."""
    verdict = await evaluate_permission(checker(PermissionDecision.halt("fraud suspected")), REQ)
    assert (verdict.result, verdict.model_text, verdict.rationale) == (
        "halt",
        "Tool 'wire' is not available in this context.",
        "fraud suspected",
    )


async def test_an_async_checker_is_awaited() -> None:
    """check may be async."""

    async def check(req: PermissionRequest) -> PermissionDecision:
        return PermissionDecision.deny("async")

    verdict = await evaluate_permission(NS(check=check), REQ)
    assert (verdict.result, verdict.checker) == ("deny", "SimpleNamespace")


async def test_a_checker_that_raises_is_a_terminal_deny() -> None:
    """Deny by default; the thrown message goes to the rationale only."""

    def check(req: PermissionRequest) -> PermissionDecision:
        raise RuntimeError("policy db down")

    verdict = await evaluate_permission(NS(name="p", check=check), REQ)
    assert (verdict.result, verdict.failed, verdict.rationale) == (
        "deny",
        True,
        "permission-checker threw: policy db down",
    )
    assert verdict.model_text == (
        "[permission denied: Tool 'wire' could not be authorized. This will not change during "
        "this run — do not call it again. Continue without it, or say what you are unable to do.]"
    )


async def test_a_checker_answering_a_non_decision_is_a_deny() -> None:
    """Answering ``True`` is not permission."""
    verdict = await evaluate_permission(checker(True), REQ)
    assert (verdict.result, verdict.failed, verdict.rationale) == (
        "deny",
        True,
        "permission-checker returned a bool, not a PermissionDecision",
    )


def test_a_decision_with_an_unknown_result_is_refused() -> None:
    """Only allow, deny, halt."""
    with pytest.raises(ValueError, match=r"^PermissionDecision: result is 'allow', 'deny' or 'halt', got 'maybe'$"):
        PermissionDecision("maybe")  # type: ignore[arg-type]


def test_a_checker_without_check_is_refused() -> None:
    """The builder refuses an object with no check()."""
    with pytest.raises(
        PermissionDefinitionError,
        match=r"^permission_checker \(SimpleNamespace\) has no check\(request\) method: give it "
        r"check\(request\) returning PermissionDecision\.allow\(\), \.deny\(rationale\) or "
        r"\.halt\(reason\)$",
    ):
        validate_permission_checker(NS(name="x"))


def test_a_checker_with_check_is_accepted() -> None:
    """It comes back unchanged."""
    c = checker(PermissionDecision.allow())
    assert validate_permission_checker(c) is c
