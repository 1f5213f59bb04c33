"""C50 — a 50-turn conversation on SQLite: µs per turn at turns 1, 10 and 50.

usage: ``.venv/bin/python -m bench.pyfootprint.conversation``

Each sample is one whole conversation on a fresh SQLite store in a temporary directory:
50 turns of ``agent.run(message, conversation="c")``, each turn one tool call and an
answer (two model calls, four messages), every turn timed end to end (loading the
earlier turns, the run, the store writes). Variants: the whole history sent; the last
4 turns (``conversation_window=4``); and the window in a store that already holds 100
other conversations' turns (the store's size must not show). The provider answers
from the messages it is sent (no network), and each turn checks it was sent what the
policy promises. Rows are turns 1, 10 and 50 of each variant, in µs per turn.
Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S`` like the workloads.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from agent import Agent, define_tool
from agent.providers.types import LLMRequest, LLMResponse, ToolCall
from bench.harness import Record
from bench.pyfootprint.common import row, settings
from flowchart.store import SqliteStore

TURNS = 50
MEASURED = (1, 10, 50)
PER_TURN = 4  # messages a turn adds: user, tool-call turn, tool result, answer


class Echo:
    """A provider: asks ``lookup`` once per turn, then answers with its result."""

    name = "echo"

    def __init__(self) -> None:
        self.sent: list[int] = []

    def complete(self, req: LLMRequest) -> LLMResponse:
        """Reply from ``req``'s messages only."""
        last = req.messages[-1]
        if last["role"] == "tool":
            return LLMResponse(content=f"found {last['content']}")
        self.sent.append(len(req.messages))
        return LLMResponse(
            content="", tool_calls=(ToolCall(f"t{len(req.messages)}", "lookup", {"q": last["content"]}),)
        )


LOOKUP = define_tool(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
    execute=lambda args, ctx: f"result for {args['q']}",
)


def build(store: SqliteStore, window: int | None) -> tuple[Agent, Echo]:
    """The benchmark agent on ``store`` with the history policy ``window``."""
    provider = Echo()
    agent = (
        Agent.create(provider=provider, model="echo", store=store, conversation_window=window, narrative=False)
        .tool(LOOKUP)
        .build()
    )
    return agent, provider


def conversation(window: int | None, others: int) -> list[float]:
    """One 50-turn conversation on a fresh store (after ``others`` turns of other conversations):
    the seconds each turn took, checked against what the model was sent."""
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "runs.db")
        agent, provider = build(store, window)
        for n in range(others):
            agent.run(f"other {n}", conversation=f"other-{n % 50}")
        provider.sent.clear()
        times: list[float] = []
        for turn in range(1, TURNS + 1):
            start = time.perf_counter()
            answer = agent.run(f"question {turn}", conversation="c")
            times.append(time.perf_counter() - start)
            loaded = turn - 1 if window is None else min(turn - 1, window)
            if answer != f"found result for question {turn}" or provider.sent[-1] != loaded * PER_TURN + 1:
                raise RuntimeError(f"C50 turn {turn}: wrong answer {answer!r} or history {provider.sent[-1]}")
        store.close()
    return times


def main(quick: bool = False) -> list[Record]:
    """Emit one row per variant and measured turn."""
    cfg = settings(quick)
    variants: list[tuple[str, int | None, int]] = [
        ("whole history", None, 0),
        ("conversation_window=4", 4, 0),
        ("conversation_window=4, 100 other turns stored", 4, 0 if quick else 100),
    ]
    out: list[Record] = []
    for label, window, others in variants:
        samples: list[list[float]] = []
        for _ in range(cfg.warmup and 1):
            conversation(window, others)
        t0 = time.perf_counter()
        while len(samples) < max(cfg.min_reps // 5, 1) or (
            time.perf_counter() - t0 < cfg.budget_s and len(samples) < cfg.max_reps
        ):
            samples.append(conversation(window, others))
            if quick:
                break
        for turn in MEASURED:
            row(out, "C50", f"{label}: turn {turn}", [s[turn - 1] for s in samples], unit="us/turn", turn=turn)
    return out


if __name__ == "__main__":
    main()
