"""``replayed`` / ``replayed_tools``: a recorded agent run's replies and tool results served back.

Each test records a real agent run on the scripted provider, then runs agents on the record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import Agent, define_tool
from agent.providers import ProviderConfigError, ReplayMissError, ScriptError, replayed, replayed_tools, scripted
from agent.providers.replayed import RecordedCall, _served, recorded_calls
from flowchart import Redaction, diff_runs, flow_chart

SCRIPT: list[Any] = [
    {"content": "looking", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"order_id": "A-1"}}]},
    "order A-1 is 10.00",
]


class Lookups:
    """A lookup tool that counts how often it really ran."""

    def __init__(self, shape: str = "dict") -> None:
        self.ran: list[dict[str, Any]] = []
        self.shape = shape

    def __call__(self, args: dict[str, Any], ctx: Any) -> Any:
        self.ran.append(args)
        if self.shape == "text":
            return f"order {args['order_id']}: 10"
        return {"id": args["order_id"], "amount": 10}

    def tool(self) -> Any:
        return define_tool(
            name="lookup",
            description="Look an order up.",
            input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
            execute=self,
        )


def build(provider: Any, tools: Any, prompt: str = "You help.", **options: Any) -> Agent:
    return Agent.create(provider=provider, model="m", **options).system(prompt).tools(list(tools)).build()


def recorded(**options: Any) -> Any:
    lookups = Lookups()
    agent = build(scripted(SCRIPT), [lookups.tool()], **options)
    agent.run("where is A-1?")
    return agent.last_snapshot().record


def test_a_replayed_run_commits_what_the_recorded_run_did_and_runs_no_tool() -> None:
    """Same code, replayed world: the diff is empty, every call was served, no tool ran for real."""
    record = recorded()
    lookups = Lookups()
    provider, tools = replayed(record), replayed_tools(record, [lookups.tool()])
    agent = build(provider, tools)
    assert agent.run("where is A-1?") == "order A-1 is 10.00"
    assert diff_runs(record, agent.last_snapshot()).same
    assert lookups.ran == [] and tools.served == [("lookup", {"order_id": "A-1"})]
    assert [call.runtime_stage_id for call in provider.served] == ["call-llm#1", "call-llm#4"]


def test_a_changed_prompt_fails_naming_what_differs(tmp_path: Path) -> None:
    """A request the record does not hold fails with the first difference, from a trace file too."""
    path = tmp_path / "run.json"
    from flowchart import Trace

    Trace.of(recorded().shown()).save(path)
    agent = build(replayed(path), replayed_tools(path, [Lookups().tool()]), prompt="You help briefly.")
    with pytest.raises(
        ReplayMissError,
        match=r"request 1 is not in the record of run \w+: against recorded call 1 \(call-llm#1\): "
        r"the system prompt differs: recorded 'You help.', now 'You help briefly.'",
    ):
        agent.run("where is A-1?")


def test_a_changed_message_names_the_first_message_that_differs() -> None:
    """A tool run live (today's code) whose result changed shape: the next request differs in message 2's content."""
    record = recorded()
    lookups = Lookups(shape="text")
    agent = build(replayed(record), replayed_tools(record, [lookups.tool()], live=["lookup"]))
    with pytest.raises(ReplayMissError, match=r"message 2 \(tool\) differs in content: recorded '\{\"id\""):
        agent.run("where is A-1?")
    assert lookups.ran == [{"order_id": "A-1"}]  # a live tool is today's code: it ran


def test_a_call_the_record_lacks_goes_to_the_fallback_when_asked() -> None:
    """``on_new="call"``: the fallback answers what the record lacks, and the call is kept."""
    record = recorded()
    provider = replayed(record, on_new="call", fallback=scripted(["a new answer"]))
    agent = build(provider, replayed_tools(record, [Lookups().tool()]), prompt="Changed.")
    agent.run("where is A-1?")
    assert len(provider.new_calls) == 1 and provider.new_calls[0][1].content == "a new answer"
    with pytest.raises(ProviderConfigError, match="on_new='call' needs fallback="):
        replayed(record, on_new="call")


def test_a_tool_call_the_record_lacks_is_never_run_unless_told() -> None:
    """The model asks for another order: the lookup is not run — its error is what the model reads."""
    record = recorded()
    lookups = Lookups()
    script = [{"content": "", "tool_calls": [{"id": "c9", "name": "lookup", "args": {"order_id": "B-2"}}]}, "ok"]
    tools = replayed_tools(record, [lookups.tool()])
    agent = build(scripted(script), tools)
    agent.run("where is B-2?")
    history = agent.last_snapshot().shared_state["history"]
    assert 'replayed: lookup({"order_id":"B-2"}) call 1 is not in the record' in history[2]["content"]
    assert lookups.ran == [] and tools.misses == [("lookup", {"order_id": "B-2"})]
    live = replayed_tools(record, [lookups.tool()], live=["lookup"])
    build(scripted(script), live).run("where is B-2?")
    assert lookups.ran == [{"order_id": "B-2"}]
    with pytest.raises(ValueError, match=r"live= names \['nope'\], which are not among the tools"):
        replayed_tools(record, [lookups.tool()], live=["nope"])


def test_a_record_without_the_calls_a_replay_needs_is_refused() -> None:
    """No model call in the record, or replies its rule hides: a clear error when the provider is made."""
    chart_run = flow_chart("Only", lambda scope: None, "only").build().run({})
    with pytest.raises(ProviderConfigError, match="holds no model call"):
        replayed(chart_run)
    hidden = recorded(redaction=Redaction(keys={"llm_latest_content"}))
    with pytest.raises(ProviderConfigError, match=r"hides the reply of model call call-llm#1"):
        replayed(hidden)
    with pytest.raises(TypeError, match="replayed takes a Trace"):
        replayed(42)


def test_a_record_hiding_the_user_message_still_replays() -> None:
    """The record hides the customer's words: today's request is shown under the same rule before it
    is compared, so the replay still matches."""
    rule = Redaction(fields={"history": ["[role=user].content"]}, keys={"input_message", "user_message"})
    record = recorded(redaction=rule)
    agent = build(replayed(record), replayed_tools(record, [Lookups().tool()]), redaction=rule)
    assert agent.run("where is A-1?") == "order A-1 is 10.00"


@settings(max_examples=60, deadline=None)
@given(
    content=st.one_of(st.text(max_size=20), st.integers(), st.none(), st.lists(st.integers(), max_size=2)),
    calls=st.lists(
        st.fixed_dictionaries(
            {"id": st.sampled_from(["a", "b", ""]), "name": st.sampled_from(["t", ""]), "args": st.just({})}
        ),
        max_size=3,
    ),
)
def test_a_replayed_reply_is_checked_like_a_servers(content: Any, calls: list[dict[str, Any]]) -> None:
    """Whatever a (tampered) record holds as a reply, serving it gives a well-formed response or a
    clear ``ScriptError`` / ``ReplayMissError`` — never a malformed response or another error."""
    call = RecordedCall(1, 1, "call-llm#1", {}, {"content": content, "tool_calls": calls}, None)
    try:
        response = _served(call)
    except (ScriptError, ReplayMissError):
        return
    assert isinstance(response.content, str)
    assert len({c.id for c in response.tool_calls}) == len(response.tool_calls)


def test_the_calls_are_read_from_the_record() -> None:
    """``recorded_calls`` lists each call-llm commit with the request it was sent."""
    calls = recorded_calls(recorded())
    assert [(c.idx, c.request["model"], len(c.request["messages"])) for c in calls] == [(1, "m", 1), (4, "m", 3)]


def test_a_request_offering_other_tools_is_not_the_recorded_one() -> None:
    """The tools and answer shape a call offered are part of the request (``llm_offer``): today's
    agent with another tool, or the same tool with another schema, is refused naming what moved
    (before, only the prompt, messages and model were compared, so a changed tool set was served
    the old replies)."""
    record = recorded()
    extra = define_tool(
        name="refund",
        description="Refund an order.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
        execute=lambda args, ctx: "ok",
    )
    more = build(replayed(record), [Lookups().tool(), extra])
    with pytest.raises(
        ReplayMissError, match=r"the tools offered differ: recorded \['lookup'\], now \['lookup', 'refund'\]"
    ):
        more.run("where is A-1?")
    wider = define_tool(
        name="lookup",
        description="Look an order up.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}, "full": {"type": "boolean"}}},
        execute=Lookups(),
    )
    with pytest.raises(ReplayMissError, match=r"the tools' schemas or the answer's shape differ"):
        build(replayed(record), [wider]).run("where is A-1?")
    assert build(replayed(record), [Lookups().tool()]).run("where is A-1?") == "order A-1 is 10.00"


def test_the_offer_is_recorded_once_and_again_only_when_it_changes() -> None:
    """``llm_offer`` is written by the first model call and not again while the tools and answer
    shape stay the same: one write per run on this script's two calls."""
    record = recorded()
    writes = [c.runtime_stage_id for c in record.commits if "llm_offer" in c.written_keys]
    assert writes == ["call-llm#1"]
    assert record.final_state["llm_offer"]["tools"] == ["lookup"]
