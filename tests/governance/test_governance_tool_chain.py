"""The before-tool chain: declaration order, first non-allow wins, throw/malfunction = deny,
no hook = no row, resume from a link with asks refused — and it never raises."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace as NS
from typing import Any

from governance import ToolCallInfo, allow, ask, deny
from governance.chains import run_tool_chain


def call(args: dict[str, Any] | None = None) -> ToolCallInfo:
    """A refund call at iteration 2."""
    return ToolCallInfo(
        tool_name="refund",
        tool_call_id="call-1",
        iteration=2,
        args={"amount": 5000} if args is None else args,
        history=[{"role": "user", "content": "refund please"}],
        identity={"tenant": "acme"},
    )


def row(middleware: str, outcome: str, **extra: Any) -> dict[str, Any]:
    """The expected before-tool row for this file's call."""
    return {
        "middleware": middleware,
        "moment": "before-tool",
        "at": "tool",
        "tool_name": "refund",
        "tool_call_id": "call-1",
        "iteration": 2,
        "outcome": outcome,
        "changed": "before" in extra,
        **extra,
    }


async def test_links_run_in_declaration_order_each_seeing_the_previous_output() -> None:
    """Law 1: link 2 sees link 1's transform, and the tool gets link 2's output."""
    seen: list[dict[str, Any]] = []

    def cap(c: ToolCallInfo) -> Any:
        seen.append(dict(c.args))
        return allow({**c.args, "amount": 1000}, "capped at 1000")

    def tag(c: ToolCallInfo) -> Any:
        seen.append(dict(c.args))
        return allow({**c.args, "tagged": True}, "tagged for audit")

    result = await run_tool_chain([NS(name="cap", on_tool_call=cap), NS(name="tag", on_tool_call=tag)], call())
    assert seen == [{"amount": 5000}, {"amount": 1000}]
    assert result.verdict == "allow"
    assert result.value == {"amount": 1000, "tagged": True}


async def test_a_transform_files_a_row_with_exact_before_and_after() -> None:
    """A transform's row has changed=True, its why, and the args before and after it."""
    cap = NS(name="cap", on_tool_call=lambda c: allow({"amount": 1000}, "capped at 1000"))
    result = await run_tool_chain([cap], call())
    assert result.rows == [row("cap", "allow", why="capped at 1000", before={"amount": 5000}, after={"amount": 1000})]


async def test_a_pass_through_files_an_allow_row_without_values() -> None:
    """``allow()`` files ``changed: False`` and no why/before/after keys."""
    result = await run_tool_chain([NS(name="ok", on_tool_call=lambda c: allow())], call())
    assert result.rows == [row("ok", "allow")]
    assert result.value == {"amount": 5000}


async def test_a_pass_through_with_a_note_keeps_its_why() -> None:
    """``allow(why=...)`` without a value files the why but no values."""
    result = await run_tool_chain([NS(name="ok", on_tool_call=lambda c: allow(why="looked fine"))], call())
    assert result.rows == [row("ok", "allow", why="looked fine")]


async def test_first_deny_wins_and_later_links_do_not_run() -> None:
    """Law 2: after a deny, the next link is never called and files no row."""
    ran: list[str] = []
    first = NS(name="no-big", on_tool_call=lambda c: deny("refunds over 1000 need a ticket"))
    later = NS(name="later", on_tool_call=lambda c: ran.append("later") or allow())
    result = await run_tool_chain([first, later], call())
    assert ran == []
    assert result.verdict == "deny"
    assert (result.reason, result.middleware, result.index) == (
        "refunds over 1000 need a ticket",
        "no-big",
        0,
    )
    assert result.rows == [row("no-big", "deny", why="refunds over 1000 need a ticket")]


async def test_a_deny_carries_the_args_as_transformed_before_it() -> None:
    """The deny's value is the args after the earlier links' transforms."""
    cap = NS(name="cap", on_tool_call=lambda c: allow({"amount": 10}, "capped"))
    no = NS(name="no", on_tool_call=lambda c: deny("no"))
    result = await run_tool_chain([cap, no], call())
    assert result.value == {"amount": 10}


async def test_first_ask_wins_with_payload_and_index() -> None:
    """Law 2: an ask stops the walk; the verdict carries the payload, asker and index."""
    ran: list[str] = []
    pre = NS(name="pre", on_tool_call=lambda c: allow())
    gate = NS(name="gate", on_tool_call=lambda c: ask("approve $5000?", {"amount": 5000}))
    later = NS(name="later", on_tool_call=lambda c: ran.append("later") or allow())
    result = await run_tool_chain([pre, gate, later], call())
    assert ran == []
    assert result.verdict == "ask"
    assert (result.middleware, result.index) == ("gate", 1)
    assert result.ask is not None
    assert (result.ask.question, result.ask.detail) == ("approve $5000?", {"amount": 5000})
    assert result.rows == [row("pre", "allow"), row("gate", "ask", why="approve $5000?")]


async def test_a_link_that_raises_is_a_denial_naming_it() -> None:
    """Law 3: an exception becomes ``middleware '<name>' threw: <message>``."""

    def boom(c: ToolCallInfo) -> Any:
        raise RuntimeError("policy service down")

    result = await run_tool_chain([NS(name="policy", on_tool_call=boom)], call())
    assert result.verdict == "deny"
    assert result.reason == "middleware 'policy' threw: policy service down"
    assert result.rows == [row("policy", "deny", why="middleware 'policy' threw: policy service down")]


async def test_a_raise_without_message_names_the_exception_type() -> None:
    """Law 3: an exception with no message is reported by its type name."""

    def boom(c: ToolCallInfo) -> Any:
        raise KeyError

    result = await run_tool_chain([NS(name="p", on_tool_call=boom)], call())
    assert result.reason == "middleware 'p' threw: KeyError"


async def test_an_async_hook_is_awaited() -> None:
    """Hooks may be ``async``; their outcome counts like a sync one."""

    async def cap(c: ToolCallInfo) -> Any:
        await asyncio.sleep(0)
        return allow({"amount": 1}, "async cap")

    result = await run_tool_chain([NS(name="cap", on_tool_call=cap)], call())
    assert result.value == {"amount": 1}


async def test_an_async_hook_that_raises_is_a_denial() -> None:
    """Law 3 holds for async hooks too."""

    async def boom(c: ToolCallInfo) -> Any:
        raise ValueError("nope")

    result = await run_tool_chain([NS(name="a", on_tool_call=boom)], call())
    assert result.reason == "middleware 'a' threw: nope"


async def test_a_link_without_on_tool_call_files_no_row() -> None:
    """Law 6: a result-only link is skipped before the tool and files nothing."""
    result_only = NS(name="redact", on_tool_result=lambda c: allow())
    result = await run_tool_chain([result_only], call())
    assert result.verdict == "allow"
    assert result.rows == []


async def test_each_hook_call_files_exactly_one_row() -> None:
    """Law 6: three consulted links, three rows, in order."""
    links = [NS(name=n, on_tool_call=lambda c: allow()) for n in ("a", "b", "c")]
    result = await run_tool_chain(links, call())
    assert [r["middleware"] for r in result.rows] == ["a", "b", "c"]


async def test_a_non_outcome_return_is_a_denial() -> None:
    """Law 4: a hook that returns something else (here a string) malfunctioned."""
    result = await run_tool_chain([NS(name="lazy", on_tool_call=lambda c: "ok")], call())
    assert result.reason == (
        "middleware 'lazy' returned a str from on_tool_call, which is not an outcome. "
        "Return allow(), allow(new_args, why), deny(reason) or ask(question)."
    )
    assert result.rows[0]["outcome"] == "deny"


async def test_allowing_args_that_are_not_a_dict_is_a_denial() -> None:
    """Law 4: a before-tool transform must produce a dict of args."""
    result = await run_tool_chain([NS(name="bad", on_tool_call=lambda c: allow([1], "list"))], call())
    assert result.reason == (
        "middleware 'bad' returned allow(an array) at the before-tool moment, and tool "
        "arguments are an object. Return allow(new_args, why) with a dict to rewrite them, "
        "allow() to pass them through unchanged, deny(reason) to refuse the call or "
        "ask(question) to ask a person."
    )


async def test_mutating_call_args_in_place_changes_nothing() -> None:
    """A hook gets a private copy: an in-place edit is not an undeclared transform."""

    def sneaky(c: ToolCallInfo) -> Any:
        c.args["amount"] = 1
        return allow()

    original = {"amount": 5000}
    result = await run_tool_chain([NS(name="sneaky", on_tool_call=sneaky)], call(original))
    assert result.value == {"amount": 5000}
    assert original == {"amount": 5000}


async def test_the_hook_sees_the_call_context() -> None:
    """``call`` carries tool name, call id, iteration, history and identity."""
    seen: list[ToolCallInfo] = []
    await run_tool_chain([NS(name="spy", on_tool_call=lambda c: seen.append(c) or allow())], call())
    c = seen[0]
    assert (c.tool_name, c.tool_call_id, c.iteration, c.identity) == (
        "refund",
        "call-1",
        2,
        {"tenant": "acme"},
    )
    assert c.history == ({"role": "user", "content": "refund please"},)


async def test_start_skips_the_links_before_it() -> None:
    """Resume: ``start=index+1`` never re-runs the asker or the links before it."""
    ran: list[str] = []
    links = [NS(name=n, on_tool_call=lambda c, n=n: ran.append(n) or allow()) for n in "abc"]
    result = await run_tool_chain(links, call(), start=2)
    assert ran == ["c"]
    assert [r["middleware"] for r in result.rows] == ["c"]


async def test_a_second_ask_under_refuse_is_a_denial() -> None:
    """Under ``ask_policy="refuse"`` an ask becomes a deny naming the second asker."""
    second = NS(name="second-gate", on_tool_call=lambda c: ask("really?"))
    result = await run_tool_chain([second], call(), ask_policy="refuse")
    reason = "middleware 'second-gate' asked a person to decide, and there is no pause here to carry that ask: really?"
    assert (result.verdict, result.reason, result.refused_ask) == ("deny", reason, True)
    assert result.rows == [row("second-gate", "deny", why=reason)]


async def test_an_empty_chain_allows_with_no_rows() -> None:
    """No links: allow, the args unchanged, no rows."""
    result = await run_tool_chain([], call())
    assert (result.verdict, result.value, result.rows) == ("allow", {"amount": 5000}, [])


async def test_a_hook_that_is_a_raising_property_is_skipped() -> None:
    """Law 7: even a link whose hook attribute raises does not make the chain raise."""

    class Weird:
        name = "weird"

        @property
        def on_tool_call(self) -> Any:
            raise RuntimeError("no")

    result = await run_tool_chain([Weird()], call())
    assert (result.verdict, result.rows) == ("allow", [])
