"""Context injections (``fact``, ``steering``, ``instruction``, ``skill``, ``rag``): triggers, the
system slot, the record of each firing, what was dropped, and retriever failures (docs/context.md)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_helpers import call, calls, weather_tool

from agent import Agent, AgentBuildError
from agent._chart.context import InjectionError
from agent.providers import scripted


def make(replies: list[Any], configure: Any, *tools: Any, **create: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    builder = Agent.create(provider=provider, model="mock", **create).system("You help.").tools(tools)
    return configure(builder).build(), provider


def test_a_fact_goes_into_the_system_slot_of_every_call_and_is_recorded() -> None:
    """A fact is sent in the system slot (never in the user's message), and each call's commit
    names it with its slot and trigger."""
    agent, provider = make(
        [calls(call("c1", "weather", city="Oslo")), "Sunny."],
        lambda b: b.fact("The shop is in Oslo."),
        weather_tool(),
    )
    agent.run("Weather at the shop?")
    for request in provider.requests:
        assert request.system_prompt == "You help.\n\n## Context\n[fact] The shop is in Oslo."
        assert "Oslo." not in request.messages[0]["content"]
    writes = [c for c in agent.last_snapshot().commit_log if "context_injected" in c.overwrite]
    # the first call's commit writes it; the second call was sent the same, so its commit changes nothing
    assert [c.stage_id for c in writes] == ["call-llm"]
    assert writes[0].overwrite["context_injected"] == [
        {"kind": "fact", "slot": "system", "trigger": "always", "text": "The shop is in Oslo."}
    ]


def test_steering_on_a_tools_return_fires_only_on_the_call_after_that_tool() -> None:
    """``when="tool:weather"``: sent on the call right after weather returned; recorded as dropped before."""
    agent, provider = make(
        [calls(call("c1", "weather", city="Oslo")), "Sunny."],
        lambda b: b.steering("Quote the temperature in Celsius.", when="tool:weather"),
        weather_tool(),
    )
    agent.run("Weather?")
    first, second = provider.requests
    assert first.system_prompt == "You help."
    assert second.system_prompt.endswith("[steering] Quote the temperature in Celsius.")
    state = agent.last_snapshot().shared_state
    assert state["context_injected"][0]["trigger"] == "on tool 'weather'"
    assert state["context_dropped"] == []  # the latest call sent it; the first call's drop is in its commit
    first_commit = next(c for c in agent.last_snapshot().commit_log if "context_dropped" in c.overwrite)
    assert first_commit.overwrite["context_dropped"][0]["reason"] == "its trigger did not fire"


def test_a_rule_over_state_decides_and_a_missing_key_is_named() -> None:
    """``when=fn(state)``: reads the agent's state; reading a key it does not hold names the injection and key."""
    agent, provider = make(
        [calls(call("c1", "weather", city="Oslo")), "Done."],
        lambda b: b.instruction("Wrap up now.", when=lambda s: s["iteration"] >= 2).skill(
            "forecasts", "Forecasts are for 24 hours.", when=lambda s: "identity" in s
        ),
        weather_tool(),
    )
    agent.run("Weather?", {"user": "u"})
    assert provider.requests[0].system_prompt.endswith("[skill forecasts] Forecasts are for 24 hours.")
    assert "[instruction] Wrap up now." in provider.requests[1].system_prompt

    broken, _ = make(["x"], lambda b: b.instruction("x", when=lambda s: s["no_such_key"]))
    with pytest.raises(InjectionError, match=r"injection instruction: its when= rule read state key 'no_such_key'"):
        broken.run("hi")


def test_rag_chunks_are_ranked_cut_by_k_and_min_score_and_the_rest_recorded_as_dropped() -> None:
    """Chunks above ``min_score`` are sent (best first, at most ``k``) with their source; the rest are dropped."""

    def docs(query: str, k: int) -> list[dict[str, Any]]:
        return [
            {"text": "Refunds take 5 days.", "source": "policy#2", "score": 0.9},
            {"text": "Shipping is free.", "source": "policy#7", "score": 0.2},
            {"text": "Refunds need a receipt.", "source": "policy#3", "score": 0.8},
        ]

    agent, provider = make(["Five days, with a receipt."], lambda b: b.rag(docs, k=1, min_score=0.5))
    agent.run("How long do refunds take?")
    assert provider.requests[0].system_prompt.endswith("[source policy#2] Refunds take 5 days.")
    state = agent.last_snapshot().shared_state
    assert [r["source"] for r in state["context_injected"]] == ["policy#2"]
    assert [(r["source"], r["reason"]) for r in state["context_dropped"]] == [
        ("policy#3", "past k=1"),
        ("policy#7", "score below min_score=0.5"),
    ]


@pytest.mark.parametrize(
    ("retriever", "told"),
    [
        (lambda q, k: 1 / 0, "the retriever failed: ZeroDivisionError: division by zero"),
        (lambda q, k: "just a string", "the retriever failed: it returned a string, not a list of chunks"),
        (
            lambda q, k: [{"body": "x"}],
            "the retriever failed: chunk 0 is an object without a text string (give str or {'text': ...})",
        ),
    ],
)
def test_a_retriever_that_raises_or_returns_non_text_is_a_recorded_failure_the_model_is_told(
    retriever: Any, told: str
) -> None:
    """The run goes on: the model is told the retriever failed, the record has an error row."""
    agent, provider = make(["I could not look that up."], lambda b: b.rag(retriever))
    assert agent.run("What is the policy?") == "I could not look that up."
    assert f"[error] {told}" in provider.requests[0].system_prompt
    (row,) = agent.last_snapshot().shared_state["context_injected"]
    assert row["kind"] == "error" and row["source"] == "rag" and row["text"] == told


def test_injected_context_never_enters_history_or_later_turns() -> None:
    """A conversation's second turn loads turn 1's messages, none of which holds the fact."""
    agent, provider = make(["A.", "B."], lambda b: b.fact("Secret plan: blue."))
    agent.run("One?", conversation="c")
    agent.run("Two?", conversation="c")
    assert [m["content"] for m in provider.requests[1].messages] == ["One?", "A.", "Two?"]
    assert provider.requests[1].system_prompt.count("Secret plan: blue.") == 1


def test_injection_settings_are_checked_at_build() -> None:
    """Blank text, a bad trigger, a trigger on an undeclared tool, a duplicate skill, a bad retriever."""
    with pytest.raises(AgentBuildError, match=r"fact\(...\): expected non-empty text"):
        make([], lambda b: b.fact("  "))
    with pytest.raises(AgentBuildError, match=r"when= must be 'always', 'tool:NAME'.*got an integer 3"):
        make([], lambda b: b.steering("x", when=3))
    with pytest.raises(AgentBuildError, match=r"steering: when='tool:lookup' names no tool of this agent"):
        make([], lambda b: b.steering("x", when="tool:lookup"))
    with pytest.raises(AgentBuildError, match=r"duplicate skill name 'a'"):
        make([], lambda b: b.skill("a", "x").skill("a", "y"))
    with pytest.raises(AgentBuildError, match=r"rag\(retriever\): expected a function"):
        make([], lambda b: b.rag("docs"))
    with pytest.raises(AgentBuildError, match=r"rag\(k=...\): expected a positive integer, got 0"):
        make([], lambda b: b.rag(lambda q, k: [], k=0))
