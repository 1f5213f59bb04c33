"""Consent on the real agent: middleware asks, tool check-ins, and the decisions that answer them."""

from __future__ import annotations

import re
from types import SimpleNamespace as NS
from typing import Any

import pytest
from agent_helpers import Counter, build, call, calls, refund_tool, tool_messages

from agent import Paused, define_tool
from flowchart import Checkpoint
from governance import (
    DecisionRequiredError,
    ResumeDecisionError,
    allow,
    ask,
    check_in_approved,
    check_in_declined,
    lexical_driver_scorer,
)
from governance.scorer import Driver

REFUND_CALL = calls(call("c1", "refund", order_id="A1", amount=250), content="Refunding now.")
AT = "2025-01-01T00:00:00.000Z"


class Links:
    """Three tool links — audit (allow), risk (asks over 100), later — recording every call."""

    def __init__(self, later_asks: bool = False) -> None:
        self.log: list[str] = []
        self.later_asks = later_asks

    def audit(self, c: Any) -> Any:
        self.log.append("audit")
        return allow({**c.args, "order_id": c.args["order_id"].lower()}, "normalised the order id")

    def risk(self, c: Any) -> Any:
        self.log.append("risk")
        return ask("Refund over 100?", {"amount": c.args["amount"]}) if c.args["amount"] > 100 else allow()

    def later(self, c: Any) -> Any:
        self.log.append("later")
        return ask("And a second opinion?") if self.later_asks else allow()

    def configure(self, builder: Any) -> Any:
        return builder.tool_middleware(
            NS(name="audit", on_tool_call=self.audit),
            NS(name="risk", on_tool_call=self.risk),
            NS(name="later", on_tool_call=self.later),
        )


def paused_on_ask(later_asks: bool = False, **tool: Any) -> tuple[Any, Links, Counter, Paused]:
    """An agent paused on risk's ask over refund(A1, 250)."""
    links = Links(later_asks)
    body = Counter(lambda a: f"refunded {a['amount']} on {a['order_id']}")
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, **tool), configure=links.configure)
    out = agent.run("refund A1")
    assert isinstance(out, Paused)
    return agent, links, body, out


def fresh(links: Links, body: Counter, replies: list[Any] | None = None, **tool: Any) -> Any:
    """A freshly built agent identical to ``paused_on_ask``'s (same chart)."""
    # the same script: a fresh agent continues it where the run is (the provider answers by position)
    agent, _ = build(replies or [REFUND_CALL, "Done."], refund_tool(body, **tool), configure=links.configure)
    return agent


def round_trip(checkpoint: Checkpoint) -> Checkpoint:
    """The checkpoint through JSON."""
    return Checkpoint.from_json(checkpoint.to_json())


def test_an_ask_pauses_before_the_tool_with_the_ask() -> None:
    """A before-tool ask pauses at tool-calls; Paused.ask names the asker and the args so far."""
    _agent, links, body, out = paused_on_ask()
    assert out.kind == "ask" and out.check_in is None
    assert out.ask is not None
    assert out.ask.id.startswith("ask_")
    assert (out.ask.question, out.ask.detail, out.ask.middleware, out.ask.tool, out.ask.tool_call_id) == (
        "Refund over 100?",
        {"amount": 250},
        "risk",
        "refund",
        "c1",
    )
    assert out.ask.args == {"order_id": "a1", "amount": 250}
    assert out.checkpoint.paused_stage_id == "tool-calls"
    assert links.log == ["audit", "risk"]
    assert body.runs == []
    rows = out.checkpoint.shared_state["middleware_decisions"]
    assert rows[-1] == {
        "middleware": "risk",
        "moment": "before-tool",
        "at": "tool",
        "tool_name": "refund",
        "tool_call_id": "c1",
        "iteration": 1,
        "outcome": "ask",
        "changed": False,
        "why": "Refund over 100?",
    }


def test_approve_continues_after_the_asker_on_a_fresh_agent() -> None:
    """Approve: a row under the asker, links after it run, earlier ones do not; the tool runs."""
    _agent, links, body, out = paused_on_ask()
    assert out.ask is not None
    links.log.clear()
    resumed = fresh(links, body)
    decision = check_in_approved(request=out.ask, by="alice", note="ok", at=AT)
    assert resumed.resume(round_trip(out.checkpoint), decision) == "Done."
    assert links.log == ["later"]
    assert body.runs == [{"order_id": "a1", "amount": 250}]
    rows = resumed.last_snapshot().shared_state["middleware_decisions"]
    head = {"moment": "before-tool", "at": "tool", "tool_name": "refund", "tool_call_id": "c1", "iteration": 1}
    assert rows[2:] == [
        {"middleware": "risk", **head, "outcome": "allow", "changed": False, "why": "approved by alice: ok"},
        {"middleware": "later", **head, "outcome": "allow", "changed": False},
    ]
    assert tool_messages(resumed.last_snapshot().shared_state["history"]) == ["refunded 250 on a1"]


def test_a_second_ask_after_approval_becomes_a_deny() -> None:
    """A later link that asks during an approved resume is a deny with the exact text; the tool does not run."""
    agent, _links, body, out = paused_on_ask(later_asks=True)
    assert out.ask is not None
    assert agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="alice", at=AT)) == "Done."
    reason = (
        "middleware 'later' asked a person to decide, and there is no pause here to carry that ask: "
        "And a second opinion?"
    )
    assert body.runs == []
    state = agent.last_snapshot().shared_state
    assert tool_messages(state["history"]) == [reason]
    assert state["middleware_decisions"][-1]["middleware"] == "later"
    assert state["middleware_decisions"][-1]["outcome"] == "deny"
    assert state["middleware_decisions"][-1]["why"] == reason


def test_decline_files_a_row_and_the_model_reads_it() -> None:
    """Decline: ``declined by <by>: <note>`` under the asker; the model reads ``declined by human: <note>``."""
    agent, links, body, out = paused_on_ask()
    assert out.ask is not None
    links.log.clear()
    agent.resume(out.checkpoint, check_in_declined(request=out.ask, by="bob", note="too big", at=AT))
    assert body.runs == [] and links.log == []
    state = agent.last_snapshot().shared_state
    assert tool_messages(state["history"]) == ["declined by human: too big"]
    assert state["middleware_decisions"][-1] == {
        "middleware": "risk",
        "moment": "before-tool",
        "at": "tool",
        "tool_name": "refund",
        "tool_call_id": "c1",
        "iteration": 1,
        "outcome": "deny",
        "changed": False,
        "why": "declined by bob: too big",
    }


def test_approved_ask_still_validates_the_arguments() -> None:
    """The ask paused before argument validation: after approval invalid args are refused, not run."""
    body = Counter()
    always_ask = NS(name="risk", on_tool_call=lambda c: ask("Refund?"))
    agent, _ = build(
        [calls(call("c1", "refund", order_id="A1")), "Done."],
        refund_tool(body),
        configure=lambda b: b.tool_middleware(always_ask),
    )
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.ask is not None
    agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="alice", at=AT))
    assert body.runs == []
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == [
        "Invalid arguments for tool 'refund' — the call was not executed.\n"
        "- 'amount' is required but missing\n"
        "Fix the arguments to match the tool's input schema and call it again."
    ]


def test_decline_without_note() -> None:
    """A decline with no note reads ``declined by human``."""
    agent, _links, _body, out = paused_on_ask()
    agent.resume(out.checkpoint, check_in_declined(request=out.ask, by="bob", at=AT))
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["declined by human"]


def test_approved_ask_on_a_tool_whose_check_in_trips_does_not_run() -> None:
    """An approved ask on a tool whose own check-in trips: not run, and the model is told why."""
    agent, _links, body, out = paused_on_ask(check_in="always")
    assert out.kind == "ask"
    agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="alice", at=AT))
    assert body.runs == []
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == [
        "tool 'refund' was not executed and cannot be retried this turn: it declares its own check_in consent "
        "gate, that gate trips for these arguments, and a resumed dispatch has no second checkpoint to ask on. "
        "Answer without it, or finish. (To the agent's author: the middleware 'risk' and the tool's check_in "
        "ask different questions — keep one of them for this tool.)"
    ]


def test_a_non_decision_answer_is_refused_and_the_checkpoint_stays_usable() -> None:
    """A plain "yes" to an ask raises DecisionRequiredError before anything runs; a decision then works."""
    agent, links, body, out = paused_on_ask()
    links.log.clear()
    message = (
        "[resume] this run paused on a consent gate — a tool middleware's ask (asked by 'risk') on tool "
        "'refund' — and a consent gate is answered with a DECISION, not a value. Got a str. Resume with "
        "check_in_approved(request=paused.ask, by=...) or check_in_declined(request=paused.ask, by=..., note=...)."
    )
    with pytest.raises(DecisionRequiredError, match=rf"^{re.escape(message)}$") as caught:
        agent.resume(out.checkpoint, "yes")
    assert (caught.value.gate, caught.value.tool_name, caught.value.middleware, caught.value.received) == (
        "ask",
        "refund",
        "risk",
        "a str",
    )
    assert links.log == [] and body.runs == []
    assert agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="alice", at=AT)) == "Done."
    assert len(body.runs) == 1


def test_a_reused_decision_is_refused() -> None:
    """A decision answers its request once: resuming the same checkpoint again is refused."""
    agent, _links, _body, out = paused_on_ask()
    assert out.ask is not None
    decision = check_in_approved(request=out.ask, by="alice", at=AT)
    agent.resume(out.checkpoint, decision)
    message = (
        f"this decision answers request '{out.ask.id}', which has already been answered: a decision answers its "
        f"request once. Ask again and decide on the pending request '{out.ask.id}'."
    )
    with pytest.raises(ResumeDecisionError, match=rf"^{re.escape(message)}$") as caught:
        agent.resume(out.checkpoint, decision)
    assert caught.value.problem == "already-used"


def test_the_same_call_in_another_run_is_another_request() -> None:
    """Request ids bind the run: an identical call in a second run is a new request, which the
    first run's decision cannot answer; its own decision can, once."""
    body = Counter(lambda a: "refunded")
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in="always"))
    first = agent.run("refund A1")
    assert isinstance(first, Paused) and first.check_in is not None
    first_decision = check_in_approved(request=first.check_in, by="alice", at=AT)
    assert agent.resume(first.checkpoint, first_decision) == "Done."
    second = agent.run("refund A1")
    assert isinstance(second, Paused) and second.check_in is not None
    assert second.check_in.id != first.check_in.id
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'cki_\w{32}', which has already been "
        r"answered: a decision answers its request once\. ",
    ) as caught:
        agent.resume(second.checkpoint, first_decision)
    assert caught.value.problem == "already-used" and len(body.runs) == 1
    assert agent.resume(second.checkpoint, check_in_approved(request=second.check_in, by="alice", at=AT)) == "Done."
    assert len(body.runs) == 2
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'cki_\w{32}', which has already been "
        r"answered: a decision answers its request once\. ",
    ):
        agent.resume(second.checkpoint, check_in_approved(request=second.check_in, by="alice", at=AT))


def test_a_decision_for_another_request_is_refused() -> None:
    """A decision from another paused run does not answer this one (stale)."""
    agent, _links, body, first = paused_on_ask()
    assert first.ask is not None
    changed, _ = build(
        [calls(call("c9", "refund", order_id="A1", amount=250))], refund_tool(body), configure=Links().configure
    )
    third = changed.run("refund")
    assert isinstance(third, Paused) and third.ask is not None
    stale = check_in_approved(request=third.ask, by="alice", at=AT)
    with pytest.raises(ResumeDecisionError) as caught:
        agent.resume(first.checkpoint, stale)
    assert caught.value.problem == "another-request"
    assert str(caught.value) == (
        f"this decision answers request '{third.ask.id}', but the run is paused on request '{first.ask.id}'. "
        "Build the decision from the pending request: check_in_approved(request=paused.check_in or paused.ask, by=...)."
    )
    assert body.runs == []


def tampered(checkpoint: Checkpoint, amount: int) -> Checkpoint:
    """``checkpoint`` with the paused call's args changed in state (the pause data untouched)."""
    data = checkpoint.to_dict()
    data["shared_state"]["paused_tool_call"]["args"]["amount"] = amount
    return Checkpoint.from_dict(data)


def test_a_changed_call_is_refused() -> None:
    """Tampering with the paused call's args in the checkpoint makes the decision refuse."""
    agent, _links, body, out = paused_on_ask()
    assert out.ask is not None
    decision = check_in_approved(request=out.ask, by="alice", at=AT)
    with pytest.raises(ResumeDecisionError) as caught:
        agent.resume(tampered(out.checkpoint, 9999), decision)
    assert caught.value.problem == "changed-call"
    assert str(caught.value) == (
        f"this decision answers request '{out.ask.id}', but the call it was asked about has changed since the ask "
        "(its run, pause position, tool, arguments, call id or identity differ), so it cannot approve what would "
        "run now."
    )
    assert body.runs == []


def test_a_changed_check_in_call_is_refused() -> None:
    """The same binding holds for a tool's check-in."""
    body = Counter()
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in="always"))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.check_in is not None
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'cki_\w{32}', but the call it was asked "
        r"about has changed since the ask ",
    ) as caught:
        agent.resume(tampered(out.checkpoint, 1), check_in_approved(request=out.check_in, by="alice", at=AT))
    assert caught.value.problem == "changed-call"
    assert body.runs == []


def test_check_in_always_pauses_with_the_request() -> None:
    """check_in="always": the run pauses before the tool with a CheckInRequest bound to the call."""
    body = Counter(lambda a: "refunded")
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in="always"))
    out = agent.run("refund A1")
    assert isinstance(out, Paused) and out.check_in is not None
    assert out.kind == "check_in" and out.ask is None
    request = out.check_in
    assert request.id.startswith("cki_")
    assert (request.tool, request.args, request.intent) == (
        "refund",
        {"order_id": "A1", "amount": 250},
        "Refunding now.",
    )
    assert request.evidence.will_do == "Refund an order to the customer's card. — with order_id=A1, amount=250"
    assert body.runs == []
    assert "middleware_decisions" not in out.checkpoint.shared_state
    assert agent.resume(out.checkpoint, check_in_approved(request=request, by="alice", at=AT)) == "Done."
    assert body.runs == [{"order_id": "A1", "amount": 250}]


def test_check_in_decline_never_runs_the_tool() -> None:
    """A declined check-in: the model reads ``declined by human: <note>``; the tool never runs."""
    body = Counter()
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in="always"))
    out = agent.run("refund")
    assert isinstance(out, Paused)
    agent.resume(out.checkpoint, check_in_declined(request=out.check_in, by="bob", note="not today", at=AT))
    assert body.runs == []
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["declined by human: not today"]


def test_check_in_events() -> None:
    """checkin.request at the pause, checkin.decision on resume; no ledger rows."""
    seen: list[tuple[str, Any]] = []
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(check_in="always"))
    agent.on("checkin.request", lambda n, p: seen.append((n, p["request"]["tool"])))
    agent.on("checkin.decision", lambda n, p: seen.append((n, (p["approved"], p["by"], p["note"]))))
    out = agent.run("refund")
    assert isinstance(out, Paused)
    agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", note="fine", at=AT))
    assert seen == [("checkin.request", "refund"), ("checkin.decision", (True, "alice", "fine"))]
    assert "middleware_decisions" not in agent.last_snapshot().shared_state


def test_check_in_predicate_trips_only_when_true() -> None:
    """A predicate (amount > 100) pauses the big refund and lets the small one run."""
    body = Counter(lambda a: "refunded")
    batch = calls(call("c1", "refund", order_id="S", amount=20), call("c2", "refund", order_id="B", amount=500))
    agent, _ = build([batch, "Done."], refund_tool(body, check_in=lambda args, ctx: args["amount"] > 100))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.check_in is not None
    assert out.check_in.args == {"order_id": "B", "amount": 500}
    assert body.runs == [{"order_id": "S", "amount": 20}]


def test_a_predicate_cannot_change_the_args() -> None:
    """The predicate gets a frozen copy; a write trips the gate and the args stay as they were."""

    def meddle(args: Any, ctx: Any) -> bool:
        args["amount"] = 1
        return False

    agent, _ = build([REFUND_CALL, "Done."], refund_tool(check_in=meddle))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.check_in is not None
    assert out.check_in.args == {"order_id": "A1", "amount": 250}


def test_a_throwing_predicate_trips_the_gate() -> None:
    """A predicate that raises fails toward asking a person."""

    def broken(args: Any, ctx: Any) -> bool:
        raise RuntimeError("risk model offline")

    body = Counter()
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in=broken))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.kind == "check_in"
    assert body.runs == []


def test_check_in_predicate_context() -> None:
    """The predicate is told the iteration, the call id and the history (system prompt first)."""
    seen: list[Any] = []

    def look(args: Any, ctx: Any) -> bool:
        seen.append((ctx.iteration, ctx.tool_call_id, [m["role"] for m in ctx.history]))
        return False

    agent, _ = build([REFUND_CALL, "Done."], refund_tool(check_in=look))
    agent.run("refund")
    assert seen == [(1, "c1", ["system", "user", "assistant"])]


def test_a_check_in_non_decision_answer_is_refused() -> None:
    """A check-in pause answered with True raises DecisionRequiredError; the checkpoint then works."""
    body = Counter(lambda a: "ok")
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in="always"))
    out = agent.run("refund")
    assert isinstance(out, Paused)
    with pytest.raises(
        DecisionRequiredError, match=r"^\[resume\] this run paused on a consent gate — a tool's check-in"
    ):
        agent.resume(out.checkpoint, True)
    assert body.runs == []
    assert agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", at=AT)) == "Done."


LOOKUP = define_tool(
    name="lookup",
    description="Look up an order.",
    input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
    execute=lambda args, ctx: f"order {args['order_id']} total 250",
)
EVIDENCE_RUN = [
    calls(call("c1", "lookup", order_id="A1")),
    calls(call("c2", "refund", order_id="A1", amount=250), content="Refunding now."),
]


def test_standard_evidence_on_a_fixed_history() -> None:
    """will_do, read frames, drivers ranked by the lexical scorer and the trail, exactly."""
    agent, _ = build(
        EVIDENCE_RUN, LOOKUP, refund_tool(check_in="always"), system="You help customers. Refunds need care."
    )
    out = agent.run("Please refund order A1")
    assert isinstance(out, Paused) and out.check_in is not None
    # tool text tokens: refund order customer card id a1 amount 250 (8)
    assert out.check_in.to_dict()["evidence"] == {
        "will_do": "Refund an order to the customer's card. — with order_id=A1, amount=250",
        "read": [
            {"id": "system-1", "channel": "system", "summary": "You help customers."},
            {"id": "system-2", "channel": "system", "summary": "Refunds need care."},
            {"id": "task-1", "channel": "task", "summary": "Please refund order A1"},
            {"id": "result-1", "channel": "result", "summary": "lookup: order A1 total 250"},
        ],
        "drivers": [
            {"id": "task-1", "channel": "task", "text": "Please refund order A1", "score": 3 / 9},
            {"id": "result-1", "channel": "result", "text": "lookup: order A1 total 250", "score": 3 / 10},
            {"id": "system-1", "channel": "system", "text": "You help customers.", "score": 0.0},
            {"id": "system-2", "channel": "system", "text": "Refunds need care.", "score": 0.0},
        ],
        "trail": {
            "iteration": 2,
            "tool_calls": [{"name": "lookup", "ok": True}],
            "summary": "1 tool run over 2 iterations",
        },
    }
    assert out.check_in.intent == "Refunding now."


def test_minimal_evidence_is_will_do_only() -> None:
    """.check_in(evidence="minimal") gives will_do only."""
    agent, _ = build(
        EVIDENCE_RUN, LOOKUP, refund_tool(check_in="always"), configure=lambda b: b.check_in(evidence="minimal")
    )
    out = agent.run("Please refund order A1")
    assert isinstance(out, Paused) and out.check_in is not None
    assert out.check_in.to_dict()["evidence"] == {
        "will_do": "Refund an order to the customer's card. — with order_id=A1, amount=250"
    }


def test_a_custom_scorer_ranks_the_drivers() -> None:
    """A custom scorer replaces the lexical ranking (here: reverse it)."""

    def reverse(score_input: Any) -> list[Driver]:
        return list(reversed(lexical_driver_scorer(score_input)))

    agent, _ = build(
        EVIDENCE_RUN,
        LOOKUP,
        refund_tool(check_in="always"),
        system="You help customers. Refunds need care.",
        configure=lambda b: b.check_in(scorer=reverse),
    )
    out = agent.run("Please refund order A1")
    assert isinstance(out, Paused) and out.check_in is not None
    drivers = out.check_in.evidence.drivers
    assert drivers is not None
    assert [d.id for d in drivers] == ["system-2", "system-1", "result-1", "task-1"]


def test_a_check_in_request_survives_json_and_a_fresh_agent() -> None:
    """A check-in checkpoint resumes on a freshly built agent from JSON."""
    body = Counter(lambda a: "refunded")
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(body, check_in="always"))
    out = agent.run("refund")
    assert isinstance(out, Paused)
    fresh_body = Counter(lambda a: "refunded")
    again, _ = build([REFUND_CALL, "Done."], refund_tool(fresh_body, check_in="always"))
    restored = round_trip(out.checkpoint)
    again_paused = Paused(checkpoint=restored, pause_data=restored.pause_data)
    assert again_paused.pause_data["check_in"]["id"] == out.check_in.id  # type: ignore[union-attr]
    assert again.resume(restored, check_in_approved(request=out.check_in, by="alice", at=AT)) == "Done."
    assert (body.runs, fresh_body.runs) == ([], [{"order_id": "A1", "amount": 250}])
