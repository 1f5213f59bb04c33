"""W6-context and W6-mounted — what context injections and mounting cost on the W6 agent.

usage: ``.venv/bin/python -m bench.pyfootprint.composition``

One process, side by side (``bench.harness.side_by_side``), each sample a fresh W6 agent
(``bench.pyfootprint.w6_agent``: the ``add`` tool, a scripted provider, 10 tool rounds):

- *plain*: ``agent.run(...)``, as W6's headline row;
- *injections*: the same agent with 2 facts, 1 skill and 1 memory recall per model call
  (``InMemoryMemory`` holding 100 items of the run's namespace) — the issue's bar is ≤ 1.3×
  plain;
- *mounted*: the plain agent mounted in a one-stage chart with ``add_agent`` and run through
  the chart (which attaches no narrative recorder) — the issue's bar is ≤ 1.1× the agent run
  alone with ``narrative=False`` (*quiet*), the same recording.

Each run is checked (11 model calls, the answer; the injected run's calls each sent the facts,
the skill and the recalled item). A JSON line with the ratios follows the rows.
Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` like the workloads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench.harness import Record, ratios, side_by_side
from bench.pyfootprint.common import row, settings
from bench.pyfootprint.w6_agent import ADD_SCHEMA, ANSWER, TOOL_TURNS, mock_llm, run_agent

MESSAGE = "add numbers ten times"


def memory() -> Any:
    """100 items in the default namespace, one of them about adding numbers."""
    from agent.memory import InMemoryMemory

    m = InMemoryMemory()
    m.put_many([(("default",), f"note {n} about the weather in city {n}") for n in range(99)])
    m.put(("default",), "The user likes numbers added in order")
    return m


def build(injections: bool, quiet: bool = False) -> tuple[Any, Any]:
    """A W6 agent (and its provider), with the injections or without."""
    from agent import Agent, define_tool
    from agent.providers import scripted

    add = define_tool(
        name="add", description="Add two numbers.", input_schema=ADD_SCHEMA, execute=lambda a, c: a["a"] + a["b"]
    )
    replies: list[Any] = [{"content": m["content"], "tool_calls": m["tool_calls"]} for m in map(mock_llm, range(10))]
    replies.append(ANSWER)
    provider = scripted(replies)
    options: dict[str, Any] = {"memory": memory(), "recall": 1} if injections else {}
    if quiet:
        options["narrative"] = False
    builder = Agent.create(provider=provider, model="mock", **options).tool(add).max_iterations(2 * TOOL_TURNS)
    if injections:
        builder = builder.fact("Numbers are integers.").fact("Add left to right.").skill("sums", "Carry the ones.")
    return builder.build(), provider


def checked_injections(agent: Any, provider: Any) -> None:
    """The injected run: W6's checks, and every call told the facts, the skill and the item."""
    run_agent(agent, provider)
    for request in provider.requests:
        if "[skill sums]" not in request.system_prompt or "likes numbers added" not in request.system_prompt:
            raise RuntimeError("W6-context: a model call was not sent its context")


def mounted() -> Callable[[], object]:
    """A one-stage chart mounting a fresh plain W6 agent; timed: the chart's run, checked."""
    from flowchart import flow_chart

    agent, provider = build(False, quiet=True)
    chart = (
        flow_chart("Start", lambda s, c: None, "start")
        .add_agent("W6", agent, "w6", message=lambda s: MESSAGE, into="answer")
        .build()
    )

    def run() -> None:
        state = chart.run().state
        if state["answer"] != ANSWER or len(provider.requests) != TOOL_TURNS + 1:
            raise RuntimeError("W6-mounted wrong result")

    return run


def main(quick: bool = False) -> list[Record]:
    """Emit the rows and the ratio line."""
    cfg = settings(quick)

    def plain() -> Callable[[], object]:
        agent, provider = build(False)
        return lambda: run_agent(agent, provider)

    def injected() -> Callable[[], object]:
        agent, provider = build(True)
        return lambda: checked_injections(agent, provider)

    def quiet() -> Callable[[], object]:
        agent, provider = build(False, quiet=True)
        return lambda: run_agent(agent, provider)

    samples = side_by_side(cfg, {"plain": plain, "injections": injected, "quiet": quiet, "mounted": mounted})
    out: list[Record] = []
    row(out, "W6-context", "real Agent, plain", samples["plain"])
    row(out, "W6-context", "2 facts, 1 skill, 1 recall per call", samples["injections"])
    row(out, "W6-context", "real Agent, narrative=False", samples["quiet"])
    row(out, "W6-context", "mounted in a chart with add_agent", samples["mounted"])
    found = {"injections": ratios(samples, "plain")["injections"], "mounted": ratios(samples, "quiet")["mounted"]}
    # the fastest samples' ratios too: on a loaded machine the medians swing, the minima less
    fastest = {
        "injections": round(min(samples["injections"]) / min(samples["plain"]), 3),
        "mounted": round(min(samples["mounted"]) / min(samples["quiet"]), 3),
    }
    bars = {"injections": 1.3, "mounted": 1.1}
    line = {"peer": "pyfootprint", "workload": "W6-context", "ratios": found, "min_ratios": fastest, "bars": bars}
    print(json.dumps(line), flush=True)
    return out


if __name__ == "__main__":
    main()
