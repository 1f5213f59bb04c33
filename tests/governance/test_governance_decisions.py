"""A person's answer: decisions name their request, consent pauses take nothing else, and
a decision answers its request, that call, once."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace as NS

import pytest

from governance import (
    CheckInDecision,
    CheckInEvidence,
    CheckInRequest,
    DecisionInputError,
    DecisionRequiredError,
    MiddlewareAsk,
    ResumeDecisionError,
    check_in_approved,
    check_in_declined,
)
from governance.checkin import check_in_request_id
from governance.decisions import declined_result, is_check_in_decision, require_decision, verify_decision

REQUEST = CheckInRequest(
    id="cki_abc",
    tool="refund",
    args={"amount": 500},
    intent=None,
    evidence=CheckInEvidence(will_do="Refund — with amount=500"),
)
AT = "2025-01-02T03:04:05.678Z"


def test_an_approval_names_the_request_and_who_decided() -> None:
    """``check_in_approved`` records request id, approval, by, note and the given time."""
    decision = check_in_approved(request=REQUEST, by="alice", note="verified", at=AT)
    assert decision == CheckInDecision(
        request_id="cki_abc", approved=True, by="alice", note="verified", at=AT, value=None
    )


def test_a_decline_without_note_has_no_note_key() -> None:
    """An absent note is omitted from the dict, not None."""
    decision = check_in_declined(request=REQUEST, by="bob", at=AT)
    assert decision.to_dict() == {"request_id": "cki_abc", "approved": False, "by": "bob", "at": AT}


def test_an_empty_note_counts_as_none() -> None:
    """``note=""`` is no note."""
    assert check_in_approved(request=REQUEST, by="a", note="", at=AT).note is None


def test_the_default_time_is_iso_utc() -> None:
    """Without ``at``, the decision is stamped with the current UTC time."""
    stamp = check_in_approved(request=REQUEST, by="a").at
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", stamp)


@pytest.mark.parametrize(
    "request_",
    [
        MiddlewareAsk("ask_1", "q?", None, "gate", "refund", {}, "t1"),
        {"id": "ask_1", "question": "q?"},
        NS(id="ask_1"),
    ],
)
def test_the_request_may_be_an_ask_a_dict_or_any_object_with_an_id(request_: object) -> None:
    """Only the request's ``id`` is read."""
    assert check_in_approved(request=request_, by="a", at=AT).request_id == "ask_1"


@pytest.mark.parametrize(
    ("request_", "shape"),
    [(None, "nothing"), ({"x": 1}, "a dict with keys ['x']"), ("cki_abc", "a str")],
)
def test_a_request_without_an_id_is_refused(request_: object, shape: str) -> None:
    """A TypeError naming the shape of what came instead."""
    with pytest.raises(
        TypeError,
        match=r"^check_in_approved\(request=\.\.\.\): expected the paused request "
        r"\(paused\.check_in "
        r"or paused\.ask\), which has an 'id'; got " + re.escape(shape) + "$",
    ):
        check_in_approved(request=request_, by="a")


def test_an_empty_by_is_refused() -> None:
    """Someone decided: say who."""
    with pytest.raises(
        DecisionInputError,
        match=r"^check_in_declined\(by=\.\.\.\): say who decided, as a non-empty string; got a "
        r"str$",
    ):
        check_in_declined(request=REQUEST, by=" ")


def test_a_non_string_note_is_refused() -> None:
    """A note is text."""
    with pytest.raises(
        DecisionInputError,
        match=r"^check_in_approved\(note=\.\.\.\): a note is a string; got an int$",
    ):
        check_in_approved(request=REQUEST, by="a", note=5)  # type: ignore[arg-type]


def test_a_value_that_is_not_json_safe_is_refused() -> None:
    """The value travels in the checkpoint."""
    with pytest.raises(
        DecisionInputError,
        match=r"^check_in_approved\(value=\.\.\.\): a decision's value must be JSON-safe \(it "
        r"travels "
        r"in the checkpoint\); got a set$",
    ):
        check_in_approved(request=REQUEST, by="a", value={1, 2})


def test_a_non_string_timestamp_is_refused() -> None:
    """``at`` is ISO text."""
    with pytest.raises(
        DecisionInputError,
        match=r"^check_in_approved\(at=\.\.\.\): a timestamp is an ISO-8601 string; got an int$",
    ):
        check_in_approved(request=REQUEST, by="a", at=5)  # type: ignore[arg-type]


def test_a_decision_value_survives_json() -> None:
    """A decision on an ask with a value, and one with edited args, round-trip through JSON text."""
    ask = MiddlewareAsk("ask_1", "q?", None, "gate", "refund", {}, "t1")
    valued = check_in_approved(request=ask, by="a", value={"row": 3, "pick": ["x"]}, at=AT)
    edited = check_in_approved(request=REQUEST, by="a", args={"amount": 100}, at=AT)
    for decision in (valued, edited):
        assert CheckInDecision.from_dict(json.loads(json.dumps(decision.to_dict()))) == decision
    assert edited.to_dict()["args"] == {"amount": 100}


def test_declined_result_is_what_the_model_reads() -> None:
    """``declined by human[: <note>]``."""
    assert [declined_result(), declined_result("amount too high")] == [
        "declined by human",
        "declined by human: amount too high",
    ]


def test_is_check_in_decision_recognises_only_decisions() -> None:
    """A decision yes; its dict, a string, None no."""
    decision = check_in_approved(request=REQUEST, by="a", at=AT)
    assert [is_check_in_decision(x) for x in (decision, decision.to_dict(), "yes", None)] == [
        True,
        False,
        False,
        False,
    ]


def test_require_decision_returns_a_decision() -> None:
    """A decision passes through."""
    decision = check_in_approved(request=REQUEST, by="a", at=AT)
    assert require_decision(decision, gate="check_in", tool_name="refund") is decision


def test_a_string_answer_to_an_ask_is_refused_with_its_shape_only() -> None:
    """The error names the gate, asker, tool and shape — never the text."""
    with pytest.raises(
        DecisionRequiredError,
        match=r"^\[resume\] this run paused on a consent gate — a tool middleware's "
        r"ask",
    ) as caught:
        require_decision("yes go ahead", gate="ask", tool_name="act", middleware="gate")
    err = caught.value
    assert (err.gate, err.tool_name, err.middleware, err.received, err.code) == (
        "ask",
        "act",
        "gate",
        "a str",
        "ERR_DECISION_REQUIRED",
    )
    assert str(err) == (
        "[resume] this run paused on a consent gate — a tool middleware's ask (asked by 'gate') "
        "on tool 'act' — and a consent gate is answered with a DECISION, not a value. Got a str. "
        "Resume with check_in_approved(request=paused.ask, by=...) or "
        "check_in_declined(request=paused.ask, by=..., note=...)."
    )
    assert "yes go ahead" not in str(err)


def test_a_dict_answer_to_a_check_in_is_described_by_its_keys() -> None:
    """A decision-shaped dict is not a decision; the error lists its keys."""
    with pytest.raises(
        DecisionRequiredError,
        match=r"^\[resume\] this run paused on a consent gate — a tool's check-in on tool 'refund' "
        r"— "
        r"and a consent gate is answered with a DECISION, not a value\. Got a dict with keys "
        r"\['approved', 'by'\]\. Resume with check_in_approved\(request=paused\.check_in, "
        r"by=\.\.\.\) "
        r"or check_in_declined\(request=paused\.check_in, by=\.\.\., note=\.\.\.\)\.$",
    ):
        require_decision({"approved": True, "by": "x"}, gate="check_in", tool_name="refund")


def test_no_answer_is_received_as_nothing() -> None:
    """``None`` is described as nothing."""
    with pytest.raises(
        DecisionRequiredError,
        match=r"^\[resume\] this run paused on a consent gate — a tool's check-in — .* "
        r"Got nothing\.",
    ) as caught:
        require_decision(None, gate="check_in")
    assert caught.value.received == "nothing"


def decision_for(request_id: str) -> CheckInDecision:
    """An approval for ``request_id``."""
    return check_in_approved(request={"id": request_id}, by="alice", at=AT)


def test_a_decision_for_the_pending_request_passes() -> None:
    """Same id, unchanged call, not used: no error."""
    verify_decision(decision_for("cki_1"), pending_request_id="cki_1", current_request_id="cki_1")


def test_a_decision_for_another_request_is_refused() -> None:
    """It names a different request."""
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'cki_2', but the run is paused on request 'cki_1'\. "
        r"Build the decision from the pending request: check_in_approved\(request=paused\.check_in "
        r"or paused\.ask, by=\.\.\.\)\.$",
    ) as caught:
        verify_decision(decision_for("cki_2"), pending_request_id="cki_1")
    assert (caught.value.problem, caught.value.request_id, caught.value.pending_request_id) == (
        "another-request",
        "cki_2",
        "cki_1",
    )


def test_a_decision_for_a_changed_call_is_refused() -> None:
    """The args that would run now are not the ones the person saw."""
    asked = check_in_request_id(tool="refund", args={"amount": 500}, tool_call_id="t1")
    now = check_in_request_id(tool="refund", args={"amount": 50000}, tool_call_id="t1")
    with pytest.raises(
        ValueError,
        match=rf"^this decision answers request '{asked}', but the call it was asked about has "
        r"changed since the ask \(its run, pause position, tool, arguments, call id or identity differ\), "
        r"so it cannot approve what would run now\.$",
    ) as caught:
        verify_decision(decision_for(asked), pending_request_id=asked, current_request_id=now)
    assert caught.value.problem == "changed-call"  # type: ignore[attr-defined]


def test_a_decision_used_twice_is_refused() -> None:
    """A request is answered once, a decline included."""
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'cki_1', which has already been answered: a "
        r"decision "
        r"answers its request once\. Ask again and decide on the pending request 'cki_1'\.$",
    ) as caught:
        verify_decision(decision_for("cki_1"), pending_request_id="cki_1", answered_ids={"cki_1"})
    assert caught.value.problem == "already-used"


def test_a_nan_value_is_refused_like_a_run_would_refuse_it() -> None:
    """JSON-safe is flowchart's rule: a NaN cannot be written into the checkpoint, so the
    decision refuses it up front instead of failing at the commit."""
    with pytest.raises(
        DecisionInputError,
        match=r"^check_in_approved\(value=\.\.\.\): a decision's value must be JSON-safe .*; got a float$",
    ):
        check_in_approved(request=REQUEST, by="a", value=float("nan"))


def test_edited_args_are_a_plain_deep_copy() -> None:
    """approve(args=...) keeps what the run would store: tuples become lists, and changing
    the caller's dict afterwards changes no decision."""
    edited = {"order": {"ids": (1, 2)}}
    decision = check_in_approved(request=REQUEST, by="a", args=edited)
    edited["order"]["ids"] = ()
    assert decision.args == {"order": {"ids": [1, 2]}}


def test_a_stored_decision_with_a_nan_value_is_refused_naming_the_field() -> None:
    """The wire reader checks with flowchart's rule too: a NaN read back is refused, by path."""
    from governance import CheckInDecision, WireFormatError

    row = check_in_approved(request=REQUEST, by="a").to_dict() | {"value": float("nan")}
    with pytest.raises(WireFormatError, match=r"^\$\.value: expected a JSON value: a non-finite float \(nan\)$"):
        CheckInDecision.from_dict(row)
