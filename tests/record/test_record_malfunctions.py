"""A middleware hook that returns ``None`` is a malfunction, and its denial row says how to fix it."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from governance import MessageInfo, ToolCallInfo
from governance.chains import run_after_tool_chain, run_message_chain, run_tool_chain

FIX = "returned None; return allow(), deny() or ask()"


def _call(**extra: object) -> ToolCallInfo:
    return ToolCallInfo(tool_name="refund", tool_call_id="c1", iteration=1, args={"amount": 5}, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("hook", "walk"),
    [
        ("on_tool_call", lambda link: run_tool_chain([link], _call())),
        ("on_tool_result", lambda link: run_after_tool_chain([link], _call(result="ok"))),
        ("on_message", lambda link: run_message_chain([link], MessageInfo(phase="input", content="hi"))),
    ],
)
async def test_a_hook_returning_none_is_denied_with_a_row_that_names_the_fix(hook: str, walk: object) -> None:
    """Every hook kind: ``None`` (a forgotten ``return``) denies, and the row's reason says
    "returned None; return allow(), deny() or ask()" naming the middleware and the hook."""
    link = NS(name="lazy", **{hook: lambda _arg: None})
    result = await walk(link)  # type: ignore[operator]
    assert result.verdict == "deny"
    assert result.reason == f"middleware 'lazy' {hook} {FIX}"
    assert result.rows[-1]["outcome"] == "deny"
    assert result.rows[-1]["why"] == result.reason
