"""Declaring a tool's effect: the four kinds, refused otherwise; what a plain run records.

(Crash recovery with real processes: tests/store/test_store_effects.py.)
"""

from __future__ import annotations

from typing import Any

import pytest

from agent import Agent, ToolDefinitionError, checkable, define_tool, tool
from agent.providers import scripted

SCHEMA = {"type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}


def refund(args: dict[str, Any], ctx: Any) -> str:
    return f"refunded {args['order']}"


@pytest.mark.parametrize("effect", ["write", "", None, 3, "Idempotent"])
def test_an_unknown_effect_is_refused_naming_the_tool(effect: Any) -> None:
    """Anything but read/idempotent/unsafe/checkable(fn) is refused when the tool is made."""
    with pytest.raises(ToolDefinitionError, match=r"tool 'issue_refund': effect=.* is not an effect; use 'read'"):
        define_tool(name="issue_refund", description="Refund.", input_schema=SCHEMA, execute=refund, effect=effect)


def test_checkable_needs_a_function() -> None:
    """``checkable`` takes a function ``fn(key, args)``."""
    with pytest.raises(ToolDefinitionError, match=r"checkable\(fn\): expected a function"):
        checkable("nope")  # type: ignore[arg-type]


def test_the_decorator_takes_an_effect() -> None:
    """``@tool(effect=...)`` sets it as ``define_tool`` does; the default is "read"."""

    @tool(effect="idempotent")
    def send_mail(to: str) -> str:
        """Send a mail."""
        return f"sent to {to}"

    assert send_mail.effect == "idempotent"
    assert define_tool(name="look", description="Look.", input_schema=SCHEMA, execute=refund).effect == "read"


def test_a_read_tool_records_nothing_and_an_effect_records_its_outcome() -> None:
    """Absent means byte-identical: a read tool writes no ``tool_effects``; an unsafe one writes
    one row per call, with its idempotency key."""
    script = [{"tool_calls": [{"id": "c1", "name": "issue_refund", "args": {"order": "A-1"}}]}, "done"]
    for effect in ("read", "unsafe"):
        made = define_tool(
            name="issue_refund", description="Refund.", input_schema=SCHEMA, execute=refund, effect=effect
        )
        agent = Agent.create(provider=scripted(script)).tool(made).build()
        assert agent.run("refund") == "done"
        snapshot = agent.last_snapshot()
        assert snapshot is not None
        if effect == "read":
            assert "tool_effects" not in snapshot.shared_state
        else:
            [row] = snapshot.shared_state["tool_effects"]
            assert row["effect"] == "unsafe" and row["outcome"] == "ran" and row["key"].endswith(":c1")
