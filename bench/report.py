"""Turn the JSON lines of one ``make bench`` run into markdown tables.

usage: ``python bench/report.py bench/results/latest.jsonl [more.jsonl ...]``

Lines with the same (workload, peer, variant) are pooled as SPEC.md says: the median of the
pass medians, min and max over all samples, and the spread of the pass medians. The first
table sets pyfootprint beside LangGraph and footprintjs row by row (:data:`COMPARE` names
which variant of each peer answers which question) with the ratio pyfootprint ÷ LangGraph
and pyfootprint ÷ footprintjs (below 1 = pyfootprint is faster); the second lists every
measurement; the third holds the memory and size figures of W4 and W5.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, NamedTuple

Row = dict[str, Any]
PEERS = ("pyfootprint", "langgraph", "footprintjs")
PEER_TITLE = {"pyfootprint": "pyfootprint", "langgraph": "LangGraph", "footprintjs": "footprintjs"}


class Compare(NamedTuple):
    """One line of the side-by-side table: the variant each peer runs for it, and the target."""

    workload: str
    label: str
    unit: str
    variants: dict[str, str]
    target: str = ""


UNTOUCHED = "run, state holds untouched 100-item list"
COMPARE: tuple[Compare, ...] = (
    Compare("W1", "linear, 200 stages", "µs/stage", {p: "run" for p in PEERS}, "≤ 15"),
    Compare(
        "W1",
        "+ narrative recorder",
        "µs/stage",
        {"pyfootprint": "run + narrative recorder", "footprintjs": "run + narrative recorder"},
    ),
    Compare("W1", "untouched 100-item list in state", "µs/stage", {p: UNTOUCHED for p in PEERS}, "≤ 15"),
    Compare("W1", "build chart (200 stages)", "µs/build", {p: "build chart (200 stages)" for p in PEERS}),
    *(
        Compare(
            "W1",
            f"growth: {n:,} stages",
            "µs/stage",
            {"pyfootprint": f"growth: {n:,} stages"},
            "flat",
        )
        for n in (10, 100, 1000, 10_000, 30_000)
    ),
    Compare(
        "W2",
        "decider loop, 1,000 iterations",
        "µs/iter",
        {
            "pyfootprint": "decider loop",
            "langgraph": "conditional-edge loop",
            "footprintjs": "decider loop",
        },
        "≤ 30",
    ),
    Compare(
        "W2",
        "loop without a decider",
        "µs/iter",
        {
            "pyfootprint": "loop_to + ctx.stop() (no decider)",
            "footprintjs": "loopTo + $break (no decider)",
        },
    ),
    Compare(
        "W3",
        "fan-out 8 + join",
        "µs/run",
        {
            "pyfootprint": "selector → 8 branches → join",
            "langgraph": "Send → 8 branches → join (sync invoke)",
            "footprintjs": "selector → 8 branches → join",
        },
        "≤ 250",
    ),
    Compare(
        "W3",
        "fan-out 8 + join, async",
        "µs/run",
        {
            "pyfootprint": "selector → 8 async branches → join (arun)",
            "langgraph": "Send → 8 branches → join (async ainvoke)",
        },
    ),
    Compare(
        "W8",
        "map over 1,000 items + join",
        "µs/item",
        {"pyfootprint": "map over 1000 items (sync run)", "langgraph": "Send over 1000 items (sync invoke)"},
    ),
    Compare(
        "W8",
        "map over 1,000 items + join, async",
        "µs/item",
        {
            "pyfootprint": "map over 1000 async items, concurrency 64 (arun)",
            "langgraph": "Send over 1000 async items (ainvoke)",
        },
    ),
    Compare(
        "W4",
        "loop + in-memory log / checkpoints",
        "µs/iter",
        {
            "pyfootprint": "commit log (always on)",
            "langgraph": "MemorySaver",
            "footprintjs": "commit log (always on)",
        },
        "≤ 30",
    ),
    Compare(
        "W4",
        "loop + SQLite store",
        "µs/iter",
        {"pyfootprint": "SQLite run store (file), one write per run segment", "langgraph": "SqliteSaver (file)"},
        "≤ 100",
    ),
    Compare(
        "W5",
        "pause → JSON → resume",
        "µs/roundtrip",
        {
            "pyfootprint": "JSON checkpoint → resume on a new chart",
            "langgraph": "JSON checkpoint → new graph + saver",
            "footprintjs": "JSON checkpoint → new executor",
        },
        "≤ 150",
    ),
    Compare(
        "W6",
        "agent loop, mock LLM",
        "µs/iter",
        {
            "pyfootprint": "real Agent, scripted provider",
            "langgraph": "agent loop, mock LLM (plain dicts)",
            "footprintjs": "agent loop, mock LLM",
        },
        "≤ 100",
    ),
    Compare(
        "W6",
        "agent loop, Agent(narrative=False)",
        "µs/iter",
        {
            "pyfootprint": "real Agent, scripted provider, narrative=False",
            "langgraph": "agent loop, mock LLM (plain dicts)",
            "footprintjs": "agent loop, mock LLM",
        },
    ),
    Compare(
        "W6",
        "agent-shaped chart (SPEC shape)",
        "µs/iter",
        {
            "pyfootprint": "flowchart chart (SPEC shape)",
            "langgraph": "agent loop, mock LLM (plain dicts)",
            "footprintjs": "agent loop, mock LLM",
        },
    ),
    Compare(
        "W6",
        "agent-shaped chart + narrative",
        "µs/iter",
        {
            "pyfootprint": "flowchart chart + narrative recorder",
            "footprintjs": "agent loop + narrative recorder",
        },
    ),
)


# W7, a big run: pyfootprint's operations in the order of the table, LangGraph's answer to some of them
W7_OPS = ("run", "Trace.save", "json.dump", "Trace.load", "json.load", "replay", "narrate", "why", "store.get", "view")
W7_PEER = {
    "store.get": "get_state_history, SqliteSaver (file)",
    "replay": "get_state, SqliteSaver (file)",
    "run": "run, SqliteSaver (file)",
}
W7_BIG = " (150,000 commits)"


def _cpu(row: Row | None) -> float | None:
    """A W7 row's CPU seconds (its wall seconds when CPU time was not recorded)."""
    if row is None:
        return None
    return float(row.get("cpu_seconds", row["median"] * row["per"] / 1e6))


def w7_target(rows: dict[tuple[str, str, str], Row], op: str) -> str:
    """The issue's target for one W7 operation at 30,000 commits, and whether CPU time meets it."""
    mine = rows.get(("W7", "pyfootprint", op))
    cpu = _cpu(mine)
    if mine is None or cpu is None:
        return ""

    def against(floor: str, limit: float) -> str:
        base = _cpu(rows.get(("W7", "pyfootprint", floor)))
        if not base:
            return ""
        verdict = "met" if cpu / base <= limit else "**missed**"
        return f"≤ {limit}× {floor}: {cpu / base:.2f}×, {verdict}"

    if op == "Trace.save":
        return against("json.dump", 1.5)
    if op == "Trace.load":
        return against("json.load", 1.5)
    if op == "store.get":
        return against("Trace.load", 1.5)
    if op in ("why", "replay"):
        return f"≤ 0.5 s: {'met' if cpu <= 0.5 else '**missed**'}"
    if op == "view":
        times = mine.get("rss_x_trace", 0.0)
        verdict = "met" if cpu <= 3.0 and times <= 5.0 else "**missed**"
        return f"≤ 3 s and ≤ 5× the trace: {cpu:.2f} s, {times:.1f}×, {verdict}"
    return ""


def big_run(rows: dict[tuple[str, str, str], Row]) -> list[str]:
    """W7: CPU seconds, µs per commit and peak RSS per operation at 30,000 and 150,000 commits,
    how µs per commit grew between them (1.00× = linear), the target, and LangGraph beside it."""
    out = [
        "| operation | CPU s | µs/commit | peak RSS | ÷ trace | CPU s (150k) | µs/commit (150k) | peak RSS (150k) "
        "| ÷ trace (150k) | growth, µs/commit 150k ÷ 30k | target at 30,000 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def cells(row: Row | None) -> list[str]:
        cpu = _cpu(row)
        if row is None or cpu is None:
            return ["", "", "", ""]
        rss = f"{row['peak_rss'] / 1e6:,.0f} MB" if "peak_rss" in row else ""
        times = f"{row['rss_x_trace']:.1f}×" if "rss_x_trace" in row else ""
        return [f"{cpu:,.3f}", num(cpu * 1e6 / row["per"]), rss, times]

    for op in W7_OPS:
        small, big = rows.get(("W7", "pyfootprint", op)), rows.get(("W7", "pyfootprint", op + W7_BIG))
        if small is None and big is None:
            continue
        a, b = _cpu(small), _cpu(big)
        growth = f"{(b / big['per']) / (a / small['per']):.2f}×" if a and b and small and big else ""
        line = [op, *cells(small), *cells(big), growth, w7_target(rows, op)]
        out.append("| " + " | ".join(line) + " |")
        peer = rows.get(("W7", "langgraph", W7_PEER[op])) if op in W7_PEER else None
        if peer is not None:
            label = f"LangGraph {W7_PEER[op]}, {peer['per']:,} steps"
            out.append(f"| {label} | {' | '.join(cells(peer))} | | | | | | |")
    return out


def load(paths: Iterable[str]) -> tuple[dict[tuple[str, str, str], Row], list[Row]]:
    """Pool measurements by (workload, peer, variant); collect skip notes apart."""
    groups: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    notes: list[Row] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip().startswith("{"):
                    continue
                r = json.loads(line)
                if "skipped" in r:
                    notes.append(r)
                elif "median" in r:
                    groups[(r["workload"], r["peer"], r["variant"])].append(r)
    return {key: pool(rs) for key, rs in groups.items()}, notes


def pool(rs: list[Row]) -> Row:
    """Median of pass medians, extremes over all samples; size figures as medians."""
    meds = [r["median"] for r in rs]
    med = statistics.median(meds)
    sizes = {
        k: statistics.median(r[k] for r in rs if k in r)
        for k in rs[-1]
        if k.endswith("_bytes") or k in ("checkpoints", "commit_entries")
    }
    return {
        **rs[-1],
        **sizes,
        "median": med,
        "min": min(r["min"] for r in rs),
        "max": max(r["max"] for r in rs),
        "n": sum(r["n"] for r in rs),
        "passes": len(rs),
        "spread": (max(meds) - min(meds)) / med if med else 0.0,
    }


def num(x: float) -> str:
    """Three significant-ish digits, thousands separated."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.1f}" if abs(x) >= 10 else f"{x:,.2f}"


def size(b: float) -> str:
    """Bytes as B, KiB or MiB."""
    if abs(b) >= 2**20:
        return f"{b / 2**20:,.1f} MiB"
    return f"{b / 1024:,.1f} KiB" if abs(b) >= 10_000 else f"{b:,.0f} B"


def ratio(a: Row | None, b: Row | None) -> str:
    """``a ÷ b`` as ``0.12×``, or an empty cell."""
    return f"{a['median'] / b['median']:.2f}×" if a and b and b["median"] else ""


def side_by_side(rows: dict[tuple[str, str, str], Row], peers: list[str]) -> list[str]:
    """The headline table: one line per :data:`COMPARE` entry that has any number."""
    head = " | ".join(PEER_TITLE[p] for p in peers)
    ratios = [f"pyfootprint ÷ {PEER_TITLE[p]}" for p in peers if p != "pyfootprint"]
    out = [
        f"| workload | measure | unit | {head} | {' | '.join(ratios)} | target |",
        "|---|---|---|" + "---:|" * (len(peers) + len(ratios)) + "---|",
    ]
    for c in COMPARE:
        cells = {p: rows.get((c.workload, p, v)) for p, v in c.variants.items()}
        if not any(cells.values()):
            continue
        values = [num(r["median"]) if (r := cells.get(p)) else "—" for p in peers]
        rs = [ratio(cells.get("pyfootprint"), cells.get(p)) for p in peers if p != "pyfootprint"]
        out.append(f"| {c.workload} | {c.label} | {c.unit} | {' | '.join(values)} | {' | '.join(rs)} | {c.target} |")
    return out


def all_rows(rows: dict[tuple[str, str, str], Row]) -> list[str]:
    """Every measurement, grouped by workload then peer."""
    out = [
        "| workload | peer | variant | unit | median | min | max | samples | passes (spread) |",
        "|---|---|---|---|---:|---:|---:|---:|---|",
    ]
    order = {p: i for i, p in enumerate(PEERS)}
    for (w, p, v), r in sorted(rows.items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 9))):
        unit = "µs/" + r["unit"].split("/")[1]
        out.append(
            f"| {w} | {p} {r['version']} | {v} | {unit} | {num(r['median'])} | {num(r['min'])} | "
            f"{num(r['max'])} | {r['n']} | {r['passes']} ({r['spread']:.0%}) |"
        )
    return out


def memory(rows: dict[tuple[str, str, str], Row]) -> list[str]:
    """W4 persisted size, entries, heap and RSS; W5 checkpoint bytes."""
    out = [
        "| workload | peer | variant | persisted size | entries | heap held | RSS before | peak RSS |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for (w, p, v), r in sorted(rows.items()):
        if w == "W4" and "heap_held_bytes" in r:
            persisted = r.get("commit_log_bytes", r.get("checkpoint_bytes", 0))
            count = r.get("commit_entries", r.get("checkpoints", 0))
            file = f" (file {size(r['sqlite_file_bytes'])})" if "sqlite_file_bytes" in r else ""
            out.append(
                f"| W4 | {p} | {v} | {size(persisted)}{file} | {count:,.0f} | "
                f"{size(r['heap_held_bytes'])} | {size(r['rss_before_run_bytes'])} | "
                f"{size(r['peak_rss_bytes'])} |"
            )
        elif w == "W5" and "checkpoint_bytes" in r:
            out.append(f"| W5 | {p} | {v} | {size(r['checkpoint_bytes'])} | 1 | | | |")
    return out


def render(paths: list[str]) -> str:
    """The whole report as markdown."""
    rows, notes = load(paths)
    present = {p for (_, p, _) in rows}
    peers = [p for p in PEERS if p in present or p == "pyfootprint"]
    parts = [
        "## Side by side (median µs per unit; ratio < 1 means pyfootprint is faster)",
        "",
        *side_by_side(rows, peers),
        "",
        "## Every measurement",
        "",
        *all_rows(rows),
        "",
        "## Memory and size (W4 first run in a fresh process; W5 checkpoint JSON)",
        "",
        *memory(rows),
    ]
    w7 = big_run(rows)
    if len(w7) > 2:
        parts += [
            "",
            "## W7, a big run (CPU time; peak RSS of a fresh process per operation, trace load included)",
            "",
            *w7,
        ]
    if notes:
        parts += ["", "## Skipped", ""]
        parts += [f"- {n['workload']} {n['peer']} — {n['variant']}: {n['skipped']}" for n in notes]
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(sys.argv[1:] or ["bench/results/latest.jsonl"]))
