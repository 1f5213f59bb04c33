"""The gate order a tool dispatch follows, composed from the public functions exactly as the
agent chart is meant to: permission → before-tool chain → (argument validation) → check-in
→ execute → after-tool chain; and an ask → decision → resume from the next link."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import attrs
import pytest

from governance import (
    CheckInPredicateContext,
    PermissionDecision,
    PermissionRequest,
    ResumeDecisionError,
    ToolCallInfo,
    allow,
    ask,
    check_in_approved,
    check_in_declined,
)
from governance.chains import run_after_tool_chain, run_tool_chain
from governance.checkin import ask_request_id, build_check_in_request, build_middleware_ask, should_check_in
from governance.decisions import declined_result, require_decision, verify_decision
from governance.ledger import ask_answer_row
from governance.permissions import evaluate_permission

AT = "2025-01-01T00:00:00.000Z"


async def dispatch(links: list[Any], call: ToolCallInfo, checker: Any, demand: Any) -> dict[str, Any]:
    """One call through the gates; returns what the model reads, the rows and any pause."""
    rows: list[dict[str, Any]] = []
    verdict = await evaluate_permission(
        checker, PermissionRequest(call.tool_name, call.args, call.tool_call_id, call.iteration)
    )
    if not verdict.allowed:
        return {"model_reads": verdict.model_text, "rows": rows}
    before = await run_tool_chain(links, call)
    rows += before.rows
    if before.verdict == "deny":
        return {"model_reads": before.reason, "rows": rows}
    if before.verdict == "ask":
        return {"paused": build_middleware_ask(before, call), "index": before.index, "rows": rows}
    args = before.value
    ctx = CheckInPredicateContext(call.iteration, call.tool_call_id, call.history)
    if await should_check_in(demand, args, ctx):
        request = await build_check_in_request(
            tool_name=call.tool_name,
            tool_description="Issue a refund.",
            args=args,
            tool_call_id=call.tool_call_id,
            iteration=call.iteration,
            history=call.history,
        )
        return {"paused": request, "rows": rows}
    result = f"refunded {args['amount']}"
    after = await run_after_tool_chain(links, attrs.evolve(call, args=args, result=result))
    rows += after.rows
    return {
        "model_reads": after.value if after.allowed else after.reason,
        "real": result,
        "rows": rows,
    }


CALL = ToolCallInfo("refund", "t1", 1, {"amount": 5000}, history=[{"role": "user", "content": "refund"}])
OPEN = NS(name="open", check=lambda req: PermissionDecision.allow())
CAP = NS(
    name="cap",
    on_tool_call=lambda c: allow({"amount": min(c.args["amount"], 1000)}, "capped at 1000"),
    on_tool_result=lambda c: allow(c.result.upper(), "shouting"),
)


async def test_a_permission_deny_runs_no_middleware_and_files_no_row() -> None:
    """The checker is the first gate."""
    closed = NS(check=lambda req: PermissionDecision.deny("refunds are off"))
    out = await dispatch([CAP], CALL, closed, None)
    assert out == {"model_reads": "[permission denied: refunds are off]", "rows": []}


async def test_a_full_pass_transforms_args_then_result() -> None:
    """Args capped before, result transformed after; two rows in moment order."""
    out = await dispatch([CAP], CALL, OPEN, None)
    assert (out["model_reads"], out["real"]) == ("REFUNDED 1000", "refunded 1000")
    assert [(r["moment"], r["before"], r["after"]) for r in out["rows"]] == [
        ("before-tool", {"amount": 5000}, {"amount": 1000}),
        ("after-tool", "refunded 1000", "REFUNDED 1000"),
    ]


async def test_a_check_in_sees_the_transformed_args() -> None:
    """What the person approves is what runs: the capped amount."""
    out = await dispatch([CAP], CALL, OPEN, lambda a, c: a["amount"] > 100)
    assert out["paused"].args == {"amount": 1000}
    assert out["paused"].evidence.will_do == "Issue a refund. — with amount=1000"


async def test_an_ask_then_approval_resumes_after_the_asker() -> None:
    """Approve: a row under the asker, the chain continues at index+1, the tool runs."""
    ran: list[str] = []
    gate = NS(name="gate", on_tool_call=lambda c: ask("approve?"))
    tag = NS(
        name="tag",
        on_tool_call=lambda c: ran.append("tag") or allow({**c.args, "tagged": True}, "tag"),
    )
    out = await dispatch([CAP, gate, tag], CALL, OPEN, None)
    paused = out["paused"]
    assert (paused.middleware, paused.args, ran) == ("gate", {"amount": 1000}, [])

    decision = require_decision(check_in_approved(request=paused, by="alice", at=AT), gate="ask")
    now = ask_request_id(middleware="gate", tool="refund", args=paused.args, tool_call_id="t1")
    verify_decision(decision, pending_request_id=paused.id, current_request_id=now)
    rows = [
        ask_answer_row(
            approved=True,
            by="alice",
            note=None,
            middleware="gate",
            tool_name="refund",
            tool_call_id="t1",
            iteration=1,
        )
    ]
    rest = await run_tool_chain(
        [CAP, gate, tag],
        ToolCallInfo("refund", "t1", 1, paused.args),
        start=out["index"] + 1,
        ask_policy="refuse",
    )
    rows += rest.rows
    assert (ran, rest.value) == (["tag"], {"amount": 1000, "tagged": True})
    assert [(r["middleware"], r["outcome"], r.get("why")) for r in rows] == [
        ("gate", "allow", "approved by alice"),
        ("tag", "allow", "tag"),
    ]
    with pytest.raises(
        ResumeDecisionError,
        match=r"^this decision answers request 'ask_\w{32}', which has already been "
        r"answered: a decision answers its request once\. ",
    ):
        verify_decision(decision, pending_request_id=paused.id, answered_ids={paused.id})


async def test_a_declined_ask_never_runs_the_tool() -> None:
    """Decline: the model reads ``declined by human: <note>``."""
    gate = NS(name="gate", on_tool_call=lambda c: ask("approve?"))
    paused = (await dispatch([gate], CALL, OPEN, None))["paused"]
    decision = check_in_declined(request=paused, by="bob", note="too much", at=AT)
    assert declined_result(decision.note) == "declined by human: too much"
