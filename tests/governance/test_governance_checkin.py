"""Check-in requests and middleware asks: ids bound to the exact call, the request shape,
evidence options, and the predicate gate that fails toward asking."""

from __future__ import annotations

import re
from types import SimpleNamespace as NS
from typing import Any

import pytest

from governance import (
    CheckInConfigError,
    CheckInEvidence,
    CheckInPredicateContext,
    CheckInRequest,
    ToolCallInfo,
    allow,
    ask,
    lexical_driver_scorer,
    standard_evidence,
)
from governance.chains import run_tool_chain
from governance.checkin import (
    ask_request_id,
    build_check_in_request,
    build_middleware_ask,
    check_in_request_id,
    history_for_check_in,
    resolve_check_in_config,
    should_check_in,
    validate_check_in_demand,
)
from governance.evidence import minimal_evidence

HISTORY = [
    {"role": "user", "content": "Refund order 42, it arrived broken."},
    {"role": "tool", "content": "order 42: 500 USD", "tool_name": "lookup", "tool_call_id": "t0"},
]
CTX = CheckInPredicateContext(iteration=2, tool_call_id="t1", history=HISTORY)


async def request(**overrides: Any) -> CheckInRequest:
    """A refund check-in request over HISTORY."""
    values: dict[str, Any] = {
        "tool_name": "refund",
        "tool_description": "Issue a refund to the customer.",
        "args": {"order": 42, "amount": 500},
        "tool_call_id": "t1",
        "iteration": 2,
        "identity": {"tenant": "acme"},
        "intent": "The item arrived broken, so I will refund it.",
        "system_prompt": "You are support. Refunds need approval.",
        "history": HISTORY,
    }
    values.update(overrides)
    return await build_check_in_request(**values)


def test_the_request_id_is_an_opaque_deterministic_fingerprint() -> None:
    """Same call, same id, shaped ``cki_`` + 32 hex digits."""
    a = check_in_request_id(tool="refund", args={"amount": 500}, tool_call_id="t1", identity="u1")
    b = check_in_request_id(tool="refund", args={"amount": 500}, tool_call_id="t1", identity="u1")
    assert a == b
    assert re.fullmatch(r"cki_[0-9a-f]{32}", a)


@pytest.mark.parametrize(
    "change",
    [
        {"tool": "refund2"},
        {"args": {"amount": 501}},
        {"tool_call_id": "t2"},
        {"identity": "u2"},
        {"run_id": "run-b"},
        {"position": {"iteration": 2, "step": "tool-calls#9"}},
        {"position": {"iteration": 1, "step": "tool-calls#10"}},
    ],
)
def test_any_change_to_the_call_its_run_or_its_position_changes_the_id(change: dict[str, Any]) -> None:
    """The id is bound to the run, the pause's position, the tool, the args, the call id and the
    identity: the same call in another run, or paused again later, is another request."""
    base: dict[str, Any] = {
        "tool": "refund",
        "args": {"amount": 500},
        "tool_call_id": "t1",
        "identity": "u1",
        "run_id": "run-a",
        "position": {"iteration": 1, "step": "tool-calls#9"},
    }
    assert check_in_request_id(**base) == check_in_request_id(**base)
    assert check_in_request_id(**base) != check_in_request_id(**{**base, **change})
    ask_base = {**base, "middleware": "gate"}
    assert ask_request_id(**ask_base) != ask_request_id(**{**ask_base, **change})


def test_the_id_does_not_depend_on_key_order() -> None:
    """Canonical JSON: ``{"a", "b"}`` and ``{"b", "a"}`` are the same args."""
    one = check_in_request_id(tool="t", args={"a": 1, "b": 2}, tool_call_id="c")
    two = check_in_request_id(tool="t", args={"b": 2, "a": 1}, tool_call_id="c")
    assert one == two


def test_an_ask_id_differs_from_a_check_in_id_and_names_the_asker() -> None:
    """Asks use ``ask_`` ids that include the asking middleware."""
    call = {"tool": "t", "args": {}, "tool_call_id": "c"}
    a = ask_request_id(middleware="gate", **call)
    assert a.startswith("ask_") and a != ask_request_id(middleware="other", **call)
    assert a[4:] != check_in_request_id(**call)[4:]


async def test_a_request_has_id_tool_args_intent_and_evidence() -> None:
    """The request names the call it asks about and carries the standard pack."""
    req = await request()
    assert req.id == check_in_request_id(
        tool="refund",
        args={"order": 42, "amount": 500},
        tool_call_id="t1",
        identity={"tenant": "acme"},
    )
    assert (req.tool, req.args, req.intent) == (
        "refund",
        {"order": 42, "amount": 500},
        "The item arrived broken, so I will refund it.",
    )
    assert req.evidence.will_do == "Issue a refund to the customer. — with order=42, amount=500"
    assert req.evidence.read is not None
    assert [(f.id, f.summary) for f in req.evidence.read] == [
        ("system-1", "You are support."),
        ("system-2", "Refunds need approval."),
        ("task-1", "Refund order 42, it arrived broken."),
        ("result-1", "lookup: order 42: 500 USD"),
    ]
    assert req.evidence.drivers is not None and req.evidence.drivers[0].id == "task-1"
    assert req.evidence.trail is not None
    assert req.evidence.trail.summary == "1 tool run over 2 iterations"


async def test_an_empty_intent_is_absent() -> None:
    """No assistant text alongside the call: no intent key."""
    req = await request(intent="  ")
    assert req.intent is None
    assert "intent" not in req.to_dict()


async def test_minimal_evidence_carries_will_do_only() -> None:
    """``evidence="minimal"``: the pack has will_do and nothing else."""
    req = await request(evidence="minimal")
    assert req.to_dict()["evidence"] == {"will_do": "Issue a refund to the customer. — with order=42, amount=500"}


async def test_a_custom_assembler_builds_the_pack() -> None:
    """A callable ``evidence`` is the assembler (a dict answer is read strictly)."""
    req = await request(evidence=lambda inp: {"will_do": f"custom {inp.tool_name}"})
    assert req.evidence == CheckInEvidence(will_do="custom refund")


async def test_an_assembler_answering_something_else_is_refused() -> None:
    """A custom assembler must return evidence."""
    with pytest.raises(
        CheckInConfigError,
        match=r"^check_in\(evidence=\.\.\.\): the assembler returned a str, not a CheckInEvidence$",
    ):
        await request(evidence=lambda inp: "nope")


def test_the_default_config_is_standard_with_the_lexical_scorer() -> None:
    """No options: standard evidence, lexical scorer."""
    config = resolve_check_in_config()
    assert (config.assembler, config.scorer) == (standard_evidence, lexical_driver_scorer)


def test_minimal_config_uses_the_minimal_assembler() -> None:
    """``"minimal"`` resolves to the minimal assembler."""
    assert resolve_check_in_config("minimal").assembler is minimal_evidence


def test_a_scorer_with_minimal_evidence_is_refused() -> None:
    """A scorer would never be called: refused at build."""
    with pytest.raises(
        CheckInConfigError,
        match=r'^check_in\(evidence="minimal", scorer=\.\.\.\): a scorer has no effect with '
        r'evidence="minimal", which gathers will_do only\. Drop the scorer or use '
        r'evidence="standard"\.$',
    ):
        resolve_check_in_config("minimal", lexical_driver_scorer)


def test_an_unknown_evidence_option_is_refused() -> None:
    """Only standard, minimal or a function."""
    with pytest.raises(
        CheckInConfigError,
        match=r'^check_in\(evidence=\.\.\.\): expected "standard", "minimal" or an assembler '
        r"function, got 'full'$",
    ):
        resolve_check_in_config("full")  # type: ignore[arg-type]


def test_a_scorer_that_is_not_callable_is_refused() -> None:
    """A scorer is a function."""
    with pytest.raises(
        CheckInConfigError,
        match=r"^check_in\(scorer=\.\.\.\): a scorer is a function ScoreInput -> drivers, "
        r"got an int$",
    ):
        resolve_check_in_config("standard", 3)  # type: ignore[arg-type]


def test_the_system_prompt_leads_the_check_in_history() -> None:
    """A non-empty system prompt becomes the first (system) message; an empty one is skipped."""
    assert history_for_check_in("Be nice.", HISTORY)[0] == {"role": "system", "content": "Be nice."}
    assert history_for_check_in("", HISTORY) == tuple(HISTORY)


async def test_no_demand_never_trips_and_always_always_does() -> None:
    """None: no check-in; ``"always"``: every call."""
    assert await should_check_in(None, {}, CTX) is False
    assert await should_check_in("always", {}, CTX) is True


async def test_a_predicate_trips_only_when_it_returns_true() -> None:
    """amount > 100 trips for 500, not for 5; a truthy non-True does not trip."""
    big = lambda args, ctx: args["amount"] > 100  # noqa: E731
    assert await should_check_in(big, {"amount": 500}, CTX) is True
    assert await should_check_in(big, {"amount": 5}, CTX) is False
    assert await should_check_in(lambda a, c: "yes", {}, CTX) is False


async def test_an_async_predicate_is_awaited() -> None:
    """Predicates may be async."""

    async def big(args: Any, ctx: Any) -> bool:
        return True

    assert await should_check_in(big, {}, CTX) is True


async def test_a_predicate_that_raises_trips_the_gate() -> None:
    """Fail toward asking a person."""

    def broken(args: Any, ctx: Any) -> bool:
        raise KeyError("amount")

    assert await should_check_in(broken, {}, CTX) is True


async def test_a_predicate_cannot_change_what_runs() -> None:
    """Writing into its frozen copy raises (which trips), and the real args are untouched."""
    args = {"amount": 500, "items": [1, 2]}

    def meddle(a: Any, ctx: Any) -> bool:
        a["amount"] = 1
        return False

    assert await should_check_in(meddle, args, CTX) is True
    assert args == {"amount": 500, "items": [1, 2]}


async def test_the_predicate_gets_the_context() -> None:
    """ctx carries iteration, call id and history."""
    seen: list[CheckInPredicateContext] = []
    await should_check_in(lambda a, c: seen.append(c) or False, {}, CTX)
    assert (seen[0].iteration, seen[0].tool_call_id, seen[0].history) == (2, "t1", tuple(HISTORY))


def test_an_unknown_demand_is_refused_at_definition() -> None:
    """check_in= is None, "always" or a predicate."""
    with pytest.raises(
        CheckInConfigError,
        match=r'^check_in=\.\.\.: expected None, "always" or a predicate\(args, ctx\) -> bool, '
        r"got 'never'$",
    ):
        validate_check_in_demand("never")


async def test_a_middleware_ask_payload_names_the_call_and_the_asker() -> None:
    """The pause payload: id, question, detail, middleware, tool, args (transformed), call id."""
    cap = NS(name="cap", on_tool_call=lambda c: allow({"amount": 1000}, "cap"))
    gate = NS(name="gate", on_tool_call=lambda c: ask("approve?", {"why": "big"}))
    call = ToolCallInfo("refund", "t1", 2, {"amount": 5000}, identity="u1")
    result = await run_tool_chain([cap, gate], call)
    payload = build_middleware_ask(result, call)
    assert payload.to_dict() == {
        "id": ask_request_id(
            middleware="gate",
            tool="refund",
            args={"amount": 1000},
            tool_call_id="t1",
            identity="u1",
        ),
        "question": "approve?",
        "detail": {"why": "big"},
        "middleware": "gate",
        "tool": "refund",
        "args": {"amount": 1000},
        "tool_call_id": "t1",
    }


async def test_a_middleware_ask_needs_an_ask_verdict() -> None:
    """Only an ask verdict has an ask payload."""
    call = ToolCallInfo("t", "c", 1, {})
    result = await run_tool_chain([], call)
    with pytest.raises(ValueError, match=r"^build_middleware_ask: the chain's verdict is 'allow', not 'ask'$"):
        build_middleware_ask(result, call)


def test_request_ids_are_pinned_byte_for_byte() -> None:
    """A request id is the hash of canonical JSON (flowchart's spelling): ids stored in old
    checkpoints must still match, so these known values never change."""
    from governance.checkin import ask_human_request_id, ask_request_id, check_in_request_id

    args = {"amount": 1.5, "who": "Zoë", "tags": ("a", "b"), "n": {"b": 1, "a": [True, None]}}
    position = {"iteration": 2, "step": "call-tools#3"}
    assert [
        check_in_request_id(
            tool="refund", args=args, tool_call_id="tc_1", identity={"user": "u1"}, run_id="run-7", position=position
        ),
        ask_request_id(middleware="m", tool="refund", args={"x": 1}, tool_call_id="tc_1"),
        ask_human_request_id(tool="t", tool_call_id="c"),
    ] == [
        "cki_6a7a9c2830c4207417d8a703a4119029",
        "ask_f172082395dce3d9eab80d6f51ef642c",
        "hum_384afc3dbbda377dd2194c3e8502ac2b",
    ]
