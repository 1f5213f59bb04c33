"""Emits nobody takes cost nothing: a recorder may name the emits it takes (``emit_names``),
and the stream tap does, so a ``modes=`` filter also saves copying and delivering the rest."""

from __future__ import annotations

from typing import Any

from agent import Agent, define_tool
from agent.providers import scripted
from flowchart import flow_chart
from flowchart._stream.stream_tap import StreamTap


class Names:
    """Collects the names of the emits it is given; ``emit_names`` as constructed."""

    def __init__(self, emit_names: frozenset[str] | None = None) -> None:
        self.seen: list[str] = []
        if emit_names is not None:
            self.emit_names = emit_names

    def on_emit(self, event: Any) -> None:
        self.seen.append(event.name)


def _emitting(scope: Any, ctx: Any) -> None:
    ctx.emit("wanted", {"n": 1})
    ctx.emit("other", {"n": 2})
    scope.done = True


def test_a_recorder_naming_its_emits_is_given_only_those() -> None:
    """Alone, a recorder with ``emit_names`` gets the names it asked for; beside a recorder
    without them (which takes every name), both get every emit, in order."""
    chart = flow_chart("Emit", _emitting, "emit").build()
    picky = Names(frozenset({"wanted"}))
    chart.run(recorders=[picky])
    assert picky.seen == ["wanted"]
    picky, everything = Names(frozenset({"wanted"})), Names()
    chart.run(recorders=[picky, everything])
    assert everything.seen == ["wanted", "other"]
    assert picky.seen == ["wanted", "other"]


def test_the_stream_tap_names_the_emits_its_modes_keep() -> None:
    """``modes=['messages']`` takes the model-call events only; plain ``emit`` events (every
    kind) take every name; a tap without a translator takes none."""
    from agent._run.streaming import EMIT_KINDS, translate

    def tap(kinds: set[str], **kw: Any) -> StreamTap:
        return StreamTap(lambda _e: None, frozenset(kinds), **kw)

    messages = tap({"token", "model_call"}, translate=translate, emit_kinds=EMIT_KINDS)
    assert messages.emit_names == frozenset({"llm.token", "llm.end"})
    assert tap({"emit", "token"}, translate=translate, emit_kinds=EMIT_KINDS).emit_names is None
    assert tap({"token"}).emit_names == frozenset()


def test_a_messages_stream_still_streams_every_model_call() -> None:
    """Filtering at the source loses nothing the mode asked for: two model calls, two events,
    and the answer at the end."""
    add = define_tool(name="add", description="Add.", input_schema={"type": "object"}, execute=lambda args, ctx: 3)
    replies: list[Any] = [{"content": "", "tool_calls": [{"id": "c1", "name": "add", "args": {}}]}, "three"]
    agent = Agent.create(provider=scripted(replies), model="m").tool(add).build()
    events = list(agent.stream("add", modes=["messages"]))
    assert [e.kind for e in events] == ["model_call", "model_call", "final"]
    assert events[-1].result == "three"


def test_ctx_listens_says_whether_an_emit_of_that_name_would_be_delivered() -> None:
    """``ctx.listens(name)``: False with no emit recorder, only the named ones beside a picky
    recorder, every name beside one that takes all (``observed`` is True in the last two)."""
    seen: dict[str, Any] = {}

    def stage(scope: Any, ctx: Any) -> None:
        seen["listens"] = (ctx.listens("wanted"), ctx.listens("other"), ctx.observed)
        scope.done = True

    chart = flow_chart("Listen", stage, "listen").build()
    chart.run()
    assert seen["listens"] == (False, False, False)
    chart.run(recorders=[Names(frozenset({"wanted"}))])
    assert seen["listens"] == (True, False, True)
    chart.run(recorders=[Names(frozenset({"wanted"})), Names()])
    assert seen["listens"] == (True, True, True)


def test_a_messages_stream_builds_no_payload_for_the_agents_other_events(monkeypatch: Any) -> None:
    """Asked for model calls only, the agent builds the ``llm.end`` payloads and no other (its
    iteration, route and tool events are left unbuilt, not built and dropped)."""
    import agent._chart.stages
    import agent._chart.tool_run

    built: list[str] = []
    for module in (agent._chart.stages, agent._chart.tool_run):
        real = module.emit_owned
        monkeypatch.setattr(
            module, "emit_owned", lambda ctx, name, payload, real=real: (built.append(name), real(ctx, name, payload))
        )
    add = define_tool(name="add", description="Add.", input_schema={"type": "object"}, execute=lambda args, ctx: 3)
    replies: list[Any] = [{"content": "", "tool_calls": [{"id": "c1", "name": "add", "args": {}}]}, "three"]
    agent_ = Agent.create(provider=scripted(replies), model="m").tool(add).build()
    assert [e.kind for e in agent_.stream("add", modes=["messages"])] == ["model_call", "model_call", "final"]
    assert set(built) == {"llm.end"}
