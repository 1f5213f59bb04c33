"""An agent with long-term memory: ``remember``/``recall`` tools, recall before each model call,
every item's origin and every recall in the record (docs/memory.md)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_helpers import call, calls

from agent import Agent, AgentBuildError, define_tool
from agent.memory import InMemoryMemory, SqliteMemory
from agent.providers import scripted


def make(replies: list[Any], memory: Any, **create: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    agent = Agent.create(provider=provider, model="mock", memory=memory, **create).system("You help.").build()
    return agent, provider


def test_remember_writes_an_item_with_its_origin_and_recall_injects_it_next_conversation() -> None:
    """Conversation 1 teaches a fact through ``remember``; conversation 2's model call (another
    process: another agent on the same memory) is sent it in the system slot — not in the user's
    message — and the record names the item and its origin."""
    memory = InMemoryMemory()
    agent, _ = make([calls(call("c1", "remember", text="The user's favourite colour is teal")), "Noted."], memory)
    identity = {"tenant": "acme", "user": "u-7"}
    agent.run("Remember: my favourite colour is teal", identity, conversation="c-1")
    first = agent.last_snapshot()
    (item,) = memory.search(("acme", "u-7"), "favourite colour")
    assert item.origin == {
        "run_id": first.result.run_id,
        "conversation": "c-1",
        "turn": 1,
        "commit": item.origin["commit"],
        "stage": "tool-calls",
        "tool_call_id": "c1",
        "iteration": 1,
    }
    assert item.origin["commit"].startswith("tool-calls")

    later, provider = make(["Teal, I recall."], memory, recall=2)
    assert later.run("What is my favourite colour?", identity, conversation="c-2") == "Teal, I recall."
    sent = provider.requests[-1]
    assert sent.messages == [{"role": "user", "content": "What is my favourite colour?"}]
    assert sent.system_prompt == f"You help.\n\n## Context\n[memory {item.id}] The user's favourite colour is teal"
    state = later.last_snapshot().shared_state
    assert state["context_injected"] == [
        {
            "kind": "memory",
            "slot": "system",
            "trigger": "recall",
            "id": item.id,
            "namespace": ["acme", "u-7"],
            "text": "The user's favourite colour is teal",
            "origin": item.origin,
        }
    ]
    assert state["system_prompt"] == "You help."  # the prompt as configured; the context is its own key


def test_recalled_items_are_not_copied_into_later_turns_history() -> None:
    """Turn 2 of the same conversation loads turn 1's messages, never the memory injected into turn 1."""
    memory = InMemoryMemory()
    memory.put(("default",), "The office closes at six")
    agent, provider = make(["It closes at six.", "You're welcome."], memory)
    agent.run("When does the office close?", conversation="c-3")
    agent.run("And does the office close at six on Fridays?", conversation="c-3")
    second = provider.requests[-1]
    assert [m["content"] for m in second.messages] == [
        "When does the office close?",
        "It closes at six.",
        "And does the office close at six on Fridays?",
    ]
    assert second.system_prompt.count("The office closes at six") == 1


def test_the_recall_tool_searches_the_runs_namespace_only() -> None:
    """``recall`` answers from the identity's namespace, with item ids; another user's items never show."""
    memory = SqliteMemory(":memory:")
    mine = memory.put(("acme", "u-1"), "prefers window seats")
    memory.put(("acme", "u-2"), "prefers aisle seats")
    agent, provider = make([calls(call("r1", "recall", query="seats")), "Window."], memory, recall=0)
    agent.run("Which seat do I like?", {"tenant": "acme", "user": "u-1"})
    tool_message = provider.requests[-1].messages[-1]
    assert tool_message["content"] == f"[{mine}] prefers window seats"
    assert provider.requests[0].system_prompt == "You help."  # recall=0: nothing injected
    assert "context_injected" not in agent.last_snapshot().shared_state


def test_an_agent_without_memory_or_context_records_nothing_new() -> None:
    """Absent means byte-identical: no context keys, the prompt as it was."""
    agent, provider = make(["hi"], None)
    agent.run("hello")
    assert "context_injected" not in agent.last_snapshot().shared_state
    assert provider.requests[0].system_prompt == "You help."


def test_a_failing_store_is_a_recorded_failure_the_model_is_told() -> None:
    """A memory store that raises at recall does not crash the run: the call is told, the record says so."""

    class Broken(InMemoryMemory):
        def search(self, namespace: Any, query: str, k: int = 5) -> Any:
            raise OSError("disk gone")

    agent, provider = make(["ok"], Broken())
    assert agent.run("hello") == "ok"
    assert "[error] memory recall failed: OSError: disk gone" in provider.requests[0].system_prompt
    (row,) = agent.last_snapshot().shared_state["context_injected"]
    assert row["kind"] == "error" and row["source"] == "memory"


def test_memory_settings_are_checked_at_build() -> None:
    """A memory that is no store, a bad recall, or a tool named like a memory tool is refused at build."""
    with pytest.raises(AgentBuildError, match=r"memory=...\): expected an agent.memory store .* got dict"):
        make([], {"a": 1})
    with pytest.raises(AgentBuildError, match=r"recall=...\): expected a number of items \(0 or more\), got -1"):
        make([], InMemoryMemory(), recall=-1)
    clash = define_tool(name="remember", description="mine", input_schema={"type": "object"}, execute=lambda a, c: "x")
    with pytest.raises(AgentBuildError, match=r"tool name 'remember' is taken by the memory tools"):
        Agent.create(provider=scripted([]), model="m", memory=InMemoryMemory()).tool(clash).build()


def test_a_rule_hiding_tool_arguments_hides_the_recalled_memory_text_in_the_record() -> None:
    """What ``remember`` was told is a tool argument: a rule hiding the arguments hides the same text
    where a later call recalls it (``context_injected``), in every record — the model still sees it."""
    from flowchart import Redaction

    memory = InMemoryMemory()
    rule = Redaction(fields={"history": ["tool_calls.args"]})
    teach, _ = make([calls(call("c1", "remember", text="PIN 4411")), "Ok."], memory, redaction=rule)
    teach.run("Remember PIN 4411")
    agent, provider = make(["Your PIN is 4411."], memory, redaction=rule)
    agent.run("What is my PIN?")
    assert "[memory" in provider.requests[-1].system_prompt and "PIN 4411" in provider.requests[-1].system_prompt
    shown = agent.last_snapshot().record.shown()
    (row,) = shown.final_state["context_injected"]
    assert row["text"] == "REDACTED" and row["kind"] == "memory"


def test_items_past_recall_k_are_recorded_as_dropped_and_why_lists_them() -> None:
    """``recall=1``: the best item is sent; the next ones found are in ``context_dropped`` with the
    reason, and ``agent why --dropped`` lists them."""
    from agent import explain_answer

    memory = InMemoryMemory()
    memory.put(("default",), "The cat is called Tom")
    memory.put(("default",), "The cat likes fish")
    agent, _ = make(["Tom."], memory, recall=1)
    agent.run("What is the cat called?")
    state = agent.last_snapshot().shared_state
    assert [r["text"] for r in state["context_injected"]] == ["The cat is called Tom"]
    assert [(r["text"], r["reason"]) for r in state["context_dropped"]] == [("The cat likes fish", "past recall=1")]
    text = explain_answer(agent.last_snapshot().record, dropped=True).format()
    assert "memory item m-" in text and '"The cat likes fish": past recall=1' in text
