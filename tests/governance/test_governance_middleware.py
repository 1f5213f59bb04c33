"""What a middleware is: duck types with hooks looked up on the object, and the build-time
validation that names what is missing."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from governance import (
    MessageInfo,
    MessageMiddleware,
    MiddlewareDefinitionError,
    ToolCallInfo,
    ToolMiddleware,
    allow,
    deny,
)
from governance.chains import run_after_tool_chain, run_message_chain, run_tool_chain
from governance.middleware import validate_chain, validate_message_middleware, validate_tool_middleware


def test_a_namespace_with_a_hook_is_a_tool_middleware() -> None:
    """Any object with a name and a hook qualifies; it is returned unchanged."""
    link = NS(name="x", on_tool_call=lambda c: allow())
    assert validate_tool_middleware(link) is link


def test_a_result_only_link_is_a_tool_middleware() -> None:
    """on_tool_result alone is enough."""
    validate_tool_middleware(NS(name="x", on_tool_result=lambda c: allow()))


def test_a_tool_middleware_without_name_is_refused() -> None:
    """The error says which link and what is missing."""
    with pytest.raises(
        MiddlewareDefinitionError,
        match=r"^tool middleware #2 \(SimpleNamespace\) has no 'name' attribute: give it a "
        r"non-empty string 'name'; it labels every ledger row the middleware files$",
    ):
        validate_tool_middleware(NS(on_tool_call=lambda c: allow()), position=2)


def test_a_non_string_name_is_refused_by_shape() -> None:
    """A name that is not text is named by its shape."""
    with pytest.raises(
        MiddlewareDefinitionError,
        match=r"^tool middleware \(SimpleNamespace\) has 'name' = an int: ",
    ):
        validate_tool_middleware(NS(name=3, on_tool_call=lambda c: allow()))


def test_a_tool_middleware_without_hooks_is_refused() -> None:
    """Neither hook: refused, naming both."""
    with pytest.raises(
        TypeError,
        match=r"^tool middleware 'idle' has neither on_tool_call nor on_tool_result: give it at "
        r"least one hook \(on_tool_call decides before the tool runs, on_tool_result after\)$",
    ):
        validate_tool_middleware(NS(name="idle"))


def test_a_hook_that_is_not_callable_is_refused() -> None:
    """A hook attribute must be callable."""
    with pytest.raises(
        MiddlewareDefinitionError,
        match=r"^tool middleware 'x': on_tool_call is not callable \(it is a str\)$",
    ):
        validate_tool_middleware(NS(name="x", on_tool_call="allow"))


def test_a_message_middleware_without_on_message_is_refused() -> None:
    """A message link needs on_message."""
    with pytest.raises(
        MiddlewareDefinitionError,
        match=r"^message middleware 'm' has no on_message hook: give it on_message\(msg\) "
        r"returning allow\(\), allow\(text, why\) or deny\(reason\)$",
    ):
        validate_message_middleware(NS(name="m", on_tool_call=lambda c: allow()))


def test_validate_chain_numbers_the_bad_link() -> None:
    """The whole chain is checked in order, with positions."""
    good = NS(name="ok", on_message=lambda m: allow())
    with pytest.raises(MiddlewareDefinitionError, match=r"^message middleware #1 \(SimpleNamespace\) has no 'name'"):
        validate_chain([good, NS(on_message=lambda m: allow())], "message")


def test_validate_chain_returns_the_links_as_a_tuple() -> None:
    """A valid chain comes back in order."""
    a, b = (
        NS(name="a", on_tool_call=lambda c: allow()),
        NS(name="b", on_tool_result=lambda c: allow()),
    )
    assert validate_chain([a, b], "tool") == (a, b)


async def test_hooks_are_looked_up_on_the_object_not_the_class() -> None:
    """A hook set on one instance belongs to that instance only."""

    class Rule:
        name = "rule"

    special, plain = Rule(), Rule()
    special.on_tool_call = lambda c: deny("special")  # type: ignore[attr-defined]
    call = ToolCallInfo("t", "c", 1, {})
    assert (await run_tool_chain([special], call)).verdict == "deny"
    assert (await run_tool_chain([plain], call)).rows == []


class OnlyBefore(ToolMiddleware):
    """A subclass of the Protocol that defines only on_tool_call."""

    name = "only-before"

    def on_tool_call(self, call: ToolCallInfo) -> Any:
        """Pass."""
        return allow()


async def test_a_protocol_subclass_has_no_hook_it_did_not_define() -> None:
    """The Protocol's placeholder on_tool_result is not a hook: no after-tool row."""
    link = OnlyBefore()
    validate_tool_middleware(link)
    result = await run_after_tool_chain([link], ToolCallInfo("t", "c", 1, {}, result="r"))
    assert result.rows == []


class Polite(MessageMiddleware):
    """A subclass of the message Protocol."""

    name = "polite"

    async def on_message(self, msg: MessageInfo) -> Any:
        """Add please."""
        return allow(msg.content + " please", "politeness")


async def test_a_message_protocol_subclass_works_as_a_link() -> None:
    """Subclassing is optional but works, async hooks included."""
    result = await run_message_chain([validate_message_middleware(Polite())], MessageInfo("input", "go"))
    assert result.value == "go please"


def test_a_message_protocol_subclass_without_on_message_is_refused() -> None:
    """Inheriting the placeholder is not defining the hook."""

    class Empty(MessageMiddleware):
        name = "empty"

    with pytest.raises(MiddlewareDefinitionError, match=r"^message middleware 'empty' has no on_message hook"):
        validate_message_middleware(Empty())
