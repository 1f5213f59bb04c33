"""A person's edit of a checked-in call is judged as a fresh call: the permission checker and
the whole before-tool middleware chain run again on the edited arguments, both passes are in
the ledger, and a middleware that denies the edited call stops it (the approval cannot carry
a call past the rules the model's own call had to pass)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent import Agent, Paused, define_tool
from agent.providers import scripted
from governance import allow, check_in_approved, deny

RAN: list[dict[str, Any]] = []


def _agent() -> Agent:
    refund = define_tool(
        name="refund",
        description="Refund an amount.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
        execute=lambda args, ctx: RAN.append(dict(args)) or f"refunded {args['amount']}",
        check_in="always",
    )
    cap = SimpleNamespace(
        name="cap-500",
        on_tool_call=lambda call: deny("refunds over 500 need finance") if call.args["amount"] > 500 else allow(),
    )
    replies = [{"content": "", "tool_calls": [{"id": "c1", "name": "refund", "args": {"amount": 120}}]}, "Done."]
    return Agent.create(provider=scripted(replies), model="mock").tool(refund).tool_middleware(cap).build()


def _resume(edited: dict[str, Any]) -> tuple[Any, list[dict[str, Any]]]:
    RAN.clear()
    agent = _agent()
    paused = agent.run("refund me")
    assert isinstance(paused, Paused) and paused.check_in is not None
    decision = check_in_approved(request=paused.check_in, by="alice", args=edited, at="2026-12-01T00:00:00Z")
    answer = agent.resume(paused.checkpoint, decision)
    state = agent.last_snapshot().shared_state
    return answer, state


def test_an_edit_the_chain_denies_does_not_run() -> None:
    """Edited to 900: cap-500 denies the edited call; the tool never runs; the model reads why;
    the ledger holds the first pass's allow and the edited call's deny."""
    answer, state = _resume({"amount": 900})
    assert answer == "Done." and RAN == []
    (result,) = [m for m in state["history"] if m.get("role") == "tool"]
    assert result["content"] == "refunds over 500 need finance"
    outcomes = [(r["middleware"], r["outcome"]) for r in state["middleware_decisions"]]
    assert outcomes == [("cap-500", "allow"), ("cap-500", "deny")]


def test_an_edit_the_chain_allows_runs_with_the_edited_args() -> None:
    """Edited to 60: the chain allows it again (a second row) and the tool runs with 60."""
    _answer, state = _resume({"amount": 60})
    assert RAN == [{"amount": 60}]
    assert [r["outcome"] for r in state["middleware_decisions"]] == ["allow", "allow"]
