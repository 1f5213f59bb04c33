"""Who decided is part of the record: ``human_decisions``, edited approvals, answer-once without a store."""

from __future__ import annotations

import re
from types import SimpleNamespace as NS
from typing import Any

import pytest
from agent_helpers import Counter, build, call, calls, refund_tool

from agent import Paused, ask_human, define_tool
from flowchart import Checkpoint, causal_chain
from governance import DecisionInputError, ResumeDecisionError, allow, ask, check_in_approved, check_in_declined

AT = "2026-12-01T00:00:00Z"
REFUND = calls(call("c1", "refund", order_id="A1", amount=500), content="Refunding.")


def refund_agent(replies: list[Any], body: Counter | None = None, **create: Any) -> tuple[Any, Counter]:
    """An agent whose refund tool always checks in."""
    body = body or Counter(lambda a: f"refunded {a['amount']} on {a['order_id']}")
    agent, _ = build(replies, refund_tool(body, check_in="always"), **create)
    return agent, body


def paused_refund(replies: list[Any] | None = None) -> tuple[Any, Counter, Paused]:
    agent, body = refund_agent(replies or [REFUND, "Done."])
    out = agent.run("refund A1")
    assert isinstance(out, Paused) and out.check_in is not None
    return agent, body, out


def test_an_approval_is_committed_with_who_when_and_the_call_it_answered() -> None:
    """The approval is one ``human_decisions`` row: request id, approved, by, note, at, tool, call id, args."""
    agent, body, out = paused_refund()
    assert out.check_in is not None
    agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", note="ok", at=AT))
    assert agent.last_snapshot().shared_state["human_decisions"] == [
        {
            "request_id": out.check_in.id,
            "gate": "check_in",
            "approved": True,
            "by": "alice",
            "note": "ok",
            "at": AT,
            "tool": "refund",
            "tool_call_id": "c1",
            "args": {"order_id": "A1", "amount": 500},
        }
    ]
    assert body.runs == [{"order_id": "A1", "amount": 500}]


def test_a_run_nobody_answered_writes_no_human_decisions_key() -> None:
    """Absent means byte-identical: no answer, no key — in the state and in every commit."""
    agent, _ = build(["Hello."])
    agent.run("hi")
    snap = agent.last_snapshot()
    assert "human_decisions" not in snap.shared_state
    assert all("human_decisions" not in c.written_keys for c in snap.commit_log)


def test_a_check_in_answer_files_no_ledger_row() -> None:
    """As agentfootprint: a check-in's decision is in human_decisions, not in middleware_decisions."""
    agent, _body, out = paused_refund()
    agent.resume(out.checkpoint, check_in_declined(request=out.check_in, by="bob", at=AT))
    state = agent.last_snapshot().shared_state
    assert "middleware_decisions" not in state
    assert [(r["by"], r["approved"]) for r in state["human_decisions"]] == [("bob", False)]


def test_a_middleware_ask_answer_and_an_ask_human_reply_are_recorded() -> None:
    """An ask's answer names its asker; an ask_human reply is recorded with its answer (no by, no at)."""
    gate = NS(name="risk", on_tool_call=lambda c: ask("big refund?") if c.args["amount"] > 100 else None)
    body = Counter(lambda a: "refunded")
    agent, _ = build([REFUND, "Done."], refund_tool(body), configure=lambda b: b.tool_middleware(gate))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.ask is not None
    agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="carol", value="tier-2", at=AT))
    (row,) = agent.last_snapshot().shared_state["human_decisions"]
    assert (row["gate"], row["by"], row["middleware"], row["value"], row["request_id"]) == (
        "ask",
        "carol",
        "risk",
        "tier-2",
        out.ask.id,
    )

    confirm = define_tool(
        name="confirm",
        description="Ask the user.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: ask_human({"question": "sure?"}),
    )
    agent, _ = build([calls(call("q1", "confirm")), "Fine."], confirm)
    paused = agent.run("go")
    assert isinstance(paused, Paused)
    agent.resume(paused.checkpoint, "yes")
    (reply,) = agent.last_snapshot().shared_state["human_decisions"]
    assert reply == {
        "request_id": paused.checkpoint.shared_state["paused_tool_call"]["request_id"],
        "gate": "ask_human",
        "tool": "confirm",
        "tool_call_id": "q1",
        "args": {},
        "answer": "yes",
    }


def test_the_narrative_says_who_approved_in_one_sentence() -> None:
    """The resumed run's narrative has one line: ``alice approved refund(order_id=A1, amount=500): ok``."""
    agent, _body, out = paused_refund()
    agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", note="ok", at=AT))
    lines = agent.last_snapshot().narrative
    assert [line for line in lines if "approved" in line] == ["alice approved refund(order_id=A1, amount=500): ok"]


def test_why_final_content_reaches_the_human_decision() -> None:
    """The commit that ran the approved tool READ the recorded decision: it is one of its causal inputs."""
    agent, _body, out = paused_refund()
    agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", at=AT))
    log = agent.last_snapshot().commit_log
    chain = causal_chain(log, "final_content")
    ran = next(n for n in chain.nodes if "history" in n.wrote and n.stage_id == "tool-calls")
    recorded = next(e for e in ran.parents if e.key == "human_decisions")
    assert chain.node(recorded.runtime_stage_id).wrote == ("human_decisions",)
    assert "human_decisions ← ToolCalls" in chain.format()


def test_an_edited_approval_runs_the_edited_args_and_records_before_and_after() -> None:
    """``args={...}`` on approval: the tool runs with them; the row keeps the asked and the edited args."""
    agent, body, out = paused_refund()
    decision = check_in_approved(request=out.check_in, by="alice", args={"order_id": "A1", "amount": 100}, at=AT)
    agent.resume(out.checkpoint, decision)
    assert body.runs == [{"order_id": "A1", "amount": 100}]
    (row,) = agent.last_snapshot().shared_state["human_decisions"]
    assert (row["args"], row["before"], row["after"]) == (
        {"order_id": "A1", "amount": 500},
        {"order_id": "A1", "amount": 500},
        {"order_id": "A1", "amount": 100},
    )
    assert "alice approved refund(order_id=A1, amount=500), edited to refund(order_id=A1, amount=100)" in (
        agent.last_snapshot().narrative
    )


def test_edited_args_the_schema_refuses_are_refused_before_anything_runs() -> None:
    """Edited args must pass the tool's schema: refused at resume, the checkpoint stays usable."""
    agent, body, out = paused_refund()
    bad = check_in_approved(request=out.check_in, by="alice", args={"order_id": "A1", "amount": "lots"}, at=AT)
    with pytest.raises(DecisionInputError, match=r"^\[resume\] the edited args do not fit tool 'refund': "):
        agent.resume(out.checkpoint, bad)
    assert body.runs == []
    good = check_in_approved(request=out.check_in, by="alice", args={"order_id": "A1", "amount": 90}, at=AT)
    assert agent.resume(out.checkpoint, good) == "Done."
    assert body.runs == [{"order_id": "A1", "amount": 90}]


def test_a_value_on_a_check_in_decision_is_refused() -> None:
    """A ``value=`` means nothing on a check-in: refused when the decision is made, and at resume
    for a decision built from the request's id alone."""
    agent, body, out = paused_refund()
    with pytest.raises(DecisionInputError, match=r"^check_in_approved\(value=\.\.\.\): a tool check-in's decision"):
        check_in_approved(request=out.check_in, by="alice", value=100)
    assert out.check_in is not None
    by_id = check_in_approved(request={"id": out.check_in.id}, by="alice", value=100, at=AT)
    with pytest.raises(DecisionInputError, match=r"^\[resume\] the decision for the check-in on tool 'refund' carries"):
        agent.resume(out.checkpoint, by_id)
    assert body.runs == []


def test_without_a_store_a_retry_after_a_failed_resume_is_refused_and_the_tool_ran_once() -> None:
    """The model call after the refund fails; retrying the same checkpoint with the same decision is
    refused (the decision was marked used before the tool ran): the refund ran once."""
    agent, body, out = paused_refund([REFUND])  # no reply left for the call after the tool
    decision = check_in_approved(request=out.check_in, by="alice", at=AT)
    with pytest.raises(Exception, match=r"^scripted provider exhausted"):
        agent.resume(out.checkpoint, decision)
    for _ in range(2):
        with pytest.raises(
            ResumeDecisionError,
            match=r"^this decision answers request 'cki_\w{32}', which has already been "
            r"answered: a decision answers its request once\. ",
        ) as caught:
            agent.resume(Checkpoint.from_json(out.checkpoint.to_json()), decision)
        assert caught.value.problem == "already-used"
    assert body.runs == [{"order_id": "A1", "amount": 500}]


def test_a_later_pause_on_the_same_call_is_a_new_request() -> None:
    """The model asks for the very same call again: the second pause has its own id (position bound)."""
    agent, body = refund_agent([REFUND, REFUND, "Done."])
    first = agent.run("refund A1")
    assert isinstance(first, Paused) and first.check_in is not None
    second = agent.resume(first.checkpoint, check_in_approved(request=first.check_in, by="alice", at=AT))
    assert isinstance(second, Paused) and second.check_in is not None
    assert second.check_in.id != first.check_in.id and re.fullmatch(r"cki_[0-9a-f]{32}", second.check_in.id)
    assert agent.resume(second.checkpoint, check_in_approved(request=second.check_in, by="bob", at=AT)) == "Done."
    assert len(body.runs) == 2
    assert [r["by"] for r in agent.last_snapshot().shared_state["human_decisions"]] == ["alice", "bob"]


def test_an_edited_approval_of_a_middleware_ask_runs_the_edited_call_through_the_rest_of_the_chain() -> None:
    """An ask approved with ``args={...}``: the links after the asker and the tool see the edited args."""
    seen: list[dict[str, Any]] = []
    gate = NS(name="risk", on_tool_call=lambda c: ask("big refund?") if c.args["amount"] > 100 else allow())
    audit = NS(name="audit", on_tool_call=lambda c: seen.append(dict(c.args)) or allow())
    body = Counter(lambda a: "refunded")
    agent, _ = build([REFUND, "Done."], refund_tool(body), configure=lambda b: b.tool_middleware(gate, audit))
    out = agent.run("refund")
    assert isinstance(out, Paused) and out.ask is not None
    edited = {"order_id": "A1", "amount": 50}
    assert agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="carol", args=edited, at=AT)) == "Done."
    assert seen == [edited] and body.runs == [edited]
    (row,) = agent.last_snapshot().shared_state["human_decisions"]
    assert (row["before"], row["after"]) == ({"order_id": "A1", "amount": 500}, edited)


def test_flowchart_why_on_the_resumed_trace_reaches_the_human_decision(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """``flowchart why TRACE final_content`` on the resumed run's trace lists the commit that recorded it."""
    from flowchart.cli import main

    agent, _body, out = paused_refund()
    agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", at=AT))
    path = tmp_path / "resumed.trace.json"
    agent.last_snapshot().result.trace().save(path)
    assert main(["why", str(path), "final_content"]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^\s+human_decisions ← ToolCalls \(tool-calls#\d+\) \[wrote: human_decisions\]$", printed, re.M)


def test_after_an_edited_approval_the_model_is_sent_the_edited_call() -> None:
    """The next request's assistant turn carries the edited args next to the edited call's result
    (it used to carry the model's 500 next to "refunded 100"); the model's reply record and the
    decision row keep what the model asked."""
    agent, _body, out = paused_refund()
    provider = agent.config.provider
    decision = check_in_approved(request=out.check_in, by="alice", args={"order_id": "A1", "amount": 100}, at=AT)
    assert agent.resume(out.checkpoint, decision) == "Done."
    assistant, result = provider.requests[-1].messages[-2:]
    assert assistant["tool_calls"] == [{"id": "c1", "name": "refund", "args": {"order_id": "A1", "amount": 100}}]
    assert result["content"] == "refunded 100 on A1"
    assert out.checkpoint.shared_state["llm_latest_tool_calls"][0]["args"] == {"order_id": "A1", "amount": 500}
    state = agent.last_snapshot().shared_state
    assert state["human_decisions"][0]["args"] == {"order_id": "A1", "amount": 500}
    assert state["history"][-2]["tool_calls"][0]["args"] == {"order_id": "A1", "amount": 100}


def test_a_plain_approval_leaves_the_assistant_turn_as_the_model_wrote_it() -> None:
    """No edit: the assistant turn the model is sent is its own call, unchanged."""
    agent, _body, out = paused_refund()
    agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice", at=AT))
    assistant = agent.config.provider.requests[-1].messages[-2]
    assert assistant["tool_calls"] == [{"id": "c1", "name": "refund", "args": {"order_id": "A1", "amount": 500}}]
