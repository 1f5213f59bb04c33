"""One codec: every loader of untrusted JSON refuses the same input the same way.

The wire values governance reads back (check-in requests, asks, decisions, evidence, drivers),
the agent's pause payloads (``PausedCall``, ``PauseData``) and a run's failure
(``RunFailure.from_dict``) load through ``flowchart._core.serde.structure``: the limits of
``flowchart._core.untrusted`` and a strict converter, one ``CheckpointError`` naming the path.
Before, each had its own hand-written checks, and each let through something the checkpoint
loader refuses (a lone surrogate, a NaN or an infinity, a value nested past the limit, an
unknown key): values that loaded and then failed to save. The tests below show each of those
refused by every loader in the same words, and fuzz each loader with mutated real documents:
accepted (and then saved as strict JSON), or a ``CheckpointError`` — nothing else.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutate

from agent._chart.state import PauseData, PausedCall
from flowchart import Checkpoint, CheckpointError, Redaction
from flowchart._core.failure import RunFailure
from flowchart._core.pause import ResumeFrame
from flowchart._core.untrusted import MAX_DEPTH
from governance import CheckInDecision, CheckInRequest, Driver, MiddlewareAsk, WireFormatError

REQUEST = {
    "id": "chk_1",
    "tool": "refund",
    "args": {"order_id": "A1", "amount": 129.0},
    "intent": "Refunding the order.",
    "evidence": {
        "will_do": "refund order_id=A1 amount=129.0",
        "read": [{"id": "task-1", "channel": "task", "summary": "refund A1"}],
        "drivers": [{"id": "task-1", "channel": "task", "text": "refund A1", "score": 0.5}],
        "trail": {"iteration": 1, "tool_calls": [{"name": "lookup", "ok": True}], "summary": "one call"},
    },
}
ASK = {
    "id": "ask_1",
    "question": "Refund?",
    "detail": {"limit": 100},
    "middleware": "risk",
    "tool": "refund",
    "args": {"order_id": "A1"},
    "tool_call_id": "c1",
}
DECISION = {"request_id": "chk_1", "approved": True, "by": "alice", "note": "ok", "at": "2026-01-01T00:00:00.000Z"}
DRIVER = {"id": "task-1", "channel": "task", "text": "refund A1", "score": 0.5}
FAILURE = {"error_type": "ValueError", "message": "boom", "stage_id": "call", "runtime_stage_id": "call#1"}
PAUSED = {
    "kind": "ask",
    "tool_call_id": "c1",
    "tool_name": "refund",
    "args": {"order_id": "A1"},
    "ask_index": 0,
    "middleware": "risk",
    "request_id": "ask_1",
    "position": {"iteration": 1},
    "index": 0,
}
PAUSE_DATA = {"kind": "check_in", "tool_call_id": "c1", "tool_name": "refund", "check_in": REQUEST}

# (loader, a real document it reads, the string field and the free-JSON field of that document)
LOADERS: dict[str, tuple[Callable[[Any], Any], dict[str, Any], str, str]] = {
    "CheckInRequest": (CheckInRequest.from_dict, REQUEST, "tool", "args"),
    "MiddlewareAsk": (MiddlewareAsk.from_dict, ASK, "question", "detail"),
    "CheckInDecision": (CheckInDecision.from_dict, DECISION, "by", "value"),
    "Driver": (Driver.from_dict, DRIVER, "text", "score"),
    "RunFailure": (RunFailure.from_dict, FAILURE, "message", "stage_id"),
    "PausedCall": (lambda data: PausedCall.from_dict(data, "$"), PAUSED, "tool_name", "args"),
    "PauseData": (lambda data: PauseData.from_dict(data, "$"), PAUSE_DATA, "tool_name", "check_in"),
}


RULE = {"keys": ["ssn"], "patterns": [["^tok", 0]], "fields": {"profile": ["card"]}}
#: every converted loader and a real document it reads (the rule a store keeps with a run too)
FUZZED: dict[str, tuple[Callable[[Any], Any], dict[str, Any]]] = {
    **{name: (loader, base) for name, (loader, base, _text, _free) in LOADERS.items()},
    "Redaction": (Redaction.from_dict, RULE),
}


def nest(depth: int) -> Any:
    """A value of ``depth`` nested lists."""
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def checkpoint_refusal(value: Any) -> str:
    """What the checkpoint loader says of ``value`` in its state (the reference wording)."""
    cp = Checkpoint(
        shared_state={},
        paused_stage_id="s",
        subflow_path=[],
        pause_data=None,
        subflow_states={},
        execution_count=1,
        visit_counts={"s": 1},
        invoker_stage_id=None,
        continuation_stage_id=None,
        paused_at=0.0,
        chart_fingerprint="f",
        frames=[ResumeFrame("s", "stage")],
    )
    raw = {**cp.to_dict(), "shared_state": {"x": value}}
    with pytest.raises(CheckpointError) as caught:
        Checkpoint.from_dict(raw)
    return str(caught.value).split(": ", 1)[1].rsplit(" @ ", 1)[0]


def test_each_loader_is_a_documented_error() -> None:
    """The loaders' errors are one tree: governance's ``WireFormatError`` is a ``CheckpointError``."""
    assert issubclass(WireFormatError, CheckpointError)
    for loader, base, _text, _free in LOADERS.values():
        assert loader(json.loads(json.dumps(base))) is not None


BAD = {
    "a lone surrogate in a string": (
        "text",
        "\ud800",
        "a lone surrogate in a string (valid JSON, but not Unicode text)",
    ),
    "an infinite number": ("free", float("inf"), "expected a JSON value: a non-finite float (inf)"),
    "a value nested past the limit": ("free", nest(MAX_DEPTH + 5), f"nested deeper than {MAX_DEPTH} levels"),
}


@pytest.mark.parametrize("loader_name", list(LOADERS))
@pytest.mark.parametrize("case", list(BAD))
def test_what_the_checkpoint_refuses_every_loader_refuses_in_the_same_words(loader_name: str, case: str) -> None:
    """Before, these loaded (each loader checked only types, by hand) and then failed to save
    (``to_json``: ``UnicodeEncodeError``, ``ValueError: Out of range float values``,
    ``RecursionError``). Now each is a ``CheckpointError`` naming the field's path, in the
    words the checkpoint loader uses for the same value."""
    loader, base, text_field, free_field = LOADERS[loader_name]
    where, value, words = BAD[case]
    field = text_field if where == "text" else free_field
    data = {**json.loads(json.dumps(base)), field: value}
    with pytest.raises(CheckpointError) as caught:
        loader(data)
    message = str(caught.value)
    assert words in message, message
    assert caught.value.path is not None and caught.value.path.startswith(f"$.{field}"), caught.value.path
    assert words == checkpoint_refusal(value)


@pytest.mark.parametrize("loader_name", ["PausedCall", "PauseData", "RunFailure"])
def test_an_unknown_key_is_refused_as_governance_and_checkpoints_refuse_it(loader_name: str) -> None:
    """Before, the agent's pause payloads ignored keys they did not know (governance's values and
    checkpoints refused them) and ``RunFailure`` said so without a path; now every loader
    refuses the key in the converter's words, naming it."""
    loader, base, _text, _free = LOADERS[loader_name]
    with pytest.raises(CheckpointError, match=r"unknown key\(s\) smuggled @ \$$"):
        loader({**json.loads(json.dumps(base)), "smuggled": 1})


def test_a_run_failure_names_the_path_of_its_bad_field() -> None:
    """Before: a ``ValueError`` with no path ("run failure field 'message' must be a string").
    Now the one codec's ``CheckpointError`` naming the field, like any stored value."""
    with pytest.raises(
        CheckpointError, match=r"^Invalid run failure: expected a string, got an integer @ \$\.message$"
    ):
        RunFailure.from_dict({**FAILURE, "message": 3})


def test_a_decision_read_inside_a_document_names_its_full_path() -> None:
    """The path a loader is given is where the value sits: errors name the whole path."""
    with pytest.raises(WireFormatError, match=r"^\$\.answer\.approved: expected a boolean, got a string$") as caught:
        CheckInDecision.from_dict({**DECISION, "approved": "yes"}, "$.answer")
    assert caught.value.path == "$.answer.approved"


def _saved(value: Any) -> None:
    """Whatever loads can be saved as strict JSON (UTF-8, no NaN), and reads back the same."""
    data = value.to_dict()
    json.dumps(data, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert type(value).from_dict(data) == value


@pytest.mark.parametrize("loader_name", list(FUZZED))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_each_loader_accepts_and_saves_or_refuses_with_checkpoint_error(
    loader_name: str, rng: random.Random
) -> None:
    """Mutated real documents (``mutations.py``): loaded and then saved, or one ``CheckpointError``."""
    loader, base = FUZZED[loader_name]
    text = mutate(base, rng)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return  # not a document the dict loaders are given (the text loaders' fuzz covers it)
    try:
        value = loader(data)
    except CheckpointError as exc:
        assert exc.path is not None and exc.path.startswith("$"), exc
        return
    _saved(value)
