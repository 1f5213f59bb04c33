"""W6 streamed — LangGraph's ``graph.stream`` beside ``graph.invoke`` on the same agent loop.

usage: ``bench/.cache/peers-venv/bin/python -m bench.peers.langgraph.w6_stream``

The peer of ``bench.pyfootprint.stream_overhead``, measured the same way
(``bench.harness.side_by_side``: one process, alternating, the heap collected before each
sample) on the plain-dicts W6 graph (``bench.peers.langgraph.w6_agent``). Rows: ``invoke``;
``stream_mode="values"`` (LangGraph's default: the whole state after every step);
``"updates"`` (each node's update); and every mode this graph can produce (``values``,
``updates``, ``custom``, ``debug``: tasks and their results) — the mock model is a plain
function, so ``messages`` has nothing to stream. Then a JSON line with each stream's ratio to
``invoke``, for the report to print beside pyfootprint's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from bench.harness import Record, Settings, emit, ratios, record, side_by_side
from bench.peers.langgraph.w6_agent import TOOL_TURNS, build_dicts, check

MODES: dict[str, Any] = {
    "stream values": "values",
    "stream updates": "updates",
    "stream every mode": ["values", "updates", "custom", "debug"],
}


def main(quick: bool = False) -> list[Record]:
    """Emit the rows and the ratio line."""
    cfg = Settings.once() if quick else Settings.from_env()
    app = build_dicts()

    def invoke() -> Callable[[], object]:
        return lambda: check(app.invoke({}))

    def streamed(mode: Any) -> Callable[[], Callable[[], object]]:
        def consume() -> int:
            count = 0
            for _event in app.stream({}, stream_mode=mode):
                count += 1
            if not count:
                raise RuntimeError("W6 stream yielded nothing")
            return count

        return lambda: consume

    variants = {"invoke": invoke, **{name: streamed(mode) for name, mode in MODES.items()}}
    samples = side_by_side(cfg, variants)
    out: list[Record] = []
    for name in variants:
        label = "agent loop, mock LLM (plain dicts), " + (f"graph.{name}" if name == "invoke" else name)
        emit(record("langgraph", "langgraph", "W6-stream", label, samples[name], per=TOOL_TURNS, unit="us/iter"), out)
    print(json.dumps({"peer": "langgraph", "workload": "W6-stream", "ratios": ratios(samples, "invoke")}), flush=True)
    return out


if __name__ == "__main__":
    main()
