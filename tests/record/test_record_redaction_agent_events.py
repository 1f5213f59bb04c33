"""The agent's events hide what the commit log hides: a payload that repeats the state is redacted.

The law under test (``agent/_chart/event_views.py``, ``StageContext.shown``, ``engine.redacting.shown_state``):
the user's message, the model's content, tokens and tool calls, a tool's result, a tool error,
a ledger row, the final answer and totals carry what the run's redaction lets events show of
the state key they repeat — in a stream, to any recorder of emits — and a subflow's mapped
input and final state reach the narrative and the subflow events redacted. Only the ``final``
event's result is the run's answer itself: what ``agent.run`` returns to its caller.
"""

from __future__ import annotations

import json
from typing import Any

from agent import Agent, define_tool
from agent.providers import scripted
from flowchart import Redaction, flow_chart, narrative

SECRET = "4111-SECRET"
RULE = Redaction(
    keys=["llm_latest_content", "final_content", "user_message"],
    fields={
        "llm_latest_tool_calls": ["args.card"],
        "history": ["content", "tool_calls.args.card"],
        "tool_errors": ["message", "traceback"],
    },
)


class Emits:
    """Every emit a recorder is given, as JSON text."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_emit(self, event: Any) -> None:
        self.seen.append(json.dumps({"name": event.name, "payload": event.payload}))


def _pay(args: dict[str, Any], _ctx: Any) -> str:
    if args["card"] == "bad":
        raise ValueError(f"card declined: {SECRET}")
    return f"paid with {args['card']}"


def _agent(*, recorders: tuple[Any, ...] = (), stream: bool = False, bad_first: bool = False) -> Any:
    tool = define_tool(
        name="pay",
        description="Pay.",
        execute=_pay,
        input_schema={"type": "object", "properties": {"card": {"type": "string"}}},
    )
    calls = [{"id": "c0", "name": "pay", "args": {"card": "bad"}}] if bad_first else []
    calls.append({"id": "c1", "name": "pay", "args": {"card": SECRET}})
    replies: list[Any] = [{"content": "", "tool_calls": calls}, f"done, card {SECRET}"]
    builder = Agent.create(provider=scripted(replies), model="m", redaction=RULE, recorders=recorders, stream=stream)
    return builder.tool(tool).build()


def test_no_streamed_event_but_the_answer_shows_a_hidden_value() -> None:
    """Every event of the stream, as ``to_dict()`` JSON, is free of the secret — the tool call's
    args, the tool's result, the model's content, the turn's end — with ``[REDACTED]`` in its
    place; the ``final`` event alone carries the answer, as ``run`` returns it."""
    events = list(_agent(bad_first=True).stream(f"pay with {SECRET}"))
    leaking = [e.kind for e in events if SECRET in json.dumps(e.to_dict(), default=str)]
    assert leaking == ["final"]
    assert events[-1].result == f"done, card {SECRET}"
    calls = [e for e in events if e.kind == "tool_call"]
    assert [c.args for c in calls] == [{"card": "[REDACTED]"}, {"card": "[REDACTED]"}]  # the field, whatever it holds
    assert {e.result for e in events if e.kind == "tool_result"} == {"[REDACTED]"}
    assert {e.content for e in events if e.kind == "model_call"} == {"[REDACTED]"}


def test_a_recorder_of_emits_sees_no_hidden_value() -> None:
    """A recorder given every emit (as an OpenTelemetry exporter is) sees the turn's start and
    end, tool starts and ends, the tool error and the model's replies redacted."""
    emits = Emits()
    _agent(recorders=(emits,), bad_first=True).run(f"pay with {SECRET}")
    names = [json.loads(text)["name"] for text in emits.seen]
    assert {"turn.start", "turn.end", "tool.start", "tool.end", "tool.error", "llm.end"} <= set(names)
    assert [text for text in emits.seen if SECRET in text] == []


def test_streamed_tokens_of_a_hidden_content_are_hidden() -> None:
    """With a streaming model, each token of a hidden ``llm_latest_content`` is ``[REDACTED]``."""
    tokens = [e.text for e in _agent(stream=True).stream("pay", modes=["token"]) if e.kind == "token"]
    assert tokens and set(tokens) == {"[REDACTED]"}


def test_a_subflows_mapped_input_is_redacted_in_the_narrative_and_its_events() -> None:
    """A hidden key mapped into a subflow is ``[REDACTED]`` in the narrative's ``Input:`` line and
    in the subflow entry and exit events, as it is in the commit log."""
    inner = flow_chart("Inner", lambda scope: setattr(scope, "seen", True), "inner").build()

    def seed(scope: Any) -> None:
        scope.token = SECRET

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_subflow_chart_next("sub", inner, mount_name="Sub", input_mapper=lambda parent: {"token": parent["token"]})
        .build()
    )
    states: list[Any] = []

    class Subflows:
        def on_subflow_entry(self, event: Any) -> None:
            states.append(event.state)

        def on_subflow_exit(self, event: Any) -> None:
            states.append(event.state)

    rec = narrative()
    result = chart.run(recorders=[rec, Subflows()], redaction=Redaction(keys=["token"]))
    assert [line for line in rec.lines() if SECRET in line] == []
    assert any("token" in line and "[REDACTED]" in line for line in rec.lines())
    assert [state["token"] for state in states] == ["[REDACTED]", "[REDACTED]"]
    assert SECRET not in result.trace().to_json()
