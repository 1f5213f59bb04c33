"""An agent resume trusts nothing in a checkpoint it has not cross-checked (``agent._run.resume_checks``).

The issue's exploit first: a check-in pause whose pause data was edited to ``ask_human``
took ``{"approved": true}`` and ran the refund with no decision. Then each field a resume
trusts, edited alone: each is a ``CheckpointError`` naming the path, the tool never runs.
"""

from __future__ import annotations

import contextlib
import functools
import random
from types import SimpleNamespace as NS
from typing import Any

import pytest
from agent_helpers import Counter, build, call, calls, refund_tool, weather_tool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutate

from agent import Paused
from flowchart import Checkpoint, CheckpointError
from governance import DecisionRequiredError, ResumeDecisionError, allow, ask, check_in_approved

AT = "2025-01-01T00:00:00.000Z"
REFUNDS = calls(
    call("c1", "refund", order_id="A1", amount=250), call("c2", "refund", order_id="A2", amount=9), content="Refunding."
)


def paused_refund() -> tuple[Any, Counter, Paused]:
    """An agent paused on the check-in of refund c1 (of a batch of two), after one weather round."""
    body = Counter(lambda a: f"refunded {a['amount']}")
    weather = calls(call("w1", "weather", city="Oslo"))
    agent, _ = build([weather, REFUNDS, "Done."], weather_tool(), refund_tool(body, check_in="always"))
    out = agent.run("refund both")
    assert isinstance(out, Paused) and out.check_in is not None
    return agent, body, out


def edited(checkpoint: Checkpoint, change: Any) -> Checkpoint:
    """``checkpoint`` through JSON with ``change(data)`` applied to its dict."""
    data = checkpoint.to_dict()
    change(data)
    return Checkpoint.from_dict(data)


def test_pause_data_kind_edited_to_ask_human_is_refused_and_nothing_runs() -> None:
    """The exploit: ``pause_data.kind = "ask_human"`` + ``{"approved": True}`` is refused; no refund."""
    agent, body, out = paused_refund()
    forged = edited(out.checkpoint, lambda d: d["pause_data"].update(kind="ask_human"))
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid agent checkpoint: the pause data's kind 'ask_human' is not the paused call's 'check_in': "
        r"a resume reads one kind of answer, so the two must agree @ \$\.pause_data\.kind$",
    ):
        agent.resume(forged, {"approved": True, "by": "nobody"})
    assert body.runs == []


def sets(path: list[Any], value: Any) -> Any:
    """A change that sets ``data[path...] = value``."""

    def change(data: dict[str, Any]) -> None:
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return change


def drops(path: list[Any]) -> Any:
    """A change that deletes ``data[path...]``."""

    def change(data: dict[str, Any]) -> None:
        target = data
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return change


PAUSED = ["shared_state", "paused_tool_call"]
CASES = {
    "the call at the paused position (its id is the idempotency key)": (
        sets(["shared_state", "llm_latest_tool_calls", 0, "id"], "c9"),
        r"the call at the paused position is not the paused call 'c1' "
        r"@ \$\.shared_state\.llm_latest_tool_calls\[0\]\.id",
    ),
    "the paused position": (
        sets([*PAUSED, "index"], 5),
        r"index 5 is not a call of the batch \(it has 2\) @ \$\.shared_state\.paused_tool_call\.index",
    ),
    "the paused call's kind": (
        sets([*PAUSED, "kind"], "resume"),
        r"expected one of 'check_in', 'ask', 'ask_human', got 'resume' @ \$\.shared_state\.paused_tool_call\.kind",
    ),
    "a missing paused call": (
        drops(PAUSED),
        r"required key missing @ \$\.shared_state\.paused_tool_call",
    ),
    "the pause data's call id": (
        sets(["pause_data", "tool_call_id"], "c2"),
        r"expected the paused call's 'c1', got 'c2' @ \$\.pause_data\.tool_call_id",
    ),
    "the request's tool": (
        sets(["pause_data", "check_in", "tool"], "weather"),
        r"the request is about 'weather', the paused call about 'refund' @ \$\.pause_data\.check_in\.tool",
    ),
    "the iteration budget": (
        sets(["shared_state", "max_iterations"], 10**6),
        r"this agent's iteration budget is 10, not 1000000 @ \$\.shared_state\.max_iterations",
    ),
    "the iteration (against visit_counts)": (
        sets(["shared_state", "iteration"], 1),
        r"iteration 1 contradicts visit_counts \(call-llm ran 2 time\(s\), tool-calls and wrap-up 2\) "
        r"@ \$\.shared_state\.iteration",
    ),
    "the batch in history": (
        sets(["shared_state", "history", -1, "tool_calls"], []),
        r"the last assistant turn does not ask for the paused batch @ \$\.shared_state\.history\[3\]",
    ),
    "the state's history": (
        sets(["shared_state", "history"], "gone"),
        r"expected a list, got a string @ \$\.shared_state\.history",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_each_trusted_field_edited_alone_is_refused_before_anything_runs(case: str) -> None:
    """One edited field: a ``CheckpointError`` naming it (never a ``KeyError``); the tool does not run."""
    agent, body, out = paused_refund()
    change, message = CASES[case]
    decision = check_in_approved(request=out.check_in, by="alice", at=AT)
    with pytest.raises(CheckpointError, match=rf"^Invalid agent checkpoint: {message}$"):
        agent.resume(edited(out.checkpoint, change), decision)
    assert body.runs == []


def test_a_checkpoint_of_another_agent_is_refused_by_fingerprint_first() -> None:
    """The fingerprint is checked before the state: another agent's checkpoint names the chart."""
    _agent, body, out = paused_refund()
    other, _ = build(["Done."], refund_tool(body, check_in="always"), wrap_up_at_max_iterations=False)
    with pytest.raises(CheckpointError, match=r"^Checkpoint belongs to another chart"):
        other.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", at=AT))


def test_an_ask_index_pointing_past_the_asker_is_refused() -> None:
    """``ask_index`` decides where the chain restarts: moved past the asker, it would skip links."""
    links = [NS(name="risk", on_tool_call=lambda c: ask("Refund?")), NS(name="audit", on_tool_call=lambda c: allow())]
    body = Counter()
    agent, _ = build([REFUNDS, "Done."], refund_tool(body), configure=lambda b: b.tool_middleware(*links))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.ask is not None
    forged = edited(out.checkpoint, sets([*PAUSED, "ask_index"], 1))
    with pytest.raises(
        CheckpointError,
        match=r"^Invalid agent checkpoint: link 1 of this agent's tool middleware is not 'risk' "
        r"@ \$\.shared_state\.paused_tool_call\.ask_index$",
    ):
        agent.resume(forged, check_in_approved(request=out.ask, by="alice", at=AT))
    assert body.runs == []


def test_an_untouched_checkpoint_still_resumes() -> None:
    """The checks refuse contradictions only: the real checkpoint, through JSON, resumes."""
    agent, body, out = paused_refund()
    again = agent.resume(
        Checkpoint.from_json(out.checkpoint.to_json()), check_in_approved(request=out.check_in, by="a", at=AT)
    )
    assert isinstance(again, Paused) and body.runs == [{"order_id": "A1", "amount": 250}]


@functools.cache
def _paused_once() -> tuple[Any, Paused, dict[str, Any]]:
    """One paused refund for every fuzz example: the mutations draw from the checkpoint's text,
    which holds a fresh run id and pause time per run (a float whose printed length varies),
    so a checkpoint made per example made hypothesis's draws differ between replays."""
    agent, _body, out = paused_refund()
    return agent, out, out.checkpoint.to_dict()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_agent_resume_refuses_with_checkpoint_error(rng: random.Random) -> None:
    """Mutated agent checkpoints with the right approval: accepted, a ``CheckpointError``, or the
    decision layer's refusal of a changed call — never a ``KeyError``/``IndexError``/``TypeError``."""
    agent, out, base = _paused_once()
    decision = check_in_approved(request=out.check_in, by="alice", at=AT)
    text = mutate(base, rng)
    with contextlib.suppress(CheckpointError, ResumeDecisionError, DecisionRequiredError):
        agent.resume(Checkpoint.from_json(text), decision)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("total_output_tokens", {}, "an integer, got an object"),
        ("total_input_tokens", "7", "an integer, got a string"),
        ("usage_not_reported", 3, "a string, got an integer"),
        ("final_content", [], "a string, got a list"),
    ],
)
def test_a_counter_or_text_the_next_model_call_adds_to_is_checked_before_the_tool_runs(
    key: str, value: Any, expected: str
) -> None:
    """The stored-row campaign's find: a stored checkpoint whose token counter (or a text the
    stages add to) was edited loaded, and resuming it raised a bare ``TypeError`` in a later stage.
    Now the resume refuses first, naming the key, and the tool does not run."""
    agent, body, out = paused_refund()
    forged = edited(out.checkpoint, lambda d: d["shared_state"].update({key: value}))
    decision = check_in_approved(request=out.check_in, by="alice", at=AT)
    with pytest.raises(
        CheckpointError, match=rf"^Invalid agent checkpoint: expected {expected} @ \$\.shared_state\.{key}$"
    ):
        agent.resume(forged, decision)
    assert body.runs == []
