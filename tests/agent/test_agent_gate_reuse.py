"""The resume path of ``dispatch_call`` reuses the first pass's gates: the same call, judged the same.

A middleware ``ask`` pauses a call before the links after it, argument validation and
the tool ran; once a person approves, the rest of the chain, validation and the tool run
on resume. These tests pin that the resumed call leaves the same ledger rows (of the links
after the asker), the same tool message and the same tool runs as a fresh dispatch of the
same call in which the asker had allowed.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_helpers import Counter, build, call, calls, refund_tool, tool_messages

from agent import Paused
from governance import LEDGER_KEY, allow, ask, check_in_approved, deny


class Asker:
    """Asks about every refund (``asking=True``), or allows it."""

    name = "asker"

    def __init__(self, asking: bool) -> None:
        self.asking = asking

    def on_tool_call(self, info: Any) -> Any:
        return ask("refund?") if self.asking else allow()


class Doubler:
    """Doubles the amount (a transform), or denies amounts above 50."""

    name = "doubler"

    def on_tool_call(self, info: Any) -> Any:
        if info.args["amount"] > 50:
            return deny("too much")
        return allow({**info.args, "amount": info.args["amount"] * 2}, "house rule: double it")


class Breaker:
    """Rewrites the order id to a number, which the tool's schema refuses."""

    name = "breaker"

    def on_tool_call(self, info: Any) -> Any:
        return allow({**info.args, "order_id": 7}, "numeric ids")


def _run(asking: bool, links: tuple[Any, ...], amount: int) -> tuple[list[dict[str, Any]], list[str], list[Any]]:
    """(ledger rows of the links after the asker, tool messages, tool runs) for one refund call."""
    body = Counter(lambda args: f"refunded {args['amount']} on {args['order_id']}")
    agent, _ = build(
        [calls(call("c1", "refund", order_id="A-1", amount=amount)), "done"],
        refund_tool(body),
        configure=lambda b: b.tool_middleware(Asker(asking), *links),
    )
    out = agent.run("refund A-1")
    if asking:
        assert isinstance(out, Paused) and out.ask is not None
        out = agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="alice"))
    assert out == "done"
    state = agent.last_snapshot().shared_state
    rows = [dict(row) for row in state.get(LEDGER_KEY, []) if row["middleware"] != "asker"]
    return rows, tool_messages(state["history"]), body.runs


@pytest.mark.parametrize(
    ("links", "amount", "message"),
    [
        ((Doubler(),), 10, "refunded 20 on A-1"),
        ((Doubler(),), 60, "too much"),
        ((Breaker(),), 10, "order_id"),
    ],
    ids=["transformed", "denied-after-the-ask", "invalid-after-transform"],
)
def test_a_resumed_call_meets_the_same_gates_as_a_fresh_one(links: tuple[Any, ...], amount: int, message: str) -> None:
    """Rows of the later links, the model's tool message and the tool's runs are equal on both paths."""
    fresh = _run(False, links, amount)
    resumed = _run(True, links, amount)
    assert resumed == fresh
    assert message in fresh[1][0]


def test_dispatch_call_calls_one_function_per_gate_in_the_docstring_order() -> None:
    """``dispatch_call`` reads as its docstring: permission → before-tool → arguments → check-in → execute."""
    import ast
    import inspect

    from agent._chart import dispatch

    tree = ast.parse(inspect.getsource(dispatch.dispatch_call))
    gates = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    in_source_order = sorted(gates, key=lambda n: (n.lineno, n.col_offset))
    order = [n.func.id for n in in_source_order if n.func.id.endswith(("_gate", "_execute"))]
    assert order == ["permission_gate", "before_tool_gate", "argument_gate", "check_in_gate", "_execute"]
    doc = dispatch.__doc__ or ""
    assert "permission → before-tool middleware → argument validation" in doc and "→ check-in → execute" in doc
