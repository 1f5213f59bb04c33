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

from bench.harness import Record
from bench.pyfootprint import w7_big_run
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


def main(quick: bool = False) -> list[Record]:
    """Every row once (``quick``) or measured."""
    out: list[Record] = []
    diff_rows(out, quick)
    return out


if __name__ == "__main__":
    main()
