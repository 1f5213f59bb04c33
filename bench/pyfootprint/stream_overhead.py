"""Streaming overhead: the W6 agent run streamed versus the same run without streaming.

usage: ``.venv/bin/python -m bench.pyfootprint.stream_overhead``

One process, side by side (``bench.harness.side_by_side``): each round times ``agent.run(...)``
and ``for event in agent.stream(...)`` (every event consumed, ``to_dict()`` not called) on
freshly built W6 agents (``bench.pyfootprint.w6_agent``: the ``add`` tool, a
scripted provider, 10 tool rounds), alternating which goes first, so both see the same
machine. The cycle collector stays on (what a stream keeps alive costs collections in an
application too), and the heap is collected before each sample (outside the timing), so each
sample pays for the collections its own allocations trigger: without that, a collection one
variant's allocations made due landed in whichever variant ran next, and the medians moved
with the rotation rather than with the code (``docs/performance.md``, "Round five: the stream
counts its narrative"). Rows: the plain run, the stream of every kind, the ``messages`` mode
alone, what a chat UI streams (``messages`` and ``tools``), and a JSON line with the ratios
(median stream ÷ median run; the issue's bar is ≤ 1.3).
Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` like the workloads.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench.harness import Record, ratios, side_by_side
from bench.pyfootprint.common import row, settings
from bench.pyfootprint.w6_agent import ANSWER, TOOL_TURNS, build_agent, run_agent

MESSAGE = "add numbers ten times"


def stream_agent(agent: Any, provider: Any, modes: Any = None) -> int:
    """Consume one streamed W6 run, checked like ``run_agent``; returns the event count."""
    count = 0
    last = None
    for event in agent.stream(MESSAGE, modes=modes):
        count += 1
        last = event
    if last is None or last.kind != "final" or last.result != ANSWER or len(provider.requests) != TOOL_TURNS + 1:
        raise RuntimeError(f"W6 stream wrong result: {last!r}")
    return count


def main(quick: bool = False) -> list[Record]:
    """Emit the rows and the ratio line."""
    cfg = settings(quick)

    def streamed(modes: Any = None) -> Callable[[], Callable[[], object]]:
        def prepare() -> Callable[[], object]:
            agent, provider = build_agent()
            return lambda: stream_agent(agent, provider, modes=modes)

        return prepare

    def plain() -> Callable[[], object]:
        agent, provider = build_agent()
        return lambda: run_agent(agent, provider)

    labels = {
        "run": "real Agent, agent.run",
        "stream": "real Agent, agent.stream (every kind)",
        "stream messages": "real Agent, agent.stream(modes=['messages'])",
        "stream chat": "real Agent, agent.stream(modes=['messages', 'tools'])",
    }
    samples = side_by_side(
        cfg,
        {
            "run": plain,
            "stream": streamed(),
            "stream messages": streamed(["messages"]),
            "stream chat": streamed(["messages", "tools"]),
        },
    )
    out: list[Record] = []
    events = stream_agent(*build_agent())
    for name, label in labels.items():
        extra = {"events": events} if name == "stream" else {}
        row(out, "W6-stream", label, samples[name], per=TOOL_TURNS, unit="us/iter", **extra)
    line = {"peer": "pyfootprint", "workload": "W6-stream", "ratios": ratios(samples, "run"), "bar": 1.3}
    print(json.dumps(line), flush=True)
    return out


if __name__ == "__main__":
    main()
