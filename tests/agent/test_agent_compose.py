"""Agents composed (docs/agents.md): an agent mounted in a chart (``add_agent``), an agent as a
tool (``as_tool``), and handoffs (``transfer_to_<name>``, ``input_filter``, ``max_handoffs``)."""

from __future__ import annotations

from typing import Any

import pytest
from agent_helpers import call, calls

from agent import Agent, AgentBuildError, ask_human, define_tool
from agent.errors import CompositionError
from agent.providers import scripted
from flowchart import BuildError, flow_chart


def agent_on(replies: list[Any], system: str = "You help.", configure: Any = None, **create: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    builder = Agent.create(provider=provider, model="mock", **create).system(system)
    return (configure(builder) if configure else builder).build(), provider


# -- add_agent --------------------------------------------------------------------------------
def test_plan_and_execute_an_agent_mounted_as_a_stage_writes_its_answer_into_the_key() -> None:
    """Planner and executor are two mounted agents: each is sent ``message(state)`` and writes its
    answer to ``into``; each run is a subflow of the chart's run."""
    planner, planner_p = agent_on(["1. buy milk\n2. call mom"], "Plan.")
    executor, executor_p = agent_on(["Done: milk bought, mom called."], "Execute.")

    def start(scope: Any, ctx: Any) -> None:
        scope.goal = "errands"

    chart = (
        flow_chart("Start", start, "start")
        .add_agent("Planner", planner, "planner", message=lambda s: f"Plan: {s['goal']}", into="plan")
        .add_agent("Executor", executor, "executor", message=lambda s: f"Do this:\n{s['plan']}", into="report")
        .build()
    )
    result = chart.run()
    assert result.state["plan"] == "1. buy milk\n2. call mom"
    assert result.state["report"] == "Done: milk bought, mom called."
    assert executor_p.requests[0].messages == [{"role": "user", "content": "Do this:\n1. buy milk\n2. call mom"}]
    assert planner_p.requests[0].system_prompt == "Plan."
    mounts = {r.mount_id: r for r in result.subflow_results.values()}
    assert {"planner", "executor"} <= set(mounts)
    assert mounts["planner"].state["final_content"] == "1. buy milk\n2. call mom"


def test_a_pause_inside_a_mounted_agent_pauses_the_chart_and_resumes_through_it() -> None:
    """The agent's ask_human pauses the outer run; the outer chart resumes with the agent's checked answer."""
    confirm = define_tool(
        name="confirm",
        description="Ask the person.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda a, c: ask_human({"question": "ok?"}),
    )
    helper, _ = agent_on([calls(call("c1", "confirm")), "Confirmed."], configure=lambda b: b.tool(confirm))
    chart = (
        flow_chart("Start", lambda s, c: None, "start")
        .add_agent("Helper", helper, "helper", message=lambda s: "go", into="answer")
        .build()
    )
    paused = chart.run()
    assert paused.paused and paused.checkpoint.pause_data["data"] == {"question": "ok?"}
    done = chart.resume(paused.checkpoint, helper.resume_input(paused.checkpoint, "yes"))
    assert not done.paused and done.state["answer"] == "Confirmed."


def test_add_agent_refuses_what_is_not_an_agent_and_a_message_that_is_not_text() -> None:
    """A non-agent is a build error naming the mount; a blank message is a CompositionError at run time."""
    with pytest.raises(BuildError, match=r"add_agent\('Helper'\): expected an agent .* got dict"):
        flow_chart("S", lambda s, c: None, "s").add_agent("Helper", {}, "h", message=lambda s: "x", into="a").build()
    helper, _ = agent_on(["x"])
    chart = flow_chart("S", lambda s, c: None, "s").add_agent("Helper", helper, "h", message=lambda s: " ", into="a")
    with pytest.raises(CompositionError, match=r"message\(state\) must return the non-empty text"):
        chart.build().run()


# -- as_tool ----------------------------------------------------------------------------------
def test_a_supervisor_calls_two_specialists_as_tools() -> None:
    """Each specialist runs on the model's input and its answer is the tool result the supervisor reads."""
    flights, flights_p = agent_on(["Flight LH 123 at 9:00."], "Flights.")
    hotels, _ = agent_on(["Hotel Adlon, 2 nights."], "Hotels.")
    supervisor, supervisor_p = agent_on(
        [
            calls(call("a", "flights", input="Berlin flight Monday"), call("b", "hotels", input="Berlin hotel")),
            "Booked: LH 123 and the Adlon.",
        ],
        "Supervise.",
        configure=lambda b: b.tool(flights.as_tool("flights", "Books flights.")).tool(
            hotels.as_tool("hotels", "Books hotels.")
        ),
    )
    assert supervisor.run("Trip to Berlin") == "Booked: LH 123 and the Adlon."
    assert flights_p.requests[0].messages == [{"role": "user", "content": "Berlin flight Monday"}]
    results = [m["content"] for m in supervisor_p.requests[1].messages if m["role"] == "tool"]
    assert results == ["Flight LH 123 at 9:00.", "Hotel Adlon, 2 nights."]
    # each specialist's run is recorded in the supervisor's tool-calls commit, and why names it
    rows = supervisor.last_snapshot().shared_state["sub_agents"]
    assert [(r["tool"], r["tool_call_id"], r["run_id"], r["model_calls"]) for r in rows] == [
        ("flights", "a", flights.last_snapshot().result.run_id, 1),
        ("hotels", "b", hotels.last_snapshot().result.run_id, 1),
    ]
    from agent import explain_answer

    text = explain_answer(supervisor.last_snapshot().record).format()
    assert f"the answer of sub-agent 'flights', its run {rows[0]['run_id']} (1 model call(s)" in text


def test_a_sub_agent_tool_that_pauses_is_a_tool_error_naming_the_remedy() -> None:
    """A tool call cannot wait for a person: the caller's model is told, naming add_agent."""
    confirm = define_tool(
        name="confirm", description="Ask.", input_schema={"type": "object"}, execute=lambda a, c: ask_human("ok?")
    )
    helper, _ = agent_on([calls(call("c1", "confirm"))], configure=lambda b: b.tool(confirm))
    boss, boss_p = agent_on(
        [calls(call("t", "helper", input="do it")), "Could not."],
        configure=lambda b: b.tool(helper.as_tool("helper", "Helps.")),
    )
    assert boss.run("go") == "Could not."
    (tool_message,) = [m for m in boss_p.requests[1].messages if m["role"] == "tool"]
    assert "sub-agent tool 'helper' paused" in tool_message["content"] and "add_agent" in tool_message["content"]


# -- handoffs ---------------------------------------------------------------------------------
def test_triage_hands_the_customer_to_billing_with_the_reason_in_the_record() -> None:
    """``transfer_to_billing``: billing is sent the conversation and answers; the commit records the
    handoff with the model's reason; billing's answer is the run's."""
    billing, billing_p = agent_on(["Invoice #7 is 40 EUR."], "Billing.")
    triage, triage_p = agent_on(
        [calls(call("h1", "transfer_to_billing", reason="an invoice question"))],
        "Triage.",
        configure=lambda b: b.handoff(billing, name="billing", description="Billing questions."),
    )
    assert triage.run("How much is my invoice?", {"user": "u-1"}) == "Invoice #7 is 40 EUR."
    assert {"name": "transfer_to_billing", "description": "Billing questions."}.items() <= triage_p.requests[0].tools[
        0
    ].items()
    assert billing_p.requests[0].messages == [{"role": "user", "content": "How much is my invoice?"}]
    (row,) = triage.last_snapshot().shared_state["handoffs"]
    assert row["to"] == "billing" and row["reason"] == "an invoice question" and row["tool_call_id"] == "h1"
    assert row["answer"] == "Invoice #7 is 40 EUR." and row["run_id"] == billing.last_snapshot().result.run_id
    handoff_commit = next(c for c in triage.last_snapshot().commit_log if c.stage_id == "handoff")
    assert "handoffs" in handoff_commit.written_keys


def test_the_input_filter_decides_what_the_receiver_is_sent_and_the_record_counts_what_it_left_out() -> None:
    """The receiver gets the conversation so far; an input_filter trims it; the row counts the drop."""
    lookup = define_tool(
        name="lookup", description="Look up.", input_schema={"type": "object"}, execute=lambda a, c: "order 9: late"
    )
    billing, billing_p = agent_on(["Refund issued."], "Billing.")
    triage, _ = agent_on(
        [calls(call("l1", "lookup")), calls(call("h1", "transfer_to_billing", reason="refund"))],
        configure=lambda b: b.tool(lookup).handoff(
            billing, name="billing", input_filter=lambda msgs: [m for m in msgs if m["role"] == "user"]
        ),
    )
    triage.run("My order is late, refund please")
    sent = billing_p.requests[0].messages
    assert sent == [{"role": "user", "content": "My order is late, refund please"}]
    row = triage.last_snapshot().shared_state["handoffs"][0]
    assert (row["messages_sent"], row["messages_left_out"]) == (1, 2)  # the lookup call and its result


def test_agents_handing_back_and_forth_stop_at_max_handoffs_with_a_clear_error() -> None:
    """A → B → A → ...: past max_handoffs the chain is refused, naming it."""
    ping_pong = [calls(call(f"h{n}", "transfer_to_other", reason="not mine")) for n in range(10)]
    made: dict[str, Agent] = {}
    made["a"], _ = agent_on(
        list(ping_pong), configure=lambda b: b.handoff(lambda: made["b"], name="other"), max_handoffs=3
    )
    made["b"], _ = agent_on(
        list(ping_pong), configure=lambda b: b.handoff(lambda: made["a"], name="other"), max_handoffs=3
    )
    with pytest.raises(CompositionError, match=r"the chain other → other → other → other would exceed max_handoffs=3"):
        made["a"].run("help")


def test_handoff_settings_are_checked_at_build() -> None:
    """A receiver that is no agent, a bad name, a duplicate, a bad max_handoffs."""
    other, _ = agent_on(["x"])
    with pytest.raises(AgentBuildError, match=r"handoff 'billing': expected the receiving Agent .* got str"):
        agent_on([], configure=lambda b: b.handoff("billing-agent", name="billing"))
    with pytest.raises(AgentBuildError, match=r"handoff\(name=...\): expected 1-52 letters"):
        agent_on([], configure=lambda b: b.handoff(other, name="bill ing"))
    with pytest.raises(AgentBuildError, match=r"duplicate handoff name 'b'"):
        agent_on([], configure=lambda b: b.handoff(other, name="b").handoff(other, name="b"))
    with pytest.raises(AgentBuildError, match=r"max_handoffs=...\): expected a positive integer, got 0"):
        agent_on([], configure=lambda b: b.handoff(other, name="b"), max_handoffs=0)
