"""A provider whose plain ``def complete`` returns an awaitable works wherever a provider is called.

Law of this file: ``complete`` may be sync, async, or sync returning an awaitable (a logging,
caching or fallback wrapper around an HTTP provider). The wrapper here is real — it wraps
``openai_compatible`` talking HTTP to the local wire server — and is driven by ``run``,
``stream``, ``arun`` (as the MCP server calls it), ``resume`` and a Celery worker's
``advance``; and an error raised by a resume carries only its causes (no chained "no running
event loop").
"""

from __future__ import annotations

import asyncio
import traceback
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, Paused, define_tool
from agent.providers import LLMRequest, openai_compatible
from flowchart import CheckpointError
from flowchart.store import SqliteStore
from governance import check_in_approved

from .wire import Reply, WireServer


class Logged:
    """A wrapper any user might write: logs each request, returns the inner provider's awaitable."""

    name = "logged"

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: list[LLMRequest] = []

    def complete(self, req: LLMRequest) -> Any:
        self.seen.append(req)
        return self.inner.complete(req)


def answer(text: str) -> Reply:
    return Reply(json={"model": "m", "choices": [{"message": {"content": text}, "finish_reason": "stop"}]})


def refund_call() -> Reply:
    call = {"id": "c1", "type": "function", "function": {"name": "refund", "arguments": '{"amount": 5}'}}
    message = {"content": "", "tool_calls": [call]}
    return Reply(json={"model": "m", "choices": [{"message": message, "finish_reason": "tool_calls"}]})


def wrapped(server: WireServer) -> Logged:
    return Logged(openai_compatible(f"{server.url}/v1", model="m"))


def test_run_awaits_what_a_plain_def_complete_returned(server: WireServer) -> None:
    """``agent.run`` on the wrapper answers (it used to fail with "no running event loop")."""
    server.push(answer("Hello."))
    provider = wrapped(server)
    agent = Agent.create(provider=provider, model="m").build()
    assert not agent.config.needs_event_loop  # the wrapper's complete is a plain def
    assert agent.run("Hi") == "Hello."
    assert len(provider.seen) == 1 and server.seen[0].body["messages"] == [{"role": "user", "content": "Hi"}]


def test_stream_awaits_what_a_plain_def_complete_returned(server: WireServer) -> None:
    """``agent.stream`` (events as they happen) on the wrapper ends with the answer."""
    server.push(answer("Streamed."))
    agent = Agent.create(provider=wrapped(server), model="m").build()
    events = list(agent.stream("Hi"))
    assert events[-1].result == "Streamed."


def test_arun_inside_a_running_loop_awaits_the_wrapper(server: WireServer) -> None:
    """``await agent.arun`` (what the MCP server calls) inside a running loop answers too."""
    server.push(answer("From a loop."))
    agent = Agent.create(provider=wrapped(server), model="m").build()
    assert asyncio.run(agent.arun("Hi")) == "From a loop."


def test_resume_after_a_check_in_calls_the_wrapper_again(server: WireServer) -> None:
    """A check-in pause resumed: the tool runs and the wrapper's next call is answered."""
    server.push(refund_call(), answer("Refunded."))
    refund = define_tool(
        name="refund",
        description="Refund.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}},
        execute=lambda args, ctx: f"refunded {args['amount']}",
        check_in="always",
    )
    agent = Agent.create(provider=wrapped(server), model="m").tool(refund).build()
    paused = agent.run("Refund 5")
    assert isinstance(paused, Paused)
    assert agent.resume(paused.checkpoint, check_in_approved(request=paused.check_in, by="ada")) == "Refunded."
    assert server.seen[1].body["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "refunded 5"}


def test_a_resume_error_carries_only_its_causes(server: WireServer) -> None:
    """A refused resume raises its own error with no chained ``RuntimeError: no running event loop``."""
    server.push(refund_call())
    refund = define_tool(
        name="refund",
        description="Refund.",
        input_schema={"type": "object"},
        execute=lambda args, ctx: "refunded",
        check_in="always",
    )
    agent = Agent.create(provider=wrapped(server), model="m").tool(refund).build()
    paused = agent.run("Refund")
    assert isinstance(paused, Paused)
    data = paused.checkpoint.to_dict()
    data["pause_data"]["kind"] = "ask_human"
    forged = type(paused.checkpoint).from_dict(data)
    with pytest.raises(CheckpointError, match=r"^Invalid agent checkpoint: the pause data's kind") as info:
        agent.resume(forged, {"approved": True, "by": "nobody"})
    assert info.value.__context__ is None or info.value.__suppress_context__
    assert "no running event loop" not in "".join(traceback.format_exception(info.value))


def test_a_celery_worker_advance_awaits_the_wrapper(server: WireServer, tmp_path: Path) -> None:
    """What a Celery worker's task runs (``agent.celery.advance`` on a stored run) answers through
    the wrapper too: the run is done with the model's answer."""
    from agent._run import durable
    from agent.celery import advance

    server.push(answer("Queued and answered."))
    store = SqliteStore(tmp_path / "runs.db")
    agent = Agent.create(provider=wrapped(server), model="m", store=store).build()
    run_id = durable.create(agent, durable.make_input("Hi"))
    assert advance(agent, run_id) == "done"
    assert store.get(run_id).output == "Queued and answered."
