"""ask_human pauses on the real agent: checkpoint JSON round trip, fresh agents, mid-batch calls."""

from __future__ import annotations

import re
from typing import Any

import pytest
from agent_helpers import Counter, build, call, calls, refund_tool, stage_ids, tool_messages, weather_tool

from agent import Paused, ask_human, define_tool
from flowchart import Checkpoint
from governance import check_in_approved

CONFIRM_SCHEMA = {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}


class Confirm:
    """A tool that asks a person (``ask_human``) and counts how often its body starts."""

    def __init__(self) -> None:
        self.starts = 0

    def __call__(self, args: dict[str, Any], _ctx: Any) -> Any:
        self.starts += 1
        ask_human({"question": args["question"]})


def confirm_tool(body: Confirm) -> Any:
    """``confirm(question)``: pauses the run with ask_human."""
    return define_tool(name="confirm", description="Ask the user.", input_schema=CONFIRM_SCHEMA, execute=body)


def test_ask_human_pauses_at_tool_calls() -> None:
    """ask_human inside a tool returns a Paused whose checkpoint is at tool-calls."""
    body = Confirm()
    agent, provider = build([calls(call("c1", "confirm", question="Proceed?"))], confirm_tool(body))
    out = agent.run("Do it")
    assert isinstance(out, Paused)
    assert out.kind == "ask_human"
    assert out.check_in is None and out.ask is None
    assert out.pause_data == {
        "kind": "ask_human",
        "tool_call_id": "c1",
        "tool_name": "confirm",
        "data": {"question": "Proceed?"},
    }
    assert out.checkpoint.paused_stage_id == "tool-calls"
    assert stage_ids(agent) == ["seed#0", "call-llm#1", "route#2", "tool-calls#3"]
    assert len(provider.requests) == 1


def test_checkpoint_round_trips_and_resumes_on_a_fresh_agent() -> None:
    """The checkpoint survives JSON; a freshly built agent resumes it; the answer is the result."""
    replies = [calls(call("c1", "confirm", question="Proceed?")), "Done, as you said."]
    first_body = Confirm()
    first, _ = build(replies, confirm_tool(first_body))
    out = first.run("Do it")
    assert isinstance(out, Paused)
    text = out.checkpoint.to_json()
    second_body = Confirm()
    fresh, provider = build(replies, confirm_tool(second_body))  # it continues the script by position
    result = fresh.resume(Checkpoint.from_json(text), "yes, go ahead")
    assert result == "Done, as you said."
    assert (first_body.starts, second_body.starts) == (1, 0)
    state = fresh.last_snapshot().shared_state
    assert state["history"][-1] == {
        "role": "tool",
        "content": "yes, go ahead",
        "tool_call_id": "c1",
        "tool_name": "confirm",
    }
    assert "paused_tool_call" not in state
    assert provider.requests[0].messages[-1]["content"] == "yes, go ahead"


def test_a_non_string_answer_is_json_encoded() -> None:
    """An ask_human answer that is not a string reaches the model as JSON."""
    agent, _ = build([calls(call("c1", "confirm", question="?")), "ok"], confirm_tool(Confirm()))
    out = agent.run("go")
    assert isinstance(out, Paused)
    agent.resume(out.checkpoint, {"approved": True, "n": 2})
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ['{"approved":true,"n":2}']


def test_the_checkpoint_holds_no_functions() -> None:
    """A paused checkpoint is plain JSON: its dict round-trips unchanged."""
    agent, _ = build([calls(call("c1", "confirm", question="?"))], confirm_tool(Confirm()))
    out = agent.run("go")
    assert isinstance(out, Paused)
    data = out.checkpoint.to_dict()
    assert Checkpoint.from_dict(data).to_dict() == data
    paused = data["shared_state"]["paused_tool_call"]
    assert paused == {
        "kind": "ask_human",
        "tool_call_id": "c1",
        "tool_name": "confirm",
        "args": {"question": "?"},
        "request_id": paused["request_id"],
        "position": {"iteration": 1, "step": "tool-calls#3"},
        "index": 0,
    }
    assert re.fullmatch(r"hum_[0-9a-f]{32}", paused["request_id"])


def test_ask_human_data_must_be_json_safe() -> None:
    """ask_human(data) with non-JSON data is a tool error the model reads."""

    def body(_args: dict[str, Any], _ctx: Any) -> Any:
        ask_human({"when": object()})

    agent, _ = build([calls(call("c1", "confirm", question="?")), "ok"], confirm_tool(body))  # type: ignore[arg-type]
    assert agent.run("go") == "ok"
    [text] = tool_messages(agent.last_snapshot().shared_state["history"])
    assert text.startswith("ask_human(data): data must be JSON-safe (")


def test_mid_batch_pause_keeps_the_later_calls() -> None:
    """Calls after the paused one are dispatched after the resume, in order, none twice."""
    weather = Counter(lambda a: f"{a['city']}: sunny")
    confirm = Confirm()
    batch = calls(
        call("c1", "weather", city="A"),
        call("c2", "confirm", question="Continue?"),
        call("c3", "weather", city="B"),
        call("c4", "weather", city="C"),
    )
    agent, provider = build([batch, "All done."], weather_tool(weather), confirm_tool(confirm))
    out = agent.run("go")
    assert isinstance(out, Paused)
    assert weather.runs == [{"city": "A"}]
    paused_history = out.checkpoint.shared_state["history"]
    assert tool_messages(paused_history) == ["A: sunny"]
    fresh_weather = Counter(lambda a: f"{a['city']}: sunny")
    fresh, _ = build([], weather_tool(fresh_weather), confirm_tool(Confirm()), provider=provider)
    assert fresh.resume(Checkpoint.from_json(out.checkpoint.to_json()), "yes") == "All done."
    assert fresh_weather.runs == [{"city": "B"}, {"city": "C"}]
    assert confirm.starts == 1
    history = fresh.last_snapshot().shared_state["history"]
    assert [(m["tool_call_id"], m["content"]) for m in history if m["role"] == "tool"] == [
        ("c1", "A: sunny"),
        ("c2", "yes"),
        ("c3", "B: sunny"),
        ("c4", "C: sunny"),
    ]
    assert sum(1 for m in history if m["role"] == "assistant") == 1
    assert fresh.last_snapshot().shared_state["iteration"] == 2


def test_resumed_run_commit_log_continues_the_chart() -> None:
    """The resumed run commits tool-calls twice (the recorded answer, then the resume), then
    call-llm, route, final."""
    agent, _ = build([calls(call("c1", "confirm", question="?")), "ok"], confirm_tool(Confirm()))
    out = agent.run("go")
    assert isinstance(out, Paused)
    agent.resume(out.checkpoint, "yes")
    log = agent.last_snapshot().commit_log
    assert [c.stage_id for c in log] == ["tool-calls", "tool-calls", "call-llm", "route", "final"]


def test_two_ask_human_calls_in_one_batch_pause_twice() -> None:
    """A second ask_human later in the same batch pauses again at tool-calls; each answer lands once."""
    confirm = Confirm()
    batch = calls(call("c1", "confirm", question="first?"), call("c2", "confirm", question="second?"))
    agent, _ = build([batch, "ok"], confirm_tool(confirm))
    first = agent.run("go")
    assert isinstance(first, Paused)
    second = agent.resume(first.checkpoint, "one")
    assert isinstance(second, Paused)
    assert second.checkpoint.paused_stage_id == "tool-calls"
    assert second.pause_data["data"] == {"question": "second?"}
    assert agent.resume(Checkpoint.from_json(second.checkpoint.to_json()), "two") == "ok"
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["one", "two"]
    assert confirm.starts == 2


def test_a_second_consent_pause_in_the_batch_pauses_again() -> None:
    """Two check-in calls in one batch: approve the first, the run pauses again on the second."""
    body = Counter(lambda a: f"refunded {a['amount']}")
    batch = calls(call("c1", "refund", order_id="A", amount=5), call("c2", "refund", order_id="B", amount=7))
    agent, _ = build([batch, "Both refunded."], refund_tool(body, check_in="always"))
    first = agent.run("refund both")
    assert isinstance(first, Paused) and first.check_in is not None
    assert first.check_in.args == {"order_id": "A", "amount": 5}
    second = agent.resume(first.checkpoint, check_in_approved(request=first.check_in, by="alice", at="t"))
    assert isinstance(second, Paused) and second.check_in is not None
    assert second.check_in.args == {"order_id": "B", "amount": 7}
    assert body.runs == [{"order_id": "A", "amount": 5}]
    done = agent.resume(second.checkpoint, check_in_approved(request=second.check_in, by="alice", at="t"))
    assert done == "Both refunded."
    assert body.runs == [{"order_id": "A", "amount": 5}, {"order_id": "B", "amount": 7}]
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["refunded 5", "refunded 7"]


def test_pause_events() -> None:
    """pause.request at the pause; on resume pause.resume, the paused call's tool.end, iteration.end."""
    names: list[str] = []
    agent, _ = build([calls(call("c1", "confirm", question="?")), "ok"], confirm_tool(Confirm()))
    agent.on("*", lambda n, _p: names.append(n))
    out = agent.run("go")
    assert isinstance(out, Paused)
    assert names[-2:] == ["tool.start", "pause.request"]
    names.clear()
    agent.resume(out.checkpoint, "yes")
    assert names[:3] == ["pause.resume", "tool.end", "iteration.end"]


def test_resume_refuses_a_non_checkpoint() -> None:
    """agent.resume needs a Checkpoint."""
    agent, _ = build([])
    with pytest.raises(TypeError, match=r"^agent\.resume\(checkpoint, answer\): expected a Checkpoint, got dict$"):
        agent.resume({}, "x")  # type: ignore[arg-type]
