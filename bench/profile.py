"""Profile one pyfootprint workload with cProfile and print where the time goes.

usage: ``.venv/bin/python -m bench.profile WORKLOAD [runs] [rows]``, WORKLOAD one of
w1, w1-blob, w1-narrative, w1-build, w2, w3, w5, w6, w6-plain, w6-stream, w6-chart.

Runs the workload's timed function ``runs`` times (after one warm-up) under cProfile and
prints the top ``rows`` functions by own time, each with its share of the profiled total.
cProfile inflates the cost of small calls, so read the shares, not the absolute times.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
from collections import defaultdict
from collections.abc import Callable


def target(name: str, runs: int) -> Callable[[], object]:
    """The timed function of a workload, with its chart built outside."""
    from bench.pyfootprint import w1_linear, w2_loop, w3_fanout, w5_pause_resume, w6_agent

    if name in ("w1", "w1-blob", "w1-narrative"):
        first = w1_linear.first_with_blob if name == "w1-blob" else w1_linear.stage
        chart = w1_linear.build(first=first)
        with_narrative = name == "w1-narrative"
        return lambda: w1_linear.run_once(chart, with_narrative=with_narrative)
    if name == "w1-build":
        return w1_linear.build
    if name == "w2":
        chart = w2_loop.build()
        return lambda: w2_loop.run_loop(chart)
    if name == "w3":
        chart = w3_fanout.build()
        return lambda: w3_fanout.check(chart.run())
    if name == "w5":
        a, b = w5_pause_resume.build(), w5_pause_resume.build()
        return lambda: w5_pause_resume.round_trip(a, b)
    if name == "w6-chart":
        chart = w6_agent.build_chart()
        return lambda: w6_agent.run_chart(chart)
    if name in ("w6", "w6-plain", "w6-stream"):  # a scripted provider lasts one run: build them all up front
        pairs = [w6_agent.build_agent(with_narrative=name != "w6-plain") for _ in range(runs + 1)]
        if name == "w6-stream":  # every kind of event, consumed

            def consume() -> None:
                agent, _provider = pairs.pop()
                for _event in agent.stream("add numbers ten times"):
                    pass

            return consume
        return lambda: w6_agent.run_agent(*pairs.pop())
    raise SystemExit(f"unknown workload {name!r}")


def main(argv: list[str]) -> None:
    """Profile and print the table."""
    name = argv[0] if argv else "w1"
    runs = int(argv[1]) if len(argv) > 1 else 20
    rows = int(argv[2]) if len(argv) > 2 else 25
    fn = target(name, runs)
    fn()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(runs):
        fn()
    prof.disable()
    stats = pstats.Stats(prof)
    raw = stats.stats  # type: ignore[attr-defined]
    total = sum(tt for (_, _, tt, _, _) in raw.values())
    print(f"{name}: {runs} runs, {total * 1e3:.1f} ms profiled; own time by function")
    print(f"{'own %':>6} {'cum %':>6} {'calls':>9}  function")
    top = sorted(raw.items(), key=lambda kv: kv[1][2], reverse=True)[:rows]
    for (file, line, func), (_, ncalls, tt, ct, _) in top:
        where = f"{file.split('/work/main/')[-1]}:{line}"
        print(f"{100 * tt / total:6.1f} {100 * ct / total:6.1f} {ncalls:9d}  {func}  ({where})")
    by_file: dict[str, float] = defaultdict(float)
    for (file, _, _), (_, _, tt, _, _) in raw.items():
        by_file[file.split("/work/main/")[-1] if "/work/main/" in file else "(stdlib/builtins)"] += tt
    print("\nown time by file")
    for file, tt in sorted(by_file.items(), key=lambda kv: kv[1], reverse=True)[:rows]:
        print(f"{100 * tt / total:6.1f}  {file}")


if __name__ == "__main__":
    main(sys.argv[1:])
