"""The after-tool chain: the onion (reverse order), result transforms, and an after-tool
deny that replaces what the model reads while the real result is kept."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

from governance import ToolCallInfo, allow, ask, deny
from governance.chains import run_after_tool_chain, run_tool_chain


def ran(result: Any = None, *, error: bool = False) -> ToolCallInfo:
    """A lookup call that ran with ``{"id": 7}`` and returned ``result``."""
    return ToolCallInfo(
        tool_name="lookup",
        tool_call_id="c9",
        iteration=1,
        args={"id": 7},
        result={"name": "Ann", "ssn": "123-45-6789"} if result is None else result,
        error=error,
    )


def row(middleware: str, outcome: str, **extra: Any) -> dict[str, Any]:
    """The expected after-tool row for this file's call."""
    return {
        "middleware": middleware,
        "moment": "after-tool",
        "at": "tool",
        "tool_name": "lookup",
        "tool_call_id": "c9",
        "iteration": 1,
        "outcome": outcome,
        "changed": "before" in extra,
        **extra,
    }


async def test_the_onion_runs_before_in_order_and_after_in_reverse() -> None:
    """Law 5: outer, middle, inner before; inner, middle, outer after."""
    order: list[str] = []

    def link(name: str) -> NS:
        return NS(
            name=name,
            on_tool_call=lambda c: order.append(f"before:{name}") or allow(),
            on_tool_result=lambda c: order.append(f"after:{name}") or allow(),
        )

    links = [link("outer"), link("middle"), link("inner")]
    before = await run_tool_chain(links, ran())
    after = await run_after_tool_chain(links, ran())
    assert order == [
        "before:outer",
        "before:middle",
        "before:inner",
        "after:inner",
        "after:middle",
        "after:outer",
    ]
    assert [r["moment"] for r in before.rows + after.rows] == ["before-tool"] * 3 + ["after-tool"] * 3


async def test_the_outer_link_sees_the_inner_links_output() -> None:
    """Law 5: the outer after-link's before is the inner link's output."""

    def redact(c: ToolCallInfo) -> Any:
        return allow({k: v for k, v in c.result.items() if k != "ssn"}, "dropped the ssn")

    def upper(c: ToolCallInfo) -> Any:
        return allow({k: v.upper() for k, v in c.result.items()}, "shouting")

    links = [NS(name="outer", on_tool_result=upper), NS(name="inner", on_tool_result=redact)]
    result = await run_after_tool_chain(links, ran())
    assert result.value == {"name": "ANN"}
    assert result.rows == [
        row(
            "inner",
            "allow",
            why="dropped the ssn",
            before={"name": "Ann", "ssn": "123-45-6789"},
            after={"name": "Ann"},
        ),
        row("outer", "allow", why="shouting", before={"name": "Ann"}, after={"name": "ANN"}),
    ]


async def test_an_after_tool_deny_keeps_the_real_result_and_gives_the_reason() -> None:
    """Law 5: the model reads the reason; ``value`` is still the tool's real result; the row
    shows what was withheld (changed, before = result, after = reason)."""
    real = {"name": "Ann", "ssn": "123-45-6789"}
    links = [NS(name="dlp", on_tool_result=lambda c: deny("result withheld: personal data"))]
    result = await run_after_tool_chain(links, ran(real))
    assert (result.verdict, result.reason, result.value) == (
        "deny",
        "result withheld: personal data",
        real,
    )
    assert result.rows == [
        row(
            "dlp",
            "deny",
            why="result withheld: personal data",
            before=real,
            after="result withheld: personal data",
        )
    ]


async def test_an_inner_deny_stops_the_outer_link() -> None:
    """Law 2 on the way back: the outer link never sees a denied result."""
    seen: list[str] = []
    outer = NS(name="outer", on_tool_result=lambda c: seen.append("outer") or allow())
    inner = NS(name="inner", on_tool_result=lambda c: deny("no"))
    result = await run_after_tool_chain([outer, inner], ran())
    assert seen == []
    assert (result.middleware, result.index) == ("inner", 1)


async def test_a_deny_after_a_transform_shows_the_transformed_value_as_before() -> None:
    """The deny row's ``before`` is what the model would have read, the real result stays."""
    inner = NS(name="inner", on_tool_result=lambda c: allow("short", "summarised"))
    outer = NS(name="outer", on_tool_result=lambda c: deny("no"))
    result = await run_after_tool_chain([outer, inner], ran("long text"))
    assert result.value == "long text"
    assert result.rows[-1] == row("outer", "deny", why="no", before="short", after="no")


async def test_a_throwing_after_link_is_a_deny() -> None:
    """Law 3 after the tool."""

    def boom(c: ToolCallInfo) -> Any:
        raise RuntimeError("scanner crashed")

    result = await run_after_tool_chain([NS(name="scan", on_tool_result=boom)], ran("x"))
    assert result.reason == "middleware 'scan' threw: scanner crashed"
    assert result.rows == [
        row(
            "scan",
            "deny",
            why="middleware 'scan' threw: scanner crashed",
            before="x",
            after="middleware 'scan' threw: scanner crashed",
        )
    ]


async def test_an_ask_after_the_tool_ran_is_a_denial() -> None:
    """Law 4: there is no pause after a tool runs."""
    result = await run_after_tool_chain([NS(name="late", on_tool_result=lambda c: ask("ok?"))], ran("x"))
    assert result.reason == (
        "middleware 'late' asked a person to decide after tool 'lookup' ran, and there is no "
        "pause after a tool runs to carry that ask: ok?. Ask in on_tool_call, where a pause "
        "exists, or decide here with allow()/deny()."
    )


async def test_a_call_only_link_files_no_after_tool_row() -> None:
    """Law 6: a link with only on_tool_call is skipped after the tool."""
    result = await run_after_tool_chain([NS(name="gate", on_tool_call=lambda c: allow())], ran("x"))
    assert (result.verdict, result.value, result.rows) == ("allow", "x", [])


async def test_the_result_hook_sees_error_and_the_args_the_tool_ran_with() -> None:
    """A tool that raised reaches on_tool_result with ``error=True`` and its message."""
    seen: list[ToolCallInfo] = []
    spy = NS(name="spy", on_tool_result=lambda c: seen.append(c) or allow())
    await run_after_tool_chain([spy], ran("boom: disk full", error=True))
    assert (seen[0].error, seen[0].result, seen[0].args) == (True, "boom: disk full", {"id": 7})


async def test_a_none_result_is_recorded_as_null_when_denied() -> None:
    """A tool that returned None still shows ``before: None`` in a deny row."""
    links = [NS(name="no", on_tool_result=lambda c: deny("nothing to show"))]
    call = ToolCallInfo("lookup", "c9", 1, {"id": 7}, result=None)
    result = await run_after_tool_chain(links, call)
    assert result.rows[0]["before"] is None
    assert "before" in result.rows[0]
