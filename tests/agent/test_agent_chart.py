"""The agent chart on the real agent: stage order, graph, state keys, history, iterations."""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
from agent_helpers import build, call, calls, stage_ids, weather_tool

from agent._chart.config import WRAP_UP_INSTRUCTION
from agent.providers import scripted

WEATHER_RUN = [calls(call("c1", "weather", city="Paris")), "It is sunny in Paris."]


def test_commit_log_follows_the_chart_one_tool_round() -> None:
    """One tool round commits seed, call-llm, route, tool-calls, call-llm, route, final."""
    agent, _ = build(WEATHER_RUN, weather_tool())
    assert agent.run("Weather in Paris?") == "It is sunny in Paris."
    assert stage_ids(agent) == [
        "seed#0",
        "call-llm#1",
        "route#2",
        "tool-calls#3",
        "call-llm#4",
        "route#5",
        "final#6",
    ]


def test_commit_log_without_tools_goes_straight_to_final() -> None:
    """A model that answers at once gives seed, call-llm, route, final."""
    agent, _ = build(["Hello."])
    assert agent.run("Hi") == "Hello."
    assert stage_ids(agent) == ["seed#0", "call-llm#1", "route#2", "final#3"]


def test_stage_ids_and_graph_edges() -> None:
    """The chart has the contract's stage ids and one edge per relation, loops back to call-llm."""
    agent, _ = build([], weather_tool())
    assert agent.chart.stage_ids() == ["seed", "call-llm", "route", "tool-calls", "wrap-up", "final"]
    graph = agent.chart.graph
    assert sorted(graph.edges(data="kind")) == [
        ("call-llm", "route", "next"),
        ("final", "final/prepare-final", "subflow"),
        ("final/prepare-final", "final/break-final", "next"),
        ("route", "final", "branch"),
        ("route", "tool-calls", "branch"),
        ("route", "wrap-up", "branch"),
        ("seed", "call-llm", "next"),
        ("tool-calls", "call-llm", "loop"),
        ("wrap-up", "call-llm", "loop"),
    ]
    assert dict(graph.nodes(data="kind"))["tool-calls"] == "pausable"
    assert dict(graph.nodes(data="kind"))["route"] == "decider"
    without_loops = nx.DiGraph([(a, b) for a, b, k in graph.edges(data="kind") if k != "loop"])
    assert nx.is_directed_acyclic_graph(without_loops)


def test_no_tools_means_no_wrap_up_stage() -> None:
    """An agent with no tools mounts no wrap-up branch (absent means byte-identical)."""
    agent, _ = build(["x"])
    assert "wrap-up" not in agent.chart.stage_ids()


def test_wrap_up_disabled_means_no_wrap_up_stage() -> None:
    """``wrap_up_at_max_iterations=False`` mounts no wrap-up branch."""
    agent, _ = build([], weather_tool(), wrap_up_at_max_iterations=False)
    assert "wrap-up" not in agent.chart.stage_ids()


def test_seed_writes_the_initial_state() -> None:
    """Seed commits the contract's keys with their initial values, in one commit (and the
    system prompt the model will be sent, so the record says what the model was told)."""
    agent, _ = build(["Hello."])
    agent.run("Hi")
    seed = agent.last_snapshot().commit_log[0].to_dict()
    assert {op["path"][0]: op["value"] for op in seed["trace"]} == {
        "user_message": "Hi",
        "history": [{"role": "user", "content": "Hi"}],
        "iteration": 1,
        "max_iterations": 10,
        "llm_latest_content": "",
        "llm_latest_tool_calls": [],
        "final_content": "",
        "total_input_tokens": 0,
        "total_output_tokens": 0,
        "system_prompt": "You help.",
    }


def test_identity_is_written_only_when_given() -> None:
    """``identity`` is a state key only when ``run`` got one."""
    agent, _ = build(["a", "b"])
    agent.run("Hi")
    assert "identity" not in agent.last_snapshot().shared_state
    agent.run("Hi", identity={"user": "alice"})
    assert agent.last_snapshot().shared_state["identity"] == {"user": "alice"}


def test_final_state_after_a_tool_round() -> None:
    """The final state: history, iteration 2, the answer in final_content, token totals."""
    agent, _ = build(WEATHER_RUN, weather_tool())
    agent.run("Weather in Paris?")
    state = agent.last_snapshot().shared_state
    assert state["final_content"] == "It is sunny in Paris."
    assert state["llm_latest_content"] == "It is sunny in Paris."
    assert state["llm_latest_tool_calls"] == []
    assert state["iteration"] == 2
    assert state["max_iterations"] == 10
    # scripted usage: input = (len(system) + Σ len(content)) // 4, output = len(content) // 4
    assert state["total_input_tokens"] == (9 + 17) // 4 + (9 + 17 + 0 + 12) // 4
    assert state["total_output_tokens"] == len("It is sunny in Paris.") // 4


def test_history_shapes() -> None:
    """History: the user turn, the assistant turn with tool_calls, one tool result per call."""
    agent, _ = build(
        [
            calls(call("c1", "weather", city="Paris"), call("c2", "weather", city="Oslo"), content="Checking."),
            "Both sunny.",
        ],
        weather_tool(),
    )
    agent.run("Weather in Paris and Oslo?")
    assert agent.last_snapshot().shared_state["history"] == [
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "c1", "name": "weather", "args": {"city": "Paris"}},
                {"id": "c2", "name": "weather", "args": {"city": "Oslo"}},
            ],
        },
        {"role": "tool", "content": "Paris: sunny", "tool_call_id": "c1", "tool_name": "weather"},
        {"role": "tool", "content": "Oslo: sunny", "tool_call_id": "c2", "tool_name": "weather"},
    ]


def test_final_answer_is_not_appended_to_history() -> None:
    """The final answer lives in final_content; history ends with the last tool result."""
    agent, _ = build(WEATHER_RUN, weather_tool())
    agent.run("Weather in Paris?")
    history = agent.last_snapshot().shared_state["history"]
    assert history[-1]["role"] == "tool"
    assert all(m["content"] != "It is sunny in Paris." for m in history)


def test_requests_carry_system_prompt_history_and_tools() -> None:
    """Each LLMRequest: the system prompt apart, the history so far, the tool schemas, the model."""
    agent, provider = build(WEATHER_RUN, weather_tool(), temperature=0.2, max_tokens=50)
    agent.run("Weather in Paris?")
    first, second = provider.requests
    assert first.system_prompt == "You help."
    assert first.messages == [{"role": "user", "content": "Weather in Paris?"}]
    assert first.tools == [
        {
            "name": "weather",
            "description": "Get current weather for a city.",
            "input_schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        }
    ]
    assert (first.model, first.temperature, first.max_tokens) == ("mock", 0.2, 50)
    assert [m["role"] for m in second.messages] == ["user", "assistant", "tool"]


def test_no_system_prompt_sends_none() -> None:
    """Without ``.system(...)`` the request's system_prompt is None and no tools means []."""
    agent, provider = build(["ok"], system=None)
    agent.run("Hi")
    assert provider.requests[0].system_prompt is None
    assert provider.requests[0].tools == []


def always_calls_weather(count: int) -> list[dict[str, Any]]:
    """``count`` replies, each asking for the weather again."""
    return [calls(call(f"c{i}", "weather", city="Paris")) for i in range(1, count + 1)]


def test_max_iterations_two_makes_three_calls_the_last_without_tools() -> None:
    """max_iterations(2) on a model that always calls a tool: 2 budgeted calls + 1 wrap-up call."""
    agent, provider = build([*always_calls_weather(2), "Best I can say: sunny."], weather_tool(), max_iterations=2)
    assert agent.run("Weather?") == "Best I can say: sunny."
    assert len(provider.requests) == 3
    assert [len(r.tools) for r in provider.requests] == [1, 1, 0]
    assert provider.requests[2].messages[-1] == {"role": "user", "content": WRAP_UP_INSTRUCTION}
    assert stage_ids(agent) == [
        "seed#0",
        "call-llm#1",
        "route#2",
        "tool-calls#3",
        "call-llm#4",
        "route#5",
        "wrap-up#6",
        "call-llm#7",
        "route#8",
        "final#9",
    ]
    state = agent.last_snapshot().shared_state
    assert state["iteration"] == 3
    assert state["wrap_up_asked"] is True


def test_wrap_up_is_asked_once_even_if_the_model_keeps_calling() -> None:
    """After the wrap-up the model's pending calls are not run: final, with its text."""
    replies = [*always_calls_weather(2), calls(call("c9", "weather", city="Oslo"), content="still want")]
    agent, provider = build(replies, weather_tool(), max_iterations=2)
    assert agent.run("Weather?") == "still want"
    assert len(provider.requests) == 3
    assert stage_ids(agent)[-2:] == ["route#8", "final#9"]


def test_wrap_up_disabled_makes_exactly_two_calls() -> None:
    """wrap_up_at_max_iterations=False: the budget's 2 calls, then final with the pending text."""
    replies = [*always_calls_weather(1), calls(call("c2", "weather", city="Paris"), content="partial")]
    agent, provider = build(replies, weather_tool(), max_iterations=2, wrap_up_at_max_iterations=False)
    assert agent.run("Weather?") == "partial"
    assert len(provider.requests) == 2
    assert stage_ids(agent)[-1] == "final#6"


def test_route_rationales_are_recorded_as_decision_evidence() -> None:
    """The route.decided events name each branch with the reference rationale strings."""
    seen: list[tuple[str, str]] = []
    agent, _ = build([*always_calls_weather(2), "done"], weather_tool(), max_iterations=2)
    agent.on("route.decided", lambda _n, p: seen.append((p["chosen"], p["rationale"])))
    agent.run("Weather?")
    assert seen == [
        ("tool-calls", "LLM requested 1 tool call(s)"),
        ("wrap-up", "max_iterations reached with tool calls pending — asking for a wrap-up"),
        ("final", "LLM produced no tool calls — final answer"),
    ]


def test_forced_final_rationale() -> None:
    """With wrap-up off, the budget forces final with ``max_iterations reached — forcing final``."""
    seen: list[str] = []
    agent, _ = build(always_calls_weather(1), weather_tool(), max_iterations=1, wrap_up_at_max_iterations=False)
    agent.on("route.decided", lambda _n, p: seen.append(p["rationale"]))
    agent.run("Weather?")
    assert seen == ["max_iterations reached — forcing final"]


def test_events_in_order() -> None:
    """agent.on('*') sees the typed events of one tool round in order."""
    names: list[str] = []
    agent, _ = build(WEATHER_RUN, weather_tool())
    agent.on("*", lambda name, _p: names.append(name))
    agent.run("Weather in Paris?")
    assert names == [
        "turn.start",
        "iteration.start",
        "llm.start",
        "llm.end",
        "route.decided",
        "tool.start",
        "tool.end",
        "iteration.end",
        "iteration.start",
        "llm.start",
        "llm.end",
        "route.decided",
        "turn.end",
    ]


def test_event_payloads() -> None:
    """Listeners get (name, payload); llm.end carries usage, tool.end the result."""
    got: dict[str, Any] = {}
    agent, _ = build(WEATHER_RUN, weather_tool())
    for name in ("tool.start", "tool.end", "turn.end"):
        agent.on(name, lambda n, p: got.setdefault(n, p))
    usages: list[dict[str, int]] = []
    agent.on("llm.end", lambda _n, p: usages.append(p["usage"]))
    agent.run("Weather in Paris?")
    assert got["tool.start"] == {
        "tool_name": "weather",
        "tool_call_id": "c1",
        "args": {"city": "Paris"},
        "iteration": 1,
    }
    assert got["tool.end"] == {"tool_call_id": "c1", "tool_name": "weather", "result": "Paris: sunny", "error": False}
    assert got["turn.end"]["final_content"] == "It is sunny in Paris."
    assert usages == [{"input_tokens": 6, "output_tokens": 0}, {"input_tokens": 9, "output_tokens": 5}]


def test_a_raising_listener_does_not_break_the_run() -> None:
    """A listener that raises is skipped; the run still answers."""

    def boom(_name: str, _payload: Any) -> None:
        raise RuntimeError("listener bug")

    agent, _ = build(["ok"])
    agent.on("*", boom)
    assert agent.run("Hi") == "ok"


def test_determinism_same_agent_twice() -> None:
    """Two runs of the same agent give identical commit logs and narratives."""
    agent, _ = build(WEATHER_RUN * 2, weather_tool())
    agent.run("Weather in Paris?")
    first = agent.last_snapshot()
    agent.run("Weather in Paris?")
    second = agent.last_snapshot()
    assert [c.to_dict() for c in first.commit_log] == [c.to_dict() for c in second.commit_log]
    assert first.narrative == second.narrative
    assert json.dumps([c.to_dict() for c in first.commit_log])


def test_last_snapshot_holds_the_last_run() -> None:
    """last_snapshot() gives the last run's state, commit log and narrative."""
    agent, _ = build(["first"])  # each run starts the script again: it answers by position
    agent.run("one")
    agent.run("two")
    snap = agent.last_snapshot()
    assert snap.shared_state["user_message"] == "two"
    assert snap.shared_state["final_content"] == "first"
    assert snap.narrative[0] == "Stage 1: The process began with Seed."
    assert snap.commit_log[-1].runtime_stage_id == "final#3"


def test_async_provider_and_async_tool() -> None:
    """An async provider and an async tool run through ``run`` with the same commit log."""

    class AsyncScripted:
        name = "async"

        def __init__(self) -> None:
            self.inner = scripted(WEATHER_RUN)

        async def complete(self, req: Any) -> Any:
            return self.inner.complete(req)

    async def slow_weather(args: dict[str, Any], _ctx: Any) -> str:
        return f"{args['city']}: sunny"

    agent, _ = build([], weather_tool(slow_weather), provider=AsyncScripted())  # type: ignore[arg-type]
    assert agent.run("Weather in Paris?") == "It is sunny in Paris."
    assert stage_ids(agent)[-1] == "final#6"


async def test_arun_inside_an_event_loop() -> None:
    """``arun`` works inside the caller's event loop."""
    agent, _ = build(WEATHER_RUN, weather_tool())
    assert await agent.arun("Weather in Paris?") == "It is sunny in Paris."


def test_streaming_emits_tokens() -> None:
    """``stream=True`` on a streaming provider emits llm.token events that join to the content."""
    tokens: list[str] = []
    agent, _ = build(["It is sunny."], stream=True)
    agent.on("llm.token", lambda _n, p: tokens.append(p["text"]))
    assert agent.run("Weather?") == "It is sunny."
    assert "".join(tokens) == "It is sunny."
