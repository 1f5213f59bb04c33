"""Everything that travels in a checkpoint round-trips through JSON, and malformed dicts
are refused with the path of the bad field."""

from __future__ import annotations

import json
from typing import Any

import pytest
import strategies as gs
from hypothesis import given

from governance import (
    CheckInDecision,
    CheckInEvidence,
    CheckInRequest,
    Driver,
    MiddlewareAsk,
    WireFormatError,
)


def through_json(data: dict[str, Any]) -> Any:
    """Serialise to JSON text and back."""
    return json.loads(json.dumps(data))


@given(gs.check_in_requests)
def test_check_in_requests_round_trip(request: CheckInRequest) -> None:
    """``from_dict(to_dict(r)) == r``, through JSON text."""
    assert CheckInRequest.from_dict(through_json(request.to_dict())) == request


@given(gs.middleware_asks)
def test_middleware_asks_round_trip(payload: MiddlewareAsk) -> None:
    """``from_dict(to_dict(a)) == a``, through JSON text."""
    assert MiddlewareAsk.from_dict(through_json(payload.to_dict())) == payload


@given(gs.decisions)
def test_decisions_round_trip(decision: CheckInDecision) -> None:
    """``from_dict(to_dict(d)) == d``, through JSON text."""
    assert CheckInDecision.from_dict(through_json(decision.to_dict())) == decision


@given(gs.evidence)
def test_evidence_round_trips(pack: CheckInEvidence) -> None:
    """Absent fields stay absent; present ones come back equal."""
    assert CheckInEvidence.from_dict(through_json(pack.to_dict())) == pack


def test_an_unknown_field_is_refused_with_its_path() -> None:
    """Fail closed: extra keys are not ignored."""
    data = {"request_id": "r", "approved": True, "by": "a", "at": "t", "extra": 1}
    with pytest.raises(WireFormatError, match=r"^\$: unknown key\(s\) extra$"):
        CheckInDecision.from_dict(data)


def test_a_missing_field_is_refused_with_its_path() -> None:
    """A required key must be present."""
    with pytest.raises(WireFormatError, match=r"^\$\.evidence\.will_do: required key missing$"):
        CheckInRequest.from_dict({"id": "i", "tool": "t", "args": {}, "evidence": {}})


def test_a_wrong_type_deep_inside_is_refused_with_its_path() -> None:
    """The path reaches into lists."""
    evidence = {"will_do": "w", "read": [{"id": "s", "channel": "system", "summary": 3}]}
    with pytest.raises(
        WireFormatError, match=r"^\$\.evidence\.read\[0\]\.summary: expected a string, got an integer$"
    ) as caught:
        CheckInRequest.from_dict({"id": "i", "tool": "t", "args": {}, "evidence": evidence})
    assert caught.value.path == "$.evidence.read[0].summary"


def test_a_bool_is_not_a_score() -> None:
    """Numbers are numbers, not booleans."""
    with pytest.raises(WireFormatError, match=r"^\$\.score: expected a number, got a boolean$"):
        Driver.from_dict({"id": "d", "channel": "task", "text": "x", "score": True})


def test_a_non_dict_is_refused() -> None:
    """The top level must be a dict."""
    with pytest.raises(WireFormatError, match=r"^\$: expected an object, got a list$"):
        MiddlewareAsk.from_dict([])


def test_args_must_be_json_safe() -> None:
    """Args read back are JSON-safe dicts."""
    with pytest.raises(WireFormatError, match=r"^\$\.args: expected an object, got a list$"):
        CheckInRequest.from_dict({"id": "i", "tool": "t", "args": [], "evidence": {"will_do": "w"}})
