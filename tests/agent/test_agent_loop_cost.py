"""The agent loop's own cost (issue 19, round three): what an iteration does beside the engine.

Timings depend on the machine's load; the number of Python calls a run makes does not, so
these tests pin calls: an agent that needs no event loop runs no coroutine of its own, the
agent layer stays within a call budget on the W6 shape, and the plain-function stages write
the same record as the coroutine stages an agent with an awaiting part runs.
"""

from __future__ import annotations

import abc
import inspect
import json
import os
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from call_counts import calls_of, profiled

import agent as agent_package
import flowchart._core.scope
import flowchart._core.values
from agent import Agent, define_tool
from agent.providers import scripted
from agent.providers.types import LLMResponse, ToolCall
from flowchart import Retry, ScopeWriteError

_AGENT_DIR = os.path.dirname(agent_package.__file__) + os.sep
# the modules of the chart's stages (agent.py's run entry is one coroutine a run, not a stage)
_STAGE_MODULES = {
    os.path.join(_AGENT_DIR, folder, name)
    for folder, name in (
        ("_chart", "chart.py"),
        ("_chart", "stages.py"),
        ("_chart", "dispatch.py"),
        ("_chart", "tool_run.py"),
        ("_tools", "tools.py"),
    )
}
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}
TOOL_TURNS = 10


def _w6_agent() -> Agent:
    """W6's shape (bench/pyfootprint/w6_agent.py): the ``add`` tool asked for 10 times, then an answer."""
    add = define_tool(name="add", description="Add.", input_schema=ADD_SCHEMA, execute=lambda a, c: a["a"] + a["b"])
    replies: list[Any] = [
        {"content": "", "tool_calls": [{"id": f"call_{i}", "name": "add", "args": {"a": i, "b": 1}}]}
        for i in range(TOOL_TURNS)
    ]
    replies.append("done")
    return Agent.create(provider=scripted(replies), model="mock", narrative=False).tool(add).max_iterations(20).build()


def _agent_layer_calls(run: Callable[[], Any]) -> tuple[int, int]:
    """(Python calls into agent/, coroutine frames of the stage modules) during ``run()``."""
    counts = [0, 0]

    def profile(frame: Any, event: str, _arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code.co_filename.startswith(_AGENT_DIR):
            counts[0] += 1
            if code.co_flags & inspect.CO_COROUTINE and code.co_filename in _STAGE_MODULES:
                counts[1] += 1

    profiled(run, profile)
    return counts[0], counts[1]


def test_an_agent_that_needs_no_event_loop_runs_no_coroutine_but_the_model_call() -> None:
    """Sync provider, sync tool, no governance: seed, route and tool-calls are plain functions;
    the model call is one coroutine (the stage and its ``_complete``) driven to its end without a
    loop — its plain twin bought 1.4 % of W6 and went (docs/performance.md, "Round seven")."""
    agent = _w6_agent()
    assert not agent.config.needs_event_loop
    _calls, coroutines = _agent_layer_calls(lambda: agent.run("add numbers ten times"))
    assert coroutines == 2 * 11
    assert agent.last_snapshot().shared_state["final_content"] == "done"


def test_the_agent_layer_stays_within_its_call_budget_on_the_w6_shape() -> None:
    """A W6 run (10 tool rounds) makes at most 301 Python calls into agent/ (431 before round
    three: coroutine drivers, awaited helpers, per-call rule lists; 337 before round five: a
    ``CallSite``, a ``CallOutcome``, a second identity lookup, ``argument_gate`` and
    ``tool_ended`` for every call whose tool ran; 265 in round six, before the model call's
    plain twin went in round seven: its driver and ``_complete`` are 2 calls a model call; 289
    before issue 33 recorded every model call's cost by default: its writer is 1 call a model
    call). The count does not depend on the machine's load; raise the budget only with a reason."""
    agent = _w6_agent()
    calls, _coroutines = _agent_layer_calls(lambda: agent.run("add numbers ten times"))
    assert 200 < calls <= 301, calls


def test_the_agent_reads_its_state_by_key_never_by_attribute() -> None:
    """The agent's stages read ``scope[KEY]``, not ``scope.key``: an attribute read first fails
    the scope's slot lookup (an ``AttributeError`` made and dropped inside the interpreter) before
    ``Scope.__getattr__`` reads the key, about three times the cost of ``Scope.__getitem__``
    (round five: ≈ 4 µs/iter of W6). Before, a W6 run entered ``Scope.__getattr__`` 59 times
    (the iteration, the token totals, the route's budget, the final subflow). The record is the
    same: both go through ``Transaction.get``."""
    agent = _w6_agent()
    calls = calls_of(flowchart._core.scope.Scope.__getattr__.__code__, lambda: agent.run("add numbers ten times"))
    assert calls == 0
    assert agent.last_snapshot().shared_state["final_content"] == "done"


def test_the_history_messages_are_not_copied_again() -> None:
    """The two messages a tool round appends to ``history`` are built from committed values and
    ASCII text, so they are handed over without a copy (``append_owned``), and call-llm copies only
    the args of the model's calls (``set_owned``): a W6 run copies 26 containers, not 97 (round
    five: ≈ 2.4 and ≈ 1 µs/iter)."""
    agent = _w6_agent()
    copies = calls_of(flowchart._core.values._copy.__code__, lambda: agent.run("add numbers ten times"))
    assert copies <= 30, copies
    assert len(agent.last_snapshot().shared_state["history"]) == 1 + 2 * TOOL_TURNS


def test_the_history_keeps_the_models_args_when_the_provider_changes_them_later() -> None:
    """The assistant message shares the committed call's args instead of copying them; the
    committed call holds call-llm's own copy of what the provider answered (``_owned_calls``
    copies the args and hands the rest over uncopied, ``set_owned``). A provider (here the
    script's caller, through the tool) that changes its tool call's args after answering changes
    neither the history, nor the committed calls, nor the commit log."""
    args = {"a": 1, "b": 2}

    def add(given: dict[str, Any], _ctx: Any) -> Any:
        args["a"] = 99  # the provider's own object, changed after it answered
        args["extra"] = [1]
        return given["a"] + given["b"]

    reply = LLMResponse(content="", tool_calls=(ToolCall("c1", "add", args),), finish_reason="tool_use")
    tool = define_tool(name="add", description="Add.", input_schema=ADD_SCHEMA, execute=add)
    agent = Agent.create(provider=scripted([reply, "done"]), model="m").tool(tool).build()
    assert agent.run("go") == "done"
    snapshot = agent.last_snapshot()
    assert snapshot.shared_state["history"][1]["tool_calls"] == [{"id": "c1", "name": "add", "args": {"a": 1, "b": 2}}]
    assert snapshot.shared_state["history"][2]["content"] == "3"
    record = json.dumps([c.to_dict() for c in snapshot.commit_log])
    assert "99" not in record and "extra" not in record
    assert any("Read llm_latest_tool_calls" in line for line in snapshot.narrative)


def test_tool_calls_that_are_not_plain_take_the_checked_write() -> None:
    """The model's calls are handed over uncopied only when every id and name is ASCII text and
    every args value JSON-safe; otherwise the ordinary write checks and copies: a non-ASCII id is
    recorded as it came, args that are not JSON-safe are refused naming the spot, as before."""
    tool = define_tool(name="add", description="Add.", input_schema={"type": "object"}, execute=lambda a, c: 1)
    odd = LLMResponse(content="", tool_calls=(ToolCall("appel-é", "add", {"a": 1}),), finish_reason="tool_use")
    agent = Agent.create(provider=scripted([odd, "done"]), model="m", narrative=False).tool(tool).build()
    assert agent.run("go") == "done"
    history = agent.last_snapshot().shared_state["history"]
    assert history[1]["tool_calls"] == [{"id": "appel-é", "name": "add", "args": {"a": 1}}]
    bad = LLMResponse(content="", tool_calls=(ToolCall("c1", "add", {"a": {1, 2}}),), finish_reason="tool_use")
    agent = Agent.create(provider=scripted([bad, "done"]), model="m", narrative=False).tool(tool).build()
    message = r"Cannot write 'llm_latest_tool_calls': a set is not JSON-safe at llm_latest_tool_calls\[0\]\.args\.a"
    with pytest.raises(ScopeWriteError, match=message):
        agent.run("go")


def test_a_tool_result_that_is_not_unicode_text_is_still_refused_by_the_history() -> None:
    """A tool result with a lone surrogate does not take the uncopied path: the history refuses
    it as any write, naming the key (as before round five)."""
    tool = define_tool(name="s", description="S.", input_schema={"type": "object"}, execute=lambda a, c: "x \ud800")
    reply = {"content": "", "tool_calls": [{"id": "c1", "name": "s", "args": {}}]}
    agent = Agent.create(provider=scripted([reply, "done"]), model="m", narrative=False).tool(tool).build()
    with pytest.raises(ScopeWriteError, match=r"Cannot write 'history': a string with a lone surrogate \(U\+D800\)"):
        agent.run("go")


def test_a_tool_result_in_other_scripts_is_appended_as_it_was() -> None:
    """Non-ASCII text (copied, the checked path) and ASCII text (handed over) land in the history
    as the tool returned them."""
    tool = define_tool(name="t", description="T.", input_schema={"type": "object"}, execute=lambda a, c: a["text"])
    replies: list[Any] = [
        {"content": "", "tool_calls": [{"id": "c1", "name": "t", "args": {"text": "héllo"}}]},
        {"content": "ça", "tool_calls": [{"id": "c2", "name": "t", "args": {"text": "plain"}}]},
        "done",
    ]
    agent = Agent.create(provider=scripted(replies), model="m", narrative=False).tool(tool).build()
    assert agent.run("go") == "done"
    history = agent.last_snapshot().shared_state["history"]
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "go"),
        ("assistant", ""),
        ("tool", "héllo"),
        ("assistant", "ça"),
        ("tool", "plain"),
    ]


def test_an_iteration_makes_no_abstract_base_class_check() -> None:
    """``isinstance(x, Mapping)`` of a plain dict is a Python call (``ABCMeta.__instancecheck__``):
    argument validation and ``decide()`` test for a dict first. A W6 run makes at most 4 (the
    run's options and input, once a run), 45 before round five (3 an argument check, 1 a route)."""
    agent = _w6_agent()
    checks = calls_of(abc.ABCMeta.__instancecheck__.__code__, lambda: agent.run("add numbers ten times"))
    assert checks <= 4, checks


def _mixed_agent(asynchronous: bool) -> Agent:
    """Every outcome of a call (ran, bad args, unknown tool, raised, retried, missing args),
    then a wrap-up; with ``asynchronous`` the ``add`` tool is ``async def`` (coroutine stages)."""

    def add_sync(args: dict[str, Any], _ctx: Any) -> Any:
        return args["a"] + args["b"]

    async def add_async(args: dict[str, Any], _ctx: Any) -> Any:
        return args["a"] + args["b"]

    def boom(_args: dict[str, Any], _ctx: Any) -> Any:
        raise ValueError("bad")

    add = add_async if asynchronous else add_sync
    tools = [
        define_tool(name="add", description="Add.", input_schema=ADD_SCHEMA, execute=add),
        define_tool(name="boom", description="Boom.", input_schema={"type": "object"}, execute=boom),
        define_tool(
            name="flaky",
            description="Flaky.",
            input_schema={"type": "object"},
            execute=boom,
            retry=Retry(attempts=2, backoff=0.0),
        ),
    ]
    first = [
        {"id": "c1", "name": "add", "args": {"a": 1, "b": "z"}},
        {"id": "c2", "name": "nope", "args": {}},
        {"id": "c3", "name": "boom", "args": {}},
        {"id": "c4", "name": "flaky", "args": {}},
        {"id": "c5", "name": "add", "args": {"a": 2}},
        {"id": "c6", "name": "add", "args": {"a": 2, "b": 3}},
    ]
    again = [{"id": "c7", "name": "add", "args": {"a": 1, "b": 2}}]
    replies: list[Any] = [{"content": "x", "tool_calls": first}, {"content": "", "tool_calls": again}, "final"]
    builder = Agent.create(provider=scripted(replies), model="m").system("be brief").tools(tools)
    return builder.max_iterations(2).build()


def test_plain_function_stages_write_the_same_record_as_coroutine_stages() -> None:
    """The same script through the plain-function stages (no event loop) and through the
    coroutine stages (an ``async`` tool): the same commit log, state and narrative, byte for byte."""
    plain, awaiting = _mixed_agent(False), _mixed_agent(True)
    assert not plain.config.needs_event_loop and awaiting.config.needs_event_loop
    assert plain.run("hi") == awaiting.run("hi") == "final"
    a, b = plain.last_snapshot(), awaiting.last_snapshot()
    assert repr(a.commit_log) == repr(b.commit_log)
    assert a.shared_state == b.shared_state
    assert a.narrative == b.narrative
    assert "wrap_up_asked" in a.shared_state and len(a.shared_state["tool_errors"]) == 3


def test_the_plain_dispatch_reads_the_identity_as_the_gated_dispatch_does() -> None:
    """With an identity, the plain-function dispatch (which looks an absent identity up once)
    reads it where the coroutine dispatch does (once for a call refused on its arguments, twice
    for a call whose tool ran): the same record and narrative; the tool's context carries it."""
    seen: list[Any] = []
    records = []
    for asynchronous in (False, True):
        agent = _mixed_agent(asynchronous)
        add = agent.config.tools["add"]
        run = add.execute

        def spy(args: dict[str, Any], ctx: Any, run: Any = run) -> Any:
            seen.append(ctx.identity)
            return run(args, ctx)

        agent.config.tools["add"] = attrs.evolve(add, execute=spy)
        assert agent.run("hi", identity={"user": "ada"}) == "final"
        snapshot = agent.last_snapshot()
        records.append((repr(snapshot.commit_log), snapshot.narrative))
        assert sum("Read identity" in line for line in snapshot.narrative) == 1 + 2 + 2 + 1 + 2
    assert records[0] == records[1]
    assert seen == [{"user": "ada"}] * 2


def test_a_sync_tool_returning_an_awaitable_is_awaited_in_place_and_its_error_row_names_only_the_tool() -> None:
    """A plain ``def`` tool that returns a coroutine (the agent needs no event loop): the
    coroutine is awaited in place, as the driven coroutine stage did; when it raises, the
    ``tool_errors`` traceback lists the tool's frames only, never the agent's own."""

    async def lookup(args: dict[str, Any]) -> Any:
        if args.get("fail"):
            raise LookupError("no such thing")
        return f"found {args['q']}"

    tool = define_tool(
        name="lookup", description="Look up.", input_schema={"type": "object"}, execute=lambda a, _c: lookup(a)
    )
    replies: list[Any] = [
        {"content": "", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"q": "x"}}]},
        {"content": "", "tool_calls": [{"id": "c2", "name": "lookup", "args": {"q": "y", "fail": True}}]},
        "done",
    ]
    agent = Agent.create(provider=scripted(replies), model="m").tool(tool).build()
    assert not agent.config.needs_event_loop
    assert agent.run("go") == "done"
    state = agent.last_snapshot().shared_state
    assert [m["content"] for m in state["history"] if m["role"] == "tool"] == ["found x", "no such thing"]
    [row] = state["tool_errors"]
    assert [frame.split(":")[0] for frame in row["traceback"]] == [__name__]
    assert row["traceback"][0].endswith(" in lookup")
