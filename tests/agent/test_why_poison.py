"""Planted poison: a wrong memory, a stale RAG chunk, a wrong fact, a sub-agent's wrong answer, a
handoff that dropped a message... In every case ``agent why`` names where the poison came from —
the turn and the commit — within 25 lines of its output (docs/context.md, "Following context")."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from agent_helpers import call, calls
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import Agent, define_tool, explain_answer
from agent.memory import InMemoryMemory, SqliteMemory
from agent.providers import scripted
from flowchart import flow_chart

LIMIT = 25


def agent_on(replies: list[Any], configure: Any = None, **create: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    builder = Agent.create(provider=provider, model="mock", **create).system("You help.")
    return (configure(builder) if configure else builder).build(), provider


def why(source: Any) -> list[str]:
    lines = explain_answer(source, drivers=True, dropped=True).format().splitlines()
    assert len(lines) <= LIMIT, "\n".join(lines)
    return lines


def named(lines: list[str], *patterns: str) -> None:
    text = "\n".join(lines)
    for pattern in patterns:
        assert re.search(pattern, text), f"{pattern!r} not in:\n{text}"


def wrong_memory_from_another_conversation(memory: Any) -> list[str]:
    remember = call("c1", "remember", text="The user's account number is 999")
    teach, _ = agent_on([calls(remember), "Noted."], memory=memory)
    teach.run("Remember my account number is 999", {"user": "u"}, conversation="chat-1")
    agent, _ = agent_on(["It is 999."], memory=memory)
    agent.run("What is my account number?", {"user": "u"}, conversation="chat-2")
    return why(agent.last_snapshot().record)


def case_memory_in_memory() -> list[str]:
    lines = wrong_memory_from_another_conversation(InMemoryMemory())
    named(lines, r"memory item m-\w+", r"conversation 'chat-1' turn 1, commit tool-calls#\d+ \(tool call c1\)")
    return lines


def case_memory_sqlite(tmp: Path) -> list[str]:
    lines = wrong_memory_from_another_conversation(SqliteMemory(tmp / "m.db"))
    named(
        lines,
        r"conversation 'chat-1' turn 1, commit tool-calls#\d+",
        r"Most likely driver: context c\d \(memory item",
    )
    return lines


def case_memory_same_conversation_earlier_turn() -> list[str]:
    memory = InMemoryMemory()
    agent, _ = agent_on(
        [calls(call("c9", "remember", text="Meeting moved to Friday")), "Ok.", "Sure.", "The meeting is Friday."],
        memory=memory,
    )
    agent.run("Note: meeting moved to Friday", conversation="c")
    agent.run("Thanks", conversation="c")
    agent.run("When is the meeting?", conversation="c")
    lines = why(agent.last_snapshot().record)
    named(lines, r"conversation 'c' turn 1, commit tool-calls#\d+ \(tool call c9\)")
    return lines


def case_memory_written_outside_a_run() -> list[str]:
    memory = InMemoryMemory()
    memory.put(("default",), "The refund window is 90 days", origin={"run_id": "import-2024", "stage": "import"})
    agent, _ = agent_on(["Refunds within 90 days."], memory=memory)
    agent.run("What is the refund window?")
    lines = why(agent.last_snapshot().record)
    named(lines, r"written by run import-2024", r"sent at call-llm#1 \(commit 1\)")
    return lines


def case_stale_rag_chunk() -> list[str]:
    def kb(query: str, k: int) -> list[dict[str, Any]]:
        return [
            {
                "text": "Refunds are processed within 30 days of the request for all orders placed online "
                "and in stores, including sale items and gift purchases.",
                "source": "policy-2019#4",
                "score": 0.9,
            }
        ]

    agent, _ = agent_on(["Refunds are processed within 30 days for all orders."], lambda b: b.rag(kb))
    agent.run("How long do refunds take?")
    lines = why(agent.last_snapshot().record)
    named(
        lines,
        r"RAG chunk policy-2019#4",
        r"sent at call-llm#1 \(commit 1\)",
        r"Most likely driver: context c1 \(RAG",
    )
    return lines


def case_wrong_fact() -> list[str]:
    agent, _ = agent_on(["The store closes at 3pm."], lambda b: b.fact("The store closes at 3pm."))
    agent.run("When do you close?")
    lines = why(agent.last_snapshot().record)
    named(lines, r"c1\. fact \(always\)", r"sent at call-llm#1 \(commit 1\)", r"Most likely driver: context c1 \(fact")
    return lines


def case_wrong_steering_on_a_tool_return() -> list[str]:
    lookup = define_tool(
        name="lookup", description="Look up.", input_schema={"type": "object"}, execute=lambda a, c: "order 7"
    )
    agent, _ = agent_on(
        [calls(call("l1", "lookup")), "Order 7 ships in Fahrenheit degrees."],
        lambda b: b.tool(lookup).steering("Always answer in Fahrenheit degrees.", when="tool:lookup"),
    )
    agent.run("Where is my order?")
    lines = why(agent.last_snapshot().record)
    named(lines, r"steering \(on tool 'lookup'\)", r"sent at call-llm#\d+ \(commit \d+\)")
    return lines


def case_wrong_skill() -> list[str]:
    agent, _ = agent_on(
        ["Use the discount code FREE100 at checkout."],
        lambda b: b.skill("discounts", "Use the discount code FREE100 at checkout."),
    )
    agent.run("Any discount?")
    lines = why(agent.last_snapshot().record)
    named(lines, r"skill 'discounts' \(always\)", r"sent at call-llm#1 \(commit 1\)")
    return lines


def case_sub_agent_wrong_answer() -> list[str]:
    rates, _ = agent_on(["The exchange rate is 7.5 dollars per euro."])
    boss, _ = agent_on(
        [calls(call("r1", "rates", input="EUR to USD rate")), "The rate is 7.5 dollars per euro."],
        lambda b: b.tool(rates.as_tool("rates", "Currency rates.")),
    )
    boss.run("What is the euro rate?")
    lines = why(boss.last_snapshot().record)
    named(
        lines,
        r"tool result of rates\(input=EUR to USD rate\) \[r1\]",
        r"the answer of sub-agent 'rates', its run \w+",
        r"written at tool-calls#\d+ \(commit \d+\)",
    )
    return lines


def case_handoff_that_dropped_a_message() -> list[str]:
    lookup = define_tool(
        name="lookup", description="Look up.", input_schema={"type": "object"}, execute=lambda a, c: "paid already"
    )
    billing, _ = agent_on(["You owe 40 EUR."])
    triage, _ = agent_on(
        [calls(call("l1", "lookup")), calls(call("h1", "transfer_to_billing", reason="billing question"))],
        lambda b: b.tool(lookup).handoff(
            billing, name="billing", input_filter=lambda msgs: [m for m in msgs if m["role"] == "user"]
        ),
    )
    triage.run("Do I owe anything?")
    lines = why(triage.last_snapshot().record)
    named(
        lines,
        r"came from agent 'billing' after a handoff at handoff#\d+ \(commit \d+\), reason \"billing question\"",
        r"2 left out by the input_filter",
    )
    return lines


def case_mounted_agent_wrong_plan() -> list[str]:
    planner, _ = agent_on(["1. delete the database"], lambda b: b.fact("Plans start by deleting the database."))
    chart = (
        flow_chart("Start", lambda s, c: None, "start")
        .add_agent("Planner", planner, "planner", message=lambda s: "Plan the migration", into="plan")
        .build()
    )
    lines = why(chart.run().record)
    named(
        lines,
        r"Inside the agent mounted at planner#\d+",
        r"fact \(always\)",
        r"sent at planner/call-llm#\d+ \(commit 1\)",
    )
    return lines


def case_poisoned_tool_result() -> list[str]:
    prices = define_tool(
        name="price", description="Price.", input_schema={"type": "object"}, execute=lambda a, c: "price: 0.01 EUR"
    )
    agent, _ = agent_on([calls(call("p1", "price")), "It costs 0.01 EUR."], lambda b: b.tool(prices))
    agent.run("How much is the laptop?")
    lines = why(agent.last_snapshot().record)
    named(lines, r"tool result of price\(\) \[p1\]", r"written at tool-calls#\d+ \(commit \d+\)")
    return lines


CASES: dict[str, Callable[..., list[str]]] = {
    "wrong memory from another conversation (in memory)": case_memory_in_memory,
    "wrong memory from another conversation (SQLite)": case_memory_sqlite,
    "wrong memory from an earlier turn of this conversation": case_memory_same_conversation_earlier_turn,
    "wrong memory imported outside a run": case_memory_written_outside_a_run,
    "stale RAG chunk": case_stale_rag_chunk,
    "wrong fact": case_wrong_fact,
    "wrong steering on a tool's return": case_wrong_steering_on_a_tool_return,
    "wrong skill": case_wrong_skill,
    "a sub-agent's wrong answer": case_sub_agent_wrong_answer,
    "a handoff that dropped a message": case_handoff_that_dropped_a_message,
    "a mounted agent's wrong plan": case_mounted_agent_wrong_plan,
    "a poisoned tool result": case_poisoned_tool_result,
}


@pytest.mark.parametrize("name", list(CASES))
def test_why_names_the_origin_of_planted_poison_within_25_lines(name: str, tmp_path: Path) -> None:
    """``agent why`` (``explain_answer(..., drivers=True, dropped=True)``) names the poison's
    origin — turn and commit — in at most 25 lines."""
    case = CASES[name]
    lines = case(tmp_path) if "tmp" in case.__code__.co_varnames[: case.__code__.co_argcount] else case()
    assert lines


def test_agent_why_on_the_command_line_names_a_memory_items_origin(tmp_path: Path) -> None:
    """``agent why TRACE --dropped`` prints the memory item with the turn and commit that wrote it."""
    import subprocess
    import sys

    memory = InMemoryMemory()
    teach, _ = agent_on([calls(call("c1", "remember", text="The code is 4411")), "Ok."], memory=memory)
    teach.run("Remember the code 4411", conversation="a")
    agent, _ = agent_on(["The code is 4411."], memory=memory)
    agent.run("What is the code?", conversation="b")
    path = tmp_path / "run.json"
    agent.last_snapshot().result.trace().save(path)
    out = subprocess.run(
        [sys.executable, "-m", "agent.cli", "why", str(path), "--dropped"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(out) <= LIMIT
    named(out, r"conversation 'a' turn 1, commit tool-calls#\d+ \(tool call c1\)", r"Available but not sent: nothing")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
rows = st.lists(
    st.fixed_dictionaries(
        {"kind": st.sampled_from(["fact", "rag", "memory", "error", "skill", "x"])},
        optional={"text": json_values, "origin": json_values, "source": json_values, "name": json_values},
    )
    | json_values,
    max_size=4,
)


@settings(max_examples=150, deadline=None)
@given(injected=json_values | rows, dropped=json_values | rows, handoffs=json_values | rows, subs=json_values | rows)
def test_why_reads_any_context_record_without_crashing(injected: Any, dropped: Any, handoffs: Any, subs: Any) -> None:
    """A record is untrusted: whatever ``context_injected``/``context_dropped``/``handoffs``/
    ``sub_agents`` hold, ``explain_answer`` explains (or says it cannot), never crashes."""
    agent, _ = agent_on(["ok"])  # no context: the forged starting values are what the call's state holds
    agent.run("hi")
    trace = agent.last_snapshot().result.trace()
    state = dict(trace.initial_state)
    state.update(context_injected=injected, context_dropped=dropped, handoffs=handoffs, sub_agents=subs)
    forged = attrs.evolve(trace, initial_state=state)
    explained = explain_answer(forged, drivers=True, dropped=True)
    assert explained.format().startswith("The answer")
    if isinstance(injected, list):
        assert len(explained.context) == sum(1 for row in injected if isinstance(row, dict))
