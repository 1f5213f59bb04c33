"""W7 — a big run: 30,000 commits (150,000 with ``--big``) and what it costs to keep and read it.

The chart is a 3-stage loop (Produce → Work → Check, ``loop_to`` Produce) that runs until
``N / 3`` passes are done. Every commit writes a 1 KB string; Produce also appends to a
list that grows for the whole run. Rows, each in µs per commit and with the peak RSS of a
fresh process doing only that (``python -m bench.pyfootprint.w7_big_run --op NAME FILE``):

- ``run``: the chart run itself, with the narrative recorder;
- ``Trace.save`` / ``Trace.load`` of the run's trace file (with orjson when the ``[fast]`` extra
  is installed; ``... (json only)``: the standard library alone), and beside them a plain
  ``json.dump`` / ``json.load`` of the same commits as dicts (the floor);
- ``replay`` of the last commit, ``narrate`` (the narrative lines of the trace),
  ``why`` (the causal chain of ``blob`` at the last commit), ``store.get`` (the run read
  back from a SQLite run store) and ``flowchart view`` (the viewer page written to disk).

The operations after ``run`` start from the trace file (or the store) on disk, as the
``flowchart`` command does; their time excludes loading it, their peak RSS includes it
(the process had to hold it). ``rss_x_trace`` is the peak RSS over the trace file's size.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import Record, peak_rss_bytes, rss_bytes
from bench.pyfootprint.common import row

N = 30_000
BIG = 150_000
STAGES = 3
PAD = "x" * 1000


def produce(scope: Any) -> None:
    """Append the pass number to the growing list; write this commit's 1 KB string."""
    n = getattr(scope, "passes", 0) + 1
    scope.passes = n
    if n == 1:
        scope.items = [n]
    else:
        scope.items.append(n)
    scope.blob = f"{n:08d}{PAD}"


def work(scope: Any) -> None:
    """Read the list's length; write a 1 KB string."""
    scope.note = f"{len(scope.items):08d}{PAD}"


def build(passes: int) -> Any:
    """Produce → Work → Check ⟲ Produce, ``passes`` times."""
    from flowchart import flow_chart

    def check(scope: Any, ctx: Any) -> None:
        """Write a 1 KB string; stop once enough passes are done."""
        scope.last = f"{scope.passes:08d}{PAD}"
        if scope.passes >= passes:
            ctx.stop()

    return (
        flow_chart("Produce", produce, "produce")
        .add_function("Work", work, "work")
        .add_function("Check", check, "check")
        .loop_to("produce")
        .build()
    )


def run(commits: int, *, with_narrative: bool = True, store: Any = None) -> Any:
    """One run with ``commits`` commits (a multiple of 3)."""
    from flowchart import narrative

    passes = commits // STAGES
    chart = build(passes)
    recorders = [narrative()] if with_narrative else []
    options: dict[str, Any] = {"store": store} if store is not None else {}
    result = chart.run(
        recorders=recorders,
        max_iterations=passes + 1,
        **options,
    )
    if len(result.commit_log) != commits or result.state["passes"] != passes:
        raise RuntimeError(f"W7 wrong result: {len(result.commit_log)} commits")
    return result


# -- one operation in a fresh process ------------------------------------------------------------------
def _operation(name: str, path: str) -> dict[str, Any]:
    """Run one operation; its wall seconds, CPU seconds and the RSS before it (``NAME (json only)``:
    with the standard library's json alone, as without the ``[fast]`` extra)."""
    from flowchart import Trace
    from flowchart._core import fastjson

    if name.endswith(JSON_ONLY):
        with fastjson.stdlib_only():
            return _operation(name[: -len(JSON_ONLY)], path)

    before = rss_bytes()
    if name == "json.load":
        start = _clock()
        with open(path, encoding="utf-8") as f:
            json.load(f)
        return _took(start, before)
    if name == "Trace.load":
        start = _clock()
        Trace.load(path)
        return _took(start, before)
    if name == "store.get":
        from flowchart.store import SqliteStore

        store = SqliteStore(path)
        run_id = store.list(limit=1)[0].run_id
        start = _clock()
        store.get(run_id)
        return _took(start, before)
    trace = Trace.load(path)
    start = _clock()
    if name == "json.dump":  # the floor counts the dump only, not building the dicts
        return _timed_dump(trace, path, before)
    if name == "Trace.save":
        trace.save(path + ".again.json")
    elif name == "replay":
        trace.state_at(len(trace.commit_log) - 1)
    elif name == "narrate":
        "\n".join(trace.narrative_lines or [])
    elif name == "why":
        trace.why("blob").format()
    elif name == "view":
        from flowchart.viewer import write_page

        write_page(trace, path + ".html")
    else:
        raise SystemExit(f"unknown operation {name!r}")
    return _took(start, before)


def _timed_dump(trace: Any, path: str, before: int) -> dict[str, Any]:
    data = [c.to_dict() for c in trace.commit_log]
    start = _clock()
    with open(path + ".plain.json", "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    return _took(start, before)


def _clock() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _took(start: tuple[float, float], before: int) -> dict[str, Any]:
    """Wall and CPU seconds since ``start`` (CPU time is the steadier reading on a shared machine)."""
    return {
        "seconds": time.perf_counter() - start[0],
        "cpu_seconds": time.process_time() - start[1],
        "rss_before": before,
    }


def _high_water_mark() -> int:
    """This process's peak RSS since its ``exec`` (``VmHWM``; ``ru_maxrss`` would count the
    parent's memory at the fork, and the parent holds the whole run)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return peak_rss_bytes()


JSON_ONLY = " (json only)"
OPERATIONS = (
    "Trace.save",
    f"Trace.save{JSON_ONLY}",
    "json.dump",
    "Trace.load",
    f"Trace.load{JSON_ONLY}",
    "json.load",
    "replay",
    "narrate",
    "why",
    "store.get",
    f"store.get{JSON_ONLY}",
    "view",
)


def _child(name: str, path: str) -> dict[str, Any]:
    """Run one operation in a fresh interpreter; its seconds and peak RSS."""
    out = subprocess.run(
        [sys.executable, "-m", "bench.pyfootprint.w7_big_run", "--op", name, path],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(commits: int, out: list[Record], tag: str = "") -> None:
    """Every W7 row for a run of ``commits`` commits."""
    from flowchart.store import SqliteStore

    with tempfile.TemporaryDirectory() as tmp:
        start, cpu = time.perf_counter(), time.process_time()
        result = run(commits)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        row(
            out,
            "W7",
            f"run{tag}",
            [seconds],
            per=commits,
            unit="us/commit",
            commits=commits,
            cpu_seconds=round(cpu, 3),
            peak_rss=peak_rss_bytes(),
        )
        path = os.path.join(tmp, "trace.json")
        result.trace().save(path)
        size = os.path.getsize(path)
        db = os.path.join(tmp, "runs.db")
        run(commits, store=SqliteStore(db))
        for name in OPERATIONS:
            got = _child(name, db if name.startswith("store.get") else path)
            row(
                out,
                "W7",
                f"{name}{tag}",
                [got["seconds"]],
                per=commits,
                unit="us/commit",
                commits=commits,
                seconds=round(got["seconds"], 3),
                cpu_seconds=round(got["cpu_seconds"], 3),
                peak_rss=got["peak_rss"],
                rss_before=got["rss_before"],
                trace_bytes=size,
                rss_x_trace=round(got["peak_rss"] / size, 2),
            )


def main(quick: bool = False, big: bool = False) -> list[Record]:
    """Emit the W7 rows (``quick``: 300 commits, to prove it runs)."""
    out: list[Record] = []
    measure(300 if quick else N, out, " (300 commits)" if quick else "")
    if big and not quick:
        measure(BIG, out, f" ({BIG:,} commits)")
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--op"]:
        result = _operation(sys.argv[2], sys.argv[3])
        print(json.dumps({**result, "peak_rss": _high_water_mark()}))
    else:
        main(big="--big" in sys.argv[1:] or os.environ.get("BENCH_W7_BIG") == "1")
