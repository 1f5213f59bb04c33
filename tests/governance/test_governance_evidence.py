"""The evidence pack: will_do, read frames, drivers (the lexical scorer), trail."""

from __future__ import annotations

import itertools

import strategies as gs
from hypothesis import given
from hypothesis import strategies as st

from governance import (
    AssemblerInput,
    ContextUnit,
    Driver,
    ScoreInput,
    TrailCall,
    lexical_driver_scorer,
    minimal_evidence,
    standard_evidence,
)
from governance.evidence import render_args, trail_from_history, truncate, units_from_history, will_do
from governance.scorer import jaccard, tokens

HISTORY = [
    {
        "role": "system",
        "content": "You are a support agent. Refunds over 100 need approval!\nBe brief.",
    },
    {"role": "user", "content": "Please issue a refund of 500 for order 42."},
    {
        "role": "assistant",
        "content": "Looking it up.",
        "tool_calls": [{"id": "t0", "name": "lookup", "args": {}}],
    },
    {
        "role": "tool",
        "content": "order 42: 500 USD, paid",
        "tool_call_id": "t0",
        "tool_name": "lookup",
    },
    {
        "role": "tool",
        "content": "[permission denied: policy]",
        "tool_call_id": "t1",
        "tool_name": "wire",
    },
    {"role": "user", "content": "   "},
]


def test_will_do_is_description_em_dash_with_rendered_args() -> None:
    """Strings raw, others JSON, in the args' order."""
    text = will_do("refund", "Issue a refund.", {"amount": 500, "reason": "late", "tags": ["a"], "x": None})
    assert text == 'Issue a refund. — with amount=500, reason=late, tags=["a"], x=null'


def test_will_do_falls_back_to_the_name_and_drops_with_for_no_args() -> None:
    """An empty description is replaced by the tool name; no args, no '— with'."""
    assert will_do("ping", "  ", {}) == "ping"


def test_each_rendered_value_is_cut_to_60_characters() -> None:
    """A long value ends with an ellipsis at 60 characters."""
    rendered = render_args({"note": "x" * 100})
    assert rendered == "note=" + "x" * 59 + "…"


def test_truncate_collapses_whitespace_and_cuts_at_160() -> None:
    """Whitespace runs become one space; over 160 characters, 159 + '…'."""
    assert truncate("  a \n\t b  ") == "a b"
    assert truncate("y" * 200) == "y" * 159 + "…"
    assert truncate("z" * 160) == "z" * 160


def test_units_come_from_system_sentences_tasks_and_results() -> None:
    """system-N per sentence (split on .!? + space, or newlines), task-N, and result-N
    prefixed with the tool name."""
    assert units_from_history(HISTORY) == [
        ContextUnit("system-1", "system", "You are a support agent."),
        ContextUnit("system-2", "system", "Refunds over 100 need approval!"),
        ContextUnit("system-3", "system", "Be brief."),
        ContextUnit("task-1", "task", "Please issue a refund of 500 for order 42."),
        ContextUnit("result-1", "result", "lookup: order 42: 500 USD, paid"),
        ContextUnit("result-2", "result", "wire: [permission denied: policy]"),
    ]


def test_the_trail_marks_refused_calls_not_ok() -> None:
    """A permission denial is not ok; the summary pluralises."""
    trail = trail_from_history(HISTORY, 2)
    assert trail.tool_calls == (TrailCall("lookup", True), TrailCall("wire", False))
    assert trail.summary == "2 tools run over 2 iterations"


def test_the_trail_summary_for_no_tools_and_for_one() -> None:
    """``no tools run yet (iteration N)`` and the singular forms."""
    assert trail_from_history([], 1).summary == "no tools run yet (iteration 1)"
    one = [{"role": "tool", "content": "declined by human", "tool_name": "x"}]
    trail = trail_from_history(one, 1)
    assert (trail.summary, trail.tool_calls) == (
        "1 tool run over 1 iteration",
        (TrailCall("x", False),),
    )


def test_tokens_drop_stop_words_single_characters_and_punctuation() -> None:
    """Lower-case [a-z0-9] runs longer than one character, minus stop words."""
    assert tokens("The REFUND of $500 is for a Customer's order #42, I think!") == frozenset(
        {"refund", "500", "customer", "order", "42", "think"}
    )


def test_jaccard_of_two_empty_sets_is_zero() -> None:
    """No tokens at all scores 0."""
    assert jaccard(frozenset(), frozenset()) == 0.0


def test_the_scorer_ranks_a_fixed_history() -> None:
    """Exact scores and order for a fixed tool text and history; ties keep their order."""
    units = units_from_history(HISTORY)
    drivers = lexical_driver_scorer(ScoreInput("refund", "refund Issue a refund. amount=500", units))
    # tool tokens {refund, issue, amount, 500}; task-1 shares 3 of 7, result-1 1 of 9.
    assert [(d.id, d.score) for d in drivers] == [
        ("task-1", 3 / 7),
        ("result-1", 1 / 9),
        ("system-1", 0.0),
        ("system-2", 0.0),
        ("system-3", 0.0),
        ("result-2", 0.0),
    ]


def test_the_scorer_puts_the_overlapping_unit_first() -> None:
    """agentfootprint's own check: the refund request beats the weather."""
    units = [
        ContextUnit("a", "task", "the sky is blue today"),
        ContextUnit("b", "task", "please issue a refund of 500"),
    ]
    drivers = lexical_driver_scorer(ScoreInput("refund", "issue refund amount 500", units))
    assert [d.id for d in drivers] == ["b", "a"]


@given(st.lists(gs.units, max_size=6), gs.text)
def test_the_scorer_is_deterministic_and_non_increasing(units: list[ContextUnit], tool_text: str) -> None:
    """Same input, same drivers; scores never increase down the list; every unit appears once."""
    first = lexical_driver_scorer(ScoreInput("t", tool_text, units))
    assert first == lexical_driver_scorer(ScoreInput("t", tool_text, units))
    assert all(a.score >= b.score for a, b in itertools.pairwise(first))
    assert sorted(d.id for d in first) == sorted(u.id for u in units)


def assembler_input(**overrides: object) -> AssemblerInput:
    """An assembler input over HISTORY."""
    values: dict[str, object] = {
        "tool_name": "refund",
        "tool_description": "Issue a refund.",
        "args": {"amount": 500},
        "iteration": 2,
        "history": HISTORY,
        "scorer": lexical_driver_scorer,
    }
    values.update(overrides)
    return AssemblerInput(**values)  # type: ignore[arg-type]


async def test_standard_evidence_fills_all_four_fields() -> None:
    """will_do, read (one frame per unit), drivers (scored), trail."""
    pack = await standard_evidence(assembler_input())
    assert pack.will_do == "Issue a refund. — with amount=500"
    assert pack.read is not None and [f.id for f in pack.read] == [
        "system-1",
        "system-2",
        "system-3",
        "task-1",
        "result-1",
        "result-2",
    ]
    assert pack.drivers is not None and pack.drivers[0].id == "task-1"
    assert pack.trail is not None and pack.trail.summary == "2 tools run over 2 iterations"


async def test_standard_evidence_without_context_calls_no_scorer() -> None:
    """No units: empty read and drivers, and the scorer is never asked."""
    calls: list[ScoreInput] = []
    pack = await standard_evidence(assembler_input(history=[], scorer=lambda i: calls.append(i) or []))
    assert (pack.read, pack.drivers, calls) == ((), (), [])


async def test_a_custom_async_scorer_is_called_once_and_its_top_driver_wins() -> None:
    """A custom scorer (async, returning dicts) decides the drivers."""
    calls: list[ScoreInput] = []

    async def scorer(i: ScoreInput) -> list[dict[str, object]]:
        calls.append(i)
        return [{"id": "system-3", "channel": "system", "text": "Be brief.", "score": 9.0}]

    pack = await standard_evidence(assembler_input(scorer=scorer))
    assert len(calls) == 1
    assert calls[0].tool_text == "refund Issue a refund. amount=500"
    assert pack.drivers == (Driver("system-3", "system", "Be brief.", 9.0),)


def test_minimal_evidence_has_will_do_only() -> None:
    """read, drivers and trail are absent (None, and missing from the dict)."""
    pack = minimal_evidence(assembler_input())
    assert pack.to_dict() == {"will_do": "Issue a refund. — with amount=500"}
