"""The tool chain on the real agent: gate order, transformed args, ledger rows, permissions."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS
from typing import Any

import pytest
from agent_helpers import Counter, build, call, calls, refund_tool, tool_messages, weather_tool

from agent import PolicyHaltError
from governance import allow, deny
from governance.permissions import PermissionDecision

REFUND_CALL = calls(call("c1", "refund", order_id="A1", amount=250))


def with_tools(*links: Any, messages: tuple[Any, ...] = ()) -> Any:
    """A builder hook adding tool middleware ``links`` (and message middleware)."""

    def configure(builder: Any) -> Any:
        builder = builder.tool_middleware(*links)
        return builder.message_middleware(*messages) if messages else builder

    return configure


class Checker:
    """A permission checker that records the requests and answers ``decide(request)``."""

    name = "policy"

    def __init__(self, decide: Any, log: list[str] | None = None) -> None:
        self.decide = decide
        self.log = log if log is not None else []
        self.requests: list[Any] = []

    def check(self, request: Any) -> Any:
        self.log.append("permission")
        self.requests.append(request)
        return self.decide(request)


def test_gate_order() -> None:
    """permission → before (declaration order) → check-in → execute → after (reverse order)."""
    log: list[str] = []

    def link(name: str) -> Any:
        return NS(
            name=name,
            on_tool_call=lambda c: log.append(f"before:{name}") or allow(),
            on_tool_result=lambda c: log.append(f"after:{name}") or allow(),
        )

    def predicate(args: Any, ctx: Any) -> bool:
        log.append("check-in")
        return False

    def body(args: dict[str, Any], ctx: Any) -> str:
        log.append("execute")
        return "ok"

    checker = Checker(lambda r: PermissionDecision.allow(), log)
    agent, _ = build(
        [REFUND_CALL, "done"],
        refund_tool(body, check_in=predicate),
        permission_checker=checker,
        configure=with_tools(link("first"), link("second")),
    )
    assert agent.run("refund") == "done"
    assert log == [
        "permission",
        "before:first",
        "before:second",
        "check-in",
        "execute",
        "after:second",
        "after:first",
    ]


def test_validation_runs_on_the_transformed_args() -> None:
    """A before-tool link that completes the args makes an invalid call valid; the tool runs."""
    body = Counter(lambda a: "ok")
    fill = NS(name="fill", on_tool_call=lambda c: allow({**c.args, "amount": 10}, "default amount"))
    agent, _ = build(
        [calls(call("c1", "refund", order_id="A1")), "done"], refund_tool(body), configure=with_tools(fill)
    )
    agent.run("refund")
    assert body.runs == [{"order_id": "A1", "amount": 10}]


def test_validation_refuses_args_a_link_broke() -> None:
    """A link whose rewrite breaks the schema: validation refuses, the tool does not run."""
    body = Counter()
    breaker = NS(name="breaker", on_tool_call=lambda c: allow({"order_id": c.args["order_id"]}, "dropped amount"))
    agent, _ = build([REFUND_CALL, "done"], refund_tool(body), configure=with_tools(breaker))
    agent.run("refund")
    assert body.runs == []
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == [
        "Invalid arguments for tool 'refund' — the call was not executed.\n"
        "- 'amount' is required but missing\n"
        "Fix the arguments to match the tool's input schema and call it again."
    ]


def cap(call_info: Any) -> Any:
    """Cap refunds at 100."""
    if call_info.args["amount"] > 100:
        return allow({**call_info.args, "amount": 100}, "refunds are capped at 100")
    return allow()


CAP = NS(name="cap", on_tool_call=cap)


def test_transformed_args_reach_execute_but_history_keeps_the_original() -> None:
    """The tool runs with the capped args; the assistant turn keeps the model's 250."""
    seen: list[Any] = []

    def body(args: dict[str, Any], ctx: Any) -> str:
        seen.append(dict(args))
        return "refunded"

    agent, provider = build([REFUND_CALL, "done"], refund_tool(body), configure=with_tools(CAP))
    agent.run("refund")
    assert seen == [{"order_id": "A1", "amount": 100}]
    state = agent.last_snapshot().shared_state
    assert state["history"][1]["tool_calls"] == [
        {"id": "c1", "name": "refund", "args": {"order_id": "A1", "amount": 250}}
    ]
    llm_write = agent.last_snapshot().commit_log[1].to_dict()["trace"]
    assert [op["value"] for op in llm_write if op["path"] == ["llm_latest_tool_calls"]] == [
        [{"id": "c1", "name": "refund", "args": {"order_id": "A1", "amount": 250}}]
    ]
    assert provider.requests[1].messages[1]["tool_calls"][0]["args"] == {"order_id": "A1", "amount": 250}


def test_a_before_deny_is_what_the_model_reads_and_later_links_do_not_run() -> None:
    """A before-tool deny: the model reads the reason; later links and the tool do not run."""
    later = Counter(lambda a: None)
    body = Counter()
    block = NS(name="block", on_tool_call=lambda c: deny("refunds are paused today"))
    after_block = NS(name="later", on_tool_call=lambda c: later(c.args, None) or allow())
    agent, _ = build([REFUND_CALL, "done"], refund_tool(body), configure=with_tools(block, after_block))
    agent.run("refund")
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["refunds are paused today"]
    assert later.runs == [] and body.runs == []


def test_a_throwing_tool_link_is_a_denial() -> None:
    """A before-tool link that raises denies: ``middleware '<name>' threw: <message>``."""

    def broken(_c: Any) -> Any:
        raise ValueError("lookup failed")

    body = Counter()
    agent, _ = build(
        [REFUND_CALL, "done"], refund_tool(body), configure=with_tools(NS(name="risk", on_tool_call=broken))
    )
    agent.run("refund")
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["middleware 'risk' threw: lookup failed"]
    assert body.runs == []


def redact(call_info: Any) -> Any:
    """Redact the card in a refund result."""
    return (
        allow(call_info.result.replace("4111", "****"), "redacted the card") if "4111" in call_info.result else allow()
    )


def test_after_tool_transform_and_deny() -> None:
    """After-tool: a transform is what the model reads; tool.end still reports the real result."""
    ends: list[str] = []
    body = Counter(lambda a: "refunded to card 4111")
    agent, _ = build(
        [REFUND_CALL, "done"], refund_tool(body), configure=with_tools(NS(name="redact", on_tool_result=redact))
    )
    agent.on("tool.end", lambda _n, p: ends.append(p["result"]))
    agent.run("refund")
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["refunded to card ****"]
    assert ends == ["refunded to card 4111"]


def test_after_tool_deny_replaces_the_result_with_the_reason() -> None:
    """An after-tool deny: the model reads the reason; the tool did run."""
    body = Counter(lambda a: "secret result")
    agent, _ = build(
        [REFUND_CALL, "done"],
        refund_tool(body),
        configure=with_tools(NS(name="withhold", on_tool_result=lambda c: deny("result withheld"))),
    )
    agent.run("refund")
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["result withheld"]
    assert len(body.runs) == 1


def test_ledger_of_two_tool_links_and_one_message_link() -> None:
    """The full ledger: input row, before rows (with exact before/after), after rows, output row."""
    agent, _ = build(
        [REFUND_CALL, "Refunded 100."],
        refund_tool(lambda a, c: "refunded to card 4111"),
        configure=with_tools(
            CAP, NS(name="redact", on_tool_result=redact), messages=(NS(name="note", on_message=lambda m: allow()),)
        ),
    )
    assert agent.run("refund A1") == "Refunded 100."
    tool_head = {"at": "tool", "tool_name": "refund", "tool_call_id": "c1", "iteration": 1}
    assert agent.last_snapshot().shared_state["middleware_decisions"] == [
        {
            "middleware": "note",
            "moment": "input",
            "at": "message",
            "phase": "input",
            "iteration": 0,
            "outcome": "allow",
            "changed": False,
        },
        {
            "middleware": "cap",
            "moment": "before-tool",
            **tool_head,
            "outcome": "allow",
            "changed": True,
            "why": "refunds are capped at 100",
            "before": {"order_id": "A1", "amount": 250},
            "after": {"order_id": "A1", "amount": 100},
        },
        {
            "middleware": "redact",
            "moment": "after-tool",
            **tool_head,
            "outcome": "allow",
            "changed": True,
            "why": "redacted the card",
            "before": "refunded to card 4111",
            "after": "refunded to card ****",
        },
        {
            "middleware": "note",
            "moment": "output",
            "at": "message",
            "phase": "output",
            "iteration": 2,
            "outcome": "allow",
            "changed": False,
        },
    ]


def test_row_keys_are_in_contract_order() -> None:
    """Each row's keys come in the contract's order."""
    agent, _ = build([REFUND_CALL, "ok"], refund_tool(), configure=with_tools(CAP))
    agent.run("refund")
    [row] = agent.last_snapshot().shared_state["middleware_decisions"]
    assert list(row) == [
        "middleware",
        "moment",
        "at",
        "tool_name",
        "tool_call_id",
        "iteration",
        "outcome",
        "changed",
        "why",
        "before",
        "after",
    ]


def test_a_link_without_a_hook_for_the_moment_files_no_row() -> None:
    """A link with only on_tool_result files no before-tool row; every hook call files one."""
    agent, _ = build(
        [REFUND_CALL, "ok"],
        refund_tool(),
        configure=with_tools(NS(name="after-only", on_tool_result=lambda c: allow())),
    )
    agent.run("refund")
    rows = agent.last_snapshot().shared_state["middleware_decisions"]
    assert [(r["middleware"], r["moment"]) for r in rows] == [("after-only", "after-tool")]


def test_one_event_per_row_without_values() -> None:
    """middleware.decision events mirror the rows, without before/after."""
    events: list[dict[str, Any]] = []
    agent, _ = build([REFUND_CALL, "ok"], refund_tool(), configure=with_tools(CAP))
    agent.on("middleware.decision", lambda _n, p: events.append(p))
    agent.run("refund")
    [row] = agent.last_snapshot().shared_state["middleware_decisions"]
    assert events == [{k: v for k, v in row.items() if k not in ("before", "after")}]


def commit_log_json(agent: Any) -> str:
    """The last run's commit log as canonical JSON."""
    return json.dumps([c.to_dict() for c in agent.last_snapshot().commit_log], sort_keys=True)


def test_no_middleware_means_no_ledger_key_and_byte_identical_commits() -> None:
    """An agent with empty middleware lists commits exactly what a plain agent commits."""
    replies = [calls(call("c1", "weather", city="Paris")), "sunny"]
    plain, _ = build(replies, weather_tool())
    plain.run("Weather?")
    empty, _ = build(
        replies,
        weather_tool(),
        configure=lambda b: b.tool_middleware().message_middleware().check_in(evidence="standard"),
    )
    empty.run("Weather?")
    assert "middleware_decisions" not in plain.last_snapshot().shared_state
    assert commit_log_json(empty) == commit_log_json(plain)
    assert empty.last_snapshot().narrative == plain.last_snapshot().narrative


def test_a_check_in_that_never_trips_commits_byte_identical_state() -> None:
    """A tool whose check-in predicate never trips commits what the same tool without one commits."""
    replies = [calls(call("c1", "weather", city="Paris")), "sunny"]
    plain, _ = build(replies, weather_tool())
    plain.run("Weather?")
    gated, _ = build(replies, weather_tool(check_in=lambda args, ctx: False))
    gated.run("Weather?")
    assert commit_log_json(gated) == commit_log_json(plain)


def test_permission_deny_text_and_no_middleware_runs() -> None:
    """A permission deny: the model reads ``[permission denied: <rationale>]``; no link runs, no row."""
    body = Counter()
    link = Counter(lambda a: None)
    agent, _ = build(
        [REFUND_CALL, "ok"],
        refund_tool(body),
        permission_checker=Checker(lambda r: PermissionDecision.deny("refunds need a manager")),
        configure=with_tools(NS(name="watch", on_tool_call=lambda c: link(c.args, None) or allow())),
    )
    agent.run("refund")
    state = agent.last_snapshot().shared_state
    assert tool_messages(state["history"]) == ["[permission denied: refunds need a manager]"]
    assert body.runs == [] and link.runs == []
    assert "middleware_decisions" not in state


def test_permission_deny_without_rationale_says_policy() -> None:
    """A deny with no rationale reads ``[permission denied: policy]``."""
    agent, _ = build(
        [REFUND_CALL, "ok"], refund_tool(), permission_checker=Checker(lambda r: PermissionDecision.deny())
    )
    agent.run("refund")
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["[permission denied: policy]"]


def test_a_raising_permission_checker_is_a_deny() -> None:
    """A checker that raises denies with the terminal refusal; the tool does not run."""

    def explode(_r: Any) -> Any:
        raise RuntimeError("policy service down")

    body = Counter()
    agent, _ = build([REFUND_CALL, "ok"], refund_tool(body), permission_checker=Checker(explode))
    assert agent.run("refund") == "ok"
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == [
        "[permission denied: Tool 'refund' could not be authorized. This will not change during this run — do "
        "not call it again. Continue without it, or say what you are unable to do.]"
    ]
    assert body.runs == []


def test_permission_request_carries_the_call() -> None:
    """The checker sees the tool, the model's args, the call id, the iteration and the identity."""
    checker = Checker(lambda r: PermissionDecision.allow())
    agent, _ = build([REFUND_CALL, "ok"], refund_tool(), permission_checker=checker)
    agent.run("refund", identity={"user": "alice"})
    [request] = checker.requests
    assert (request.tool_name, request.args, request.tool_call_id, request.iteration, request.identity) == (
        "refund",
        {"order_id": "A1", "amount": 250},
        "c1",
        1,
        {"user": "alice"},
    )


def test_permission_halt_stops_the_run_and_raises() -> None:
    """A halt records what the model reads, stops the run (later calls not dispatched) and raises."""
    body = Counter()
    batch = calls(call("c1", "refund", order_id="A", amount=1), call("c2", "refund", order_id="B", amount=2))
    agent, provider = build(
        [batch, "never"],
        refund_tool(body),
        permission_checker=Checker(lambda r: PermissionDecision.halt("fraud suspected")),
    )
    with pytest.raises(PolicyHaltError, match=r"^Policy halt at tool 'refund' \(call c1\): fraud suspected$") as caught:
        agent.run("refund")
    assert (caught.value.reason, caught.value.tool_name, caught.value.tool_call_id) == (
        "fraud suspected",
        "refund",
        "c1",
    )
    state = agent.last_snapshot().shared_state
    assert tool_messages(state["history"]) == ["Tool 'refund' is not available in this context."]
    assert state["policy_halt"] == {
        "tool_name": "refund",
        "tool_call_id": "c1",
        "reason": "fraud suspected",
        "tell_llm": "Tool 'refund' is not available in this context.",
    }
    assert body.runs == []
    assert len(provider.requests) == 1
    assert agent.last_snapshot().commit_log[-1].runtime_stage_id == "tool-calls#3"
