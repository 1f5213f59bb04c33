"""W6 — agent-shaped loop with a scripted mock LLM (pyfootprint).

Rows:

- *real Agent, scripted provider* (the headline): ``Agent`` with the ``add`` tool and a
  ``scripted`` provider that asks for one tool call on turns 0..9 and answers on turn 10. A
  scripted provider is used up by one run, so the next agent (and its provider) is built in
  the untimed ``after`` hook. Check: 11 LLM requests, 21 history messages (the user message
  and 10 assistant/tool pairs; the final answer sits in ``final_content``, so 22 messages in
  all), and the answer.
- *real Agent, narrative=False*: the same without the narrative recorder the Agent attaches
  by default.
- *real Agent + otel_recorder*: the headline row with ``Agent.create(recorders=[otel_recorder(p)])``,
  once exporting over OTLP/HTTP to a receiver on 127.0.0.1 (batch processor, as in
  production; see ``otel_sink``) and once into memory (the recorder + SDK cost alone).
  Skipped when the ``[otel]`` extra is not installed.
- *flowchart chart (SPEC shape)*: the SPEC.md chart (Seed → CallLLM → Route → ToolCalls ⟲ →
  Final) on the bare engine, the same shape LangGraph and footprintjs run; with and without
  the narrative recorder. The gap between the two rows is the agent layer's cost.
"""

from __future__ import annotations

from typing import Any

from bench.harness import Record, Settings
from bench.pyfootprint.common import row, settings, skip
from flowchart import flow_chart, narrative

TOOL_TURNS = 10
ANSWER = f"done after {TOOL_TURNS} tool calls"
ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "required": ["a", "b"],
}


def mock_llm(turn: int) -> dict[str, Any]:
    """Deterministic reply for ``turn``: a tool call until turn 10, then an answer."""
    if turn < TOOL_TURNS:
        call = {"id": f"call_{turn}", "name": "add", "args": {"a": turn, "b": 1}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return {"role": "assistant", "content": ANSWER}


# --- the SPEC.md chart on the bare engine -------------------------------------------------


def seed(scope: Any) -> None:
    """The user message, no LLM call yet."""
    scope.messages = [{"role": "user", "content": "add numbers ten times"}]
    scope.llm_calls = 0


def call_llm(scope: Any) -> None:
    """Append the mock reply; count the call."""
    scope.messages.append(mock_llm(scope.llm_calls))
    scope.llm_calls = scope.llm_calls + 1


def route(scope: Any) -> str:
    """Tool calls in the last message → ``tools``, else ``final``."""
    return "tools" if scope.messages[-1].get("tool_calls") else "final"


def tool_calls(scope: Any) -> None:
    """Run each requested ``add`` and append its result."""
    for tc in scope.messages[-1]["tool_calls"]:
        result = tc["args"]["a"] + tc["args"]["b"]
        scope.messages.append({"role": "tool", "tool_call_id": tc["id"], "content": str(result)})


def final(scope: Any) -> None:
    """``answer ← content of the last message``."""
    scope.answer = scope.messages[-1]["content"]


def build_chart() -> Any:
    """Seed → CallLLM → Route (decider) → ToolCalls ⟲ CallLLM | Final."""
    return (
        flow_chart("Seed", seed, "seed")
        .add_function("CallLLM", call_llm, "call-llm")
        .add_decider_function("Route", route, "route")
        .add_function_branch("tools", "ToolCalls", tool_calls, loop_to="call-llm")
        .add_function_branch("final", "Final", final)
        .set_default("final")
        .end()
        .build()
    )


def run_chart(chart: Any, with_narrative: bool = False) -> None:
    """One run, checked: 11 LLM calls, 22 messages, an answer."""
    recorders = [narrative()] if with_narrative else []
    state = chart.run(recorders=recorders).state
    if state["llm_calls"] != TOOL_TURNS + 1 or len(state["messages"]) != 2 + 2 * TOOL_TURNS or not state.get("answer"):
        raise RuntimeError("W6 wrong result")


# --- the real Agent -----------------------------------------------------------------------


def build_agent(with_narrative: bool = True, recorders: tuple[Any, ...] = ()) -> Any:
    """An Agent with the ``add`` tool and a fresh scripted provider for exactly one run.

    ``with_narrative=False`` passes ``narrative=False`` (not in API.md: an extra of this repo).
    """
    from agent import Agent, define_tool
    from agent.providers import scripted

    add = define_tool(
        name="add",
        description="Add two numbers.",
        input_schema=ADD_SCHEMA,
        execute=lambda args, ctx: args["a"] + args["b"],
    )
    replies: list[Any] = [
        {"content": m["content"], "tool_calls": m["tool_calls"]} for m in map(mock_llm, range(TOOL_TURNS))
    ]
    replies.append(ANSWER)
    provider = scripted(replies)
    options: dict[str, Any] = {} if with_narrative else {"narrative": False}
    if recorders:
        options["recorders"] = recorders
    builder = Agent.create(provider=provider, model="mock", **options)
    agent = builder.tool(add).max_iterations(2 * TOOL_TURNS).build()
    return agent, provider


def run_agent(agent: Any, provider: Any) -> None:
    """One agent run, checked."""
    answer = agent.run("add numbers ten times")
    history = agent.last_snapshot().shared_state["history"]
    if answer != ANSWER or len(provider.requests) != TOOL_TURNS + 1:
        raise RuntimeError(f"W6 wrong result: {answer!r}, {len(provider.requests)} requests")
    if len(history) != 1 + 2 * TOOL_TURNS:
        raise RuntimeError(f"W6 wrong history length {len(history)}")


def agent_row(cfg: Settings, out: list[Record], with_narrative: bool = True) -> None:
    """A row on the real Agent, or a skip note while ``agent`` is not importable."""
    variant = "real Agent, scripted provider"
    if not with_narrative:
        variant += ", narrative=False"
    try:
        box = {"pair": build_agent(with_narrative)}
    except (ImportError, TypeError) as exc:
        skip(out, "W6", variant, f"agent is not usable here ({exc})")
        return

    def renew() -> None:
        box["pair"] = build_agent(with_narrative)

    samples = cfg.bench(lambda: run_agent(*box["pair"]), after=renew)
    row(out, "W6", variant, samples, per=TOOL_TURNS, unit="us/iter")


def otel_rows(cfg: Settings, out: list[Record]) -> None:
    """The headline row with the OpenTelemetry recorder: OTLP/HTTP to 127.0.0.1, and in memory."""
    try:
        from bench.pyfootprint import otel_sink
        from flowchart.otel import otel_recorder
    except ImportError as exc:
        skip(out, "W6", "real Agent + otel_recorder", f"the [otel] extra is not installed ({exc})")
        return
    server = otel_sink.start_receiver()
    provider = otel_sink.otlp_provider(server)
    recorder = otel_recorder(provider)
    box = {"pair": build_agent(recorders=(recorder,))}

    def renew() -> None:
        box["pair"] = build_agent(recorders=(recorder,))

    samples = cfg.bench(lambda: run_agent(*box["pair"]), after=renew)
    provider.force_flush()
    row(
        out,
        "W6",
        "real Agent + otel_recorder (OTLP/HTTP, batch)",
        samples,
        per=TOOL_TURNS,
        unit="us/iter",
        otlp_requests=server.requests,
        otlp_bytes=server.bytes,
    )
    provider.shutdown()
    server.shutdown()
    memory, exporter = otel_sink.memory_provider()
    recorder = otel_recorder(memory)
    box["pair"] = build_agent(recorders=(recorder,))

    def renew_memory() -> None:
        exporter.clear()
        box["pair"] = build_agent(recorders=(recorder,))

    samples = cfg.bench(lambda: run_agent(*box["pair"]), after=renew_memory)
    row(out, "W6", "real Agent + otel_recorder (in-memory exporter)", samples, per=TOOL_TURNS, unit="us/iter")


def main(quick: bool = False) -> list[Record]:
    """Emit the W6 rows."""
    cfg = settings(quick)
    out: list[Record] = []
    agent_row(cfg, out)
    agent_row(cfg, out, with_narrative=False)
    otel_rows(cfg, out)
    chart = build_chart()
    samples = cfg.bench(lambda: run_chart(chart))
    row(out, "W6", "flowchart chart (SPEC shape)", samples, per=TOOL_TURNS, unit="us/iter")
    samples = cfg.bench(lambda: run_chart(chart, with_narrative=True))
    row(out, "W6", "flowchart chart + narrative recorder", samples, per=TOOL_TURNS, unit="us/iter")
    return out


if __name__ == "__main__":
    main()
