"""The message chain at the input and output boundaries: transforms, denials, and the two
malfunctions (an ask, or a non-string allow) that are denials with exact reasons."""

from __future__ import annotations

import re
from types import SimpleNamespace as NS
from typing import Any

import pytest

from governance import MessageInfo, allow, ask, deny
from governance.chains import run_message_chain


def msg(content: str = "my card is 4111 1111 1111 1111", phase: str = "input") -> MessageInfo:
    """A message at ``phase`` (iteration 0 at input, 3 at output)."""
    return MessageInfo(
        phase=phase,  # type: ignore[arg-type]
        content=content,
        history=[],
        identity=None,
        iteration=0 if phase == "input" else 3,
    )


def mask(m: MessageInfo) -> Any:
    """Mask card numbers."""
    masked = re.sub(r"\d{4} \d{4} \d{4} \d{4}", "[card]", m.content)
    return allow(masked, "masked a card number") if masked != m.content else allow()


async def test_an_input_transform_files_a_message_row_with_before_and_after() -> None:
    """The input row has at/phase/moment 'message'/'input', iteration 0, exact values."""
    result = await run_message_chain([NS(name="mask", on_message=mask)], msg())
    assert result.value == "my card is [card]"
    assert result.rows == [
        {
            "middleware": "mask",
            "moment": "input",
            "at": "message",
            "phase": "input",
            "iteration": 0,
            "outcome": "allow",
            "changed": True,
            "why": "masked a card number",
            "before": "my card is 4111 1111 1111 1111",
            "after": "my card is [card]",
        }
    ]


async def test_an_output_pass_through_files_an_output_row() -> None:
    """At output the row says moment/phase 'output' and the run's iteration."""
    result = await run_message_chain([NS(name="mask", on_message=mask)], msg("fine", "output"))
    assert result.rows == [
        {
            "middleware": "mask",
            "moment": "output",
            "at": "message",
            "phase": "output",
            "iteration": 3,
            "outcome": "allow",
            "changed": False,
        }
    ]


async def test_links_see_the_previous_links_text() -> None:
    """Law 1 at the message boundary."""
    seen: list[str] = []

    def spy(m: MessageInfo) -> Any:
        seen.append(m.content)
        return allow()

    await run_message_chain([NS(name="mask", on_message=mask), NS(name="spy", on_message=spy)], msg())
    assert seen == ["my card is [card]"]


async def test_a_deny_stops_the_chain_and_carries_the_text_so_far() -> None:
    """Law 2: the deny's value is the text as transformed before it; later links skip."""
    ran: list[str] = []
    no = NS(name="no-pii", on_message=lambda m: deny("contains personal data"))
    later = NS(name="later", on_message=lambda m: ran.append("x") or allow())
    result = await run_message_chain([NS(name="mask", on_message=mask), no, later], msg())
    assert ran == []
    assert (result.verdict, result.reason, result.middleware, result.index) == (
        "deny",
        "contains personal data",
        "no-pii",
        1,
    )
    assert result.value == "my card is [card]"
    assert result.rows[-1]["why"] == "contains personal data"


async def test_an_ask_at_the_message_boundary_is_a_denial() -> None:
    """Law 4: no pause exists here; the exact reason quotes the question."""
    result = await run_message_chain([NS(name="asker", on_message=lambda m: ask("send it?"))], msg())
    assert result.reason == (
        "middleware 'asker' asked a person to decide about the input message, and there is no "
        "pause at the message boundary to carry that ask: send it?. Ask at a TOOL moment "
        "(on_tool_call), where a pause exists, or decide here with allow()/deny()."
    )
    assert result.rows[0]["outcome"] == "deny"
    assert result.rows[0]["changed"] is False


@pytest.mark.parametrize(
    ("value", "shape"),
    [
        (42, "a number"),
        (1.5, "a number"),
        (True, "a boolean"),
        ({"a": 1}, "an object"),
        ([1], "an array"),
    ],
)
async def test_allowing_a_non_string_is_a_denial_naming_its_shape(value: Any, shape: str) -> None:
    """Law 4: a message is text; the reason names the shape, never the value."""
    bad = NS(name="bad", on_message=lambda m: allow(value, "oops"))
    result = await run_message_chain([bad], msg(phase="output"))
    assert result.reason == (
        f"middleware 'bad' returned allow({shape}) at the output message boundary, and a message "
        "is text. Return allow(some_string, why) to rewrite it, allow() to pass it through "
        "unchanged, or deny(reason) to refuse it."
    )


async def test_allowing_the_empty_string_is_a_legal_rewrite() -> None:
    """``allow('', why)`` empties the message: a value, with a reason."""
    result = await run_message_chain([NS(name="blank", on_message=lambda m: allow("", "blanked"))], msg())
    assert (result.verdict, result.value) == ("allow", "")
    assert result.rows[0]["after"] == ""


async def test_the_first_malfunction_stops_later_links() -> None:
    """Law 2 + 4: after a malfunction, later links do not run."""
    ran: list[str] = []
    bad = NS(name="bad", on_message=lambda m: ask("q"))
    later = NS(name="later", on_message=lambda m: ran.append("x") or allow())
    result = await run_message_chain([bad, later], msg())
    assert ran == []
    assert len(result.rows) == 1


async def test_a_message_link_that_raises_is_a_denial() -> None:
    """Law 3 at the message boundary."""

    def boom(m: MessageInfo) -> Any:
        raise ValueError("classifier offline")

    result = await run_message_chain([NS(name="clf", on_message=boom)], msg())
    assert result.reason == "middleware 'clf' threw: classifier offline"


async def test_a_link_without_on_message_files_no_row() -> None:
    """Law 6: no hook, no row (the builder refuses such links; the driver still copes)."""
    result = await run_message_chain([NS(name="empty")], msg("x"))
    assert (result.verdict, result.value, result.rows) == ("allow", "x", [])


async def test_an_unknown_phase_is_refused_when_the_message_is_built() -> None:
    """``MessageInfo`` only exists at 'input' or 'output'."""
    with pytest.raises(ValueError, match=r"^MessageInfo: phase is 'input' or 'output', got 'window'$"):
        MessageInfo(phase="window", content="x")  # type: ignore[arg-type]
