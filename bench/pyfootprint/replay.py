"""Replay as a test: what a decision diff and a replayed run cost (pyfootprint only).

Rows:

- ``diff of two 30,000-commit runs``: ``diff_runs`` of two W7 runs of one chart on one input:
  every commit of both logs compared, both final states folded (the target is ≤ 1 s). The
  runs are made untimed; the diff reads their records.
- ``W6 replayed`` beside ``W6 scripted``: the W6 agent run on ``replayed(record)`` (every model
  call served from the recorded run) and on the scripted provider; the target is ≤ 1.2×.

Run with ``python -m bench.pyfootprint.replay`` (``make bench`` runs it into
``bench/results/replay.jsonl``).
"""

from __future__ import annotations

from typing import Any

from bench.harness import Record
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


def replayed_rows(out: list[Record], quick: bool) -> None:
    """The W6 agent run on the scripted provider, and on ``replayed`` (the recorded W6 run)."""
    from agent.providers import replayed

    agent, provider = w6_agent.build_agent()
    w6_agent.run_agent(agent, provider)
    record = agent.last_snapshot().record

    def fresh_replay() -> tuple[Any, Any]:
        from agent import Agent, define_tool

        served = replayed(record)
        add = define_tool(
            name="add",
            description="Add two numbers.",
            input_schema=w6_agent.ADD_SCHEMA,
            execute=lambda args, ctx: args["a"] + args["b"],
        )
        made = Agent.create(provider=served, model="mock").tool(add).max_iterations(2 * w6_agent.TOOL_TURNS).build()
        return made, served

    cfg = settings(quick)
    box = {"scripted": w6_agent.build_agent(), "replayed": fresh_replay()}

    def run_replayed() -> None:
        made, served = box["replayed"]
        if made.run("add numbers ten times") != w6_agent.ANSWER or len(served.served) != w6_agent.TOOL_TURNS + 1:
            raise RuntimeError("W6 replayed: wrong result")

    scripted_samples = cfg.bench(
        lambda: w6_agent.run_agent(*box["scripted"]), after=lambda: box.update(scripted=w6_agent.build_agent())
    )
    replayed_samples = cfg.bench(run_replayed, after=lambda: box.update(replayed=fresh_replay()))
    base = row(out, "REPLAY", "W6 scripted", scripted_samples, per=w6_agent.TOOL_TURNS, unit="us/iter")
    rec = row(out, "REPLAY", "W6 replayed", replayed_samples, per=w6_agent.TOOL_TURNS, unit="us/iter")
    rec["x_scripted"] = round(rec["median"] / base["median"], 3)


def main(quick: bool = False) -> list[Record]:
    """Every row once (``quick``) or measured."""
    out: list[Record] = []
    diff_rows(out, quick)
    replayed_rows(out, quick)
    return out


if __name__ == "__main__":
    main()
