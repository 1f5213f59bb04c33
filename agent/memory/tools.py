"""The model's two memory tools: ``remember`` (write an item) and ``recall`` (search items).

Law: both act in the namespace of the run's identity (``namespace_of(ctx.identity)``); an
item ``remember`` writes records its origin — the run, the conversation and turn, the
commit (the tool call's runtime stage id), the stage and the tool call — so ``agent why``
can name where a recalled fact was learned. ``recall`` answers with each item's id, so a
later answer can be traced to the item, and the item to its origin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent._tools.tools import Tool, ToolContext, make_tool

__all__ = ["memory_tools", "origin_of"]


def origin_of(ctx: ToolContext) -> dict[str, Any]:
    """Where a tool call that writes memory runs: what the item records as its origin."""
    origin: dict[str, Any] = {"run_id": ctx.run_id}
    if ctx.conversation is not None:
        origin["conversation"] = ctx.conversation
        origin["turn"] = ctx.turn
    origin["commit"] = ctx.step
    origin["stage"] = "tool-calls"
    origin["tool_call_id"] = ctx.tool_call_id
    origin["iteration"] = ctx.iteration
    return origin


def memory_tools(memory: Any, namespace_of: Callable[[Any], tuple[str, ...]], k: int = 5) -> tuple[Tool, Tool]:
    """``remember`` and ``recall`` on ``memory`` (an ``agent.memory`` store)."""

    def remember(args: dict[str, Any], ctx: ToolContext) -> str:
        ident = memory.put(namespace_of(ctx.identity), args["text"], origin=origin_of(ctx))
        return f"remembered as {ident}"

    def recall(args: dict[str, Any], ctx: ToolContext) -> str:
        items = memory.search(namespace_of(ctx.identity), args["query"], k=k)
        if not items:
            return "nothing remembered matches"
        return "\n".join(f"[{item.id}] {item.text}" for item in items)

    return (
        make_tool(
            name="remember",
            description="Save one fact worth knowing in later conversations (a preference, a name, a decision).",
            input_schema={
                "type": "object",
                "properties": {"text": {"type": "string", "description": "the fact, as one sentence"}},
                "required": ["text"],
            },
            execute=remember,
        ),
        make_tool(
            name="recall",
            description="Search what was remembered in earlier conversations.",
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string", "description": "words to search for"}},
                "required": ["query"],
            },
            execute=recall,
        ),
    )
