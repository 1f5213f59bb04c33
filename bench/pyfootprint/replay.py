"""Replay as a test: what a decision diff and a replayed run cost (pyfootprint only).

Rows:

- ``diff of two 30,000-commit runs``: ``diff_runs`` of two W7 runs of one chart on one input:
  every commit of both logs compared, both final states folded (the target is ≤ 1 s). The
  runs are made untimed; the diff reads their records.
- ``W6 replayed`` beside ``W6 scripted``: the W6 agent run on ``replayed(record)`` (every model
  call served from the recorded run) and on the scripted provider; the target is ≤ 1.2×.
- ``reuse-fork`` beside ``full fork``: a 52-commit agent run (16 tool calls) forked after its
  4th tool call with that tool's result rewritten; each row counts the model calls the fork
  made (``model_calls``) and the stages it took from the record (``reused``). The reuse-fork
  calls the model only for stages in the changed key's forward slice. (LangGraph's fork, which
  re-runs every downstream node, is not run beside it here: every later model call is in
  this patch's forward slice anyway.)
- ``50-stage pipeline``: stage 0 writes a tool result ``r0``; stage i calls a counting model on
  ``r[i // 2]`` and writes ``r{i}``. Forked after stage 10 with ``r10`` rewritten: the full fork
  and the reuse-fork, each with its model calls. LangGraph's fork of the same pipeline
  (``bench.peers.langgraph.replay_fork``) re-runs every later node.

Run with ``python -m bench.pyfootprint.replay`` (``make bench`` runs it into
``bench/results/replay.jsonl``).
"""

from __future__ import annotations

from typing import Any

from bench.harness import Record, side_by_side
from bench.pyfootprint import w6_agent, w7_big_run
from bench.pyfootprint.common import row, settings

COMMITS = 30_000


def diff_rows(out: list[Record], quick: bool) -> None:
    """``diff_runs`` of two 30,000-commit runs (300 in a quick run): every commit compared."""
    from flowchart import diff_runs

    commits = 300 if quick else COMMITS
    a = w7_big_run.run(commits, with_narrative=False)
    b = w7_big_run.run(commits, with_narrative=False)
    ra, rb = a.record, b.record
    samples = settings(quick).bench(lambda: diff_runs(ra, rb))
    if not diff_runs(ra, rb).same:
        raise RuntimeError("two runs of W7 on one input should not differ")
    row(out, "REPLAY", f"diff of two {commits}-commit runs", samples, unit="us/diff", target_ms=1000)


def recorded_w6() -> Any:
    """The record of one W6 agent run on the scripted provider (what ``replayed`` serves)."""
    agent, provider = w6_agent.build_agent()
    w6_agent.run_agent(agent, provider)
    return agent.last_snapshot().record


def replaying_agent(record: Any) -> tuple[Any, Any]:
    """The W6 agent on ``replayed(record)``, and that provider (for one run)."""
    from agent import Agent, define_tool
    from agent.providers import replayed

    served = replayed(record)
    add = define_tool(
        name="add",
        description="Add two numbers.",
        input_schema=w6_agent.ADD_SCHEMA,
        execute=lambda args, ctx: args["a"] + args["b"],
    )
    made = Agent.create(provider=served, model="mock").tool(add).max_iterations(2 * w6_agent.TOOL_TURNS).build()
    return made, served


def replayed_rows(out: list[Record], quick: bool) -> None:
    """The W6 agent run on the scripted provider, and on ``replayed`` (the recorded W6 run)."""
    record = recorded_w6()

    def scripted() -> Any:
        made, provider = w6_agent.build_agent()
        return lambda: w6_agent.run_agent(made, provider)

    def replaying() -> Any:
        made, served = replaying_agent(record)

        def run() -> None:
            if made.run("add numbers ten times") != w6_agent.ANSWER or len(served.served) != w6_agent.TOOL_TURNS + 1:
                raise RuntimeError("W6 replayed: wrong result")

        return run

    # side by side, alternating, each sample prepared untimed and the heap collected before it
    samples = side_by_side(settings(quick), {"W6 scripted": scripted, "W6 replayed": replaying})
    base = row(out, "REPLAY", "W6 scripted", samples["W6 scripted"], per=w6_agent.TOOL_TURNS, unit="us/iter")
    rec = row(out, "REPLAY", "W6 replayed", samples["W6 replayed"], per=w6_agent.TOOL_TURNS, unit="us/iter")
    rec["x_scripted"] = round(rec["median"] / base["median"], 3)


class _Adder:
    """A deterministic model: ``add`` until 16 results are in, then the answer."""

    name = "adder"

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, request: Any) -> Any:
        from agent.providers.types import LLMResponse, ToolCall, Usage

        self.calls += 1
        results = [m for m in request.messages if m.get("role") == "tool"]
        if len(results) < 16:
            call = ToolCall(f"c{len(results)}", "add", {"a": len(results), "b": 1})
            return LLMResponse(content="", tool_calls=(call,), usage=Usage(1, 1), finish_reason="tool_use")
        return LLMResponse(content=f"total {sum(len(str(m['content'])) for m in results)}", usage=Usage(1, 1))


def reuse_rows(out: list[Record], quick: bool) -> None:
    """A full fork and a reuse-fork of a 52-commit agent run with one tool result rewritten."""
    import tempfile
    from pathlib import Path

    from agent import Agent, define_tool
    from flowchart import replay
    from flowchart.store import SqliteStore

    add = define_tool(
        name="add",
        description="Add two numbers.",
        input_schema=w6_agent.ADD_SCHEMA,
        execute=lambda args, ctx: args["a"] + args["b"],
    )
    folder = tempfile.mkdtemp()
    store = SqliteStore(Path(folder) / "runs.db")

    def agent() -> tuple[Any, _Adder]:
        model = _Adder()
        return Agent.create(provider=model, model="m", store=store).tool(add).max_iterations(40).build(), model

    first, _ = agent()
    first.run("add sixteen times")
    parent = first.last_snapshot().record
    at = [c.idx for c in parent.commits if c.stage_id == "tool-calls"][3]
    history = [dict(m) for m in replay(list(parent.commits), at, dict(parent.initial_state))["history"]]
    history[-1]["content"] = "999"
    cfg = settings(quick)

    def measure(variant: str, reuse: bool) -> None:
        box: dict[str, Any] = {"pair": agent()}

        def fork() -> None:
            made, _model = box["pair"]
            made.fork(parent.run_id, at, {"history": history}, reuse=reuse)

        def renew() -> None:
            box["calls"] = box["pair"][1].calls
            box["reused"] = len(box["pair"][0].last_snapshot().record.reused)
            box["pair"] = agent()

        samples = cfg.bench(fork, after=renew)
        row(
            out,
            "REPLAY",
            f"{variant} of a 52-commit agent run, one tool result patched",
            samples,
            unit="us/fork",
            model_calls=box["calls"],
            reused=box["reused"],
            parent_model_calls=17,
        )

    measure("full fork", False)
    measure("reuse-fork", True)


PIPELINE = 50
PATCHED = 10


def pipeline_chart(calls: list[int]) -> Any:
    """Stage 0 writes ``r0``; stage i (1..49) calls the counting model on ``r[i // 2]``."""
    from flowchart import flow_chart

    def model(text: str, i: int) -> str:
        calls.append(i)
        return f"m{i}<{text[:12]}>"

    def stage(i: int) -> Any:
        def body(scope: Any) -> None:
            scope[f"r{i}"] = model(scope[f"r{i // 2}"], i)

        return body

    def first(scope: Any) -> None:
        scope.r0 = "root result"

    builder = flow_chart("N0", first, "n0")
    for i in range(1, PIPELINE):
        builder = builder.add_function(f"N{i}", stage(i), f"n{i}")
    return builder.build()


def small_pipeline() -> Any:
    """The pipeline with a model that counts nothing (``flowchart fork --chart`` builds it)."""
    return pipeline_chart([])


def pipeline_rows(out: list[Record], quick: bool) -> None:
    """The 50-stage pipeline forked after stage 10 with its result rewritten: full and reuse."""
    calls: list[int] = []
    chart = pipeline_chart(calls)
    parent = chart.run()
    cfg = settings(quick)
    for variant, reuse in (("full fork", False), ("reuse-fork", True)):
        made: dict[str, Any] = {}

        def fork(reuse: bool = reuse, made: dict[str, Any] = made) -> None:
            calls.clear()
            made["result"] = chart.fork(parent, at=PATCHED, patch={f"r{PATCHED}": "rewritten"}, reuse=reuse)
            made["calls"] = len(calls)

        samples = cfg.bench(fork)
        row(
            out,
            "REPLAY",
            f"{variant} of a {PIPELINE}-stage pipeline after stage {PATCHED}, its result patched",
            samples,
            unit="us/fork",
            model_calls=made["calls"],
            reused=len(made["result"].reused),
            parent_model_calls=PIPELINE - 1,
        )


def main(quick: bool = False) -> list[Record]:
    """Every row once (``quick``) or measured."""
    out: list[Record] = []
    diff_rows(out, quick)
    replayed_rows(out, quick)
    reuse_rows(out, quick)
    pipeline_rows(out, quick)
    return out


if __name__ == "__main__":
    main()
