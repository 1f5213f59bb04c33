"""The ``flowchart`` command: replay, narrate, explain and diff trace files; draw charts.

    flowchart replay TRACE [--at N]        the state after commit N, as JSON
    flowchart narrate TRACE                the run's narrative, one line each
    flowchart why TRACE KEY [--at N] [--in MOUNT]  the causal chain behind KEY's value, across mounts
    flowchart diff TRACE A B               what changed between commits A and B
    flowchart diff TRACE_A TRACE_B [--json]
                                           where run B went differently from run A
    flowchart show MODULE:ATTR [--mermaid] [--app-dir DIR]
                                           a chart's description (or mermaid)
    flowchart view TRACE [-o PAGE] [--open] [--panel MODULE:ATTR]
                                           one self-contained HTML page of the run
    flowchart fork TRACE --chart MODULE:ATTR --at K|M,J [--set KEY=JSON ...] [--reuse] [--out FILE] [--app-dir DIR]
                                           run on from commit K with edited values

Law: a mistake (missing or unreadable file, bad JSON, an invalid trace, an unknown key,
an index out of range, a bad MODULE:ATTR) prints ONE line ``flowchart: error: ...`` on
stderr and exits with status 2 — never a traceback. Success exits 0. Commit indexes
are the log's (``-1`` is the initial state). ``show`` imports the module the user names
(their own code: installed, on ``$PYTHONPATH``, or in the directory ``--app-dir DIR`` names —
the current directory only with ``--app-dir .``); nothing else is ever imported or run
— except by ``fork``, which runs the chart ``--chart`` names from commit K on. A ``--set``
value is untrusted JSON, parsed within ``flowchart._core.untrusted``'s limits.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Sequence
from typing import Any

from flowchart._chart.chart import FlowChart
from flowchart._cli_support import CliError, OneLineParser, add_app_dir_option, load_target, run_cli, warn
from flowchart._core.errors import FlowchartError
from flowchart._record.trace import Trace


def _load(path: str) -> Trace:
    try:
        return Trace.load(path)
    except FileNotFoundError:
        raise CliError(f"no such trace file: {path}") from None
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror or exc}") from None
    except FlowchartError as exc:
        raise CliError(f"{path}: {exc}") from None


def _index(trace: Trace, at: int | None) -> int | None:
    return None if at is None else _index_in(trace.commit_log, at)


def _index_in(log: Any, at: int) -> int:
    if not -1 <= at < len(log):
        raise CliError(f"commit index {at} is out of range: the trace has commits -1..{len(log) - 1}")
    return at


def _show(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def cmd_replay(args: argparse.Namespace) -> str:
    """``replay``: the state after commit ``--at`` (the final state by default) as JSON."""
    trace = _load(args.trace)
    return json.dumps(trace.state_at(_index(trace, args.at)), ensure_ascii=False, indent=2)


def cmd_narrate(args: argparse.Namespace) -> list[str]:
    """``narrate``: the narrative lines recorded with the run (one line each)."""
    trace = _load(args.trace)
    if trace.narrative is None:
        raise CliError(f"{args.trace} has no narrative: run the chart with recorders=[narrative()]")
    return list(trace.narrative_lines or ())


def cmd_why(args: argparse.Namespace) -> str:
    """``why``: the causal chain of ``KEY`` as of commit ``--at``, continued into and out of the
    subflows it meets (a mounted agent among them); ``--in MOUNT`` starts in a subflow's log."""
    trace = _load(args.trace)
    log = trace.commit_log
    if args.within is not None:
        found = [sub for rid, sub in trace.subflows.items() if args.within in (rid, sub.mount_id)]
        if not found:
            known = ", ".join(trace.subflows) or "none"
            raise CliError(f"--in {args.within}: the trace has no subflow execution there (known: {known})")
        log = found[-1].commit_log
    at = None if args.at is None else _index_in(log, args.at)
    crossed = trace.why_across(args.key, at, where=args.within)
    if crossed.first.root is None:
        where = "" if args.at is None else f" at or before commit {args.at}"
        inside = "" if args.within is None else f" in the subflow {args.within}"
        origin = " (it is in the initial state)" if args.within is None and args.key in trace.initial_state else ""
        raise CliError(f"key '{args.key}' was never written{inside}{where}{origin}")
    return crossed.format()


def cmd_diff(args: argparse.Namespace) -> str | list[str]:
    """``diff``: top-level keys added, removed and changed between commits ``A`` and ``B`` of one
    trace; with two traces, the decision diff of the two runs (``diff_runs``)."""
    if args.b is None:
        return _diff_runs(args.trace, args.a, args.json)
    trace = _load(args.trace)
    a, b = _index(trace, _commit_index(args.a, "A")), _index(trace, _commit_index(args.b, "B"))
    assert a is not None and b is not None
    lines = [f"state after commit {a} → state after commit {b}:"]
    for change in trace.diff(a, b):
        if change.change == "added":
            lines.append(f"+ {change.key} = {_show(change.after)}")
        elif change.change == "removed":
            lines.append(f"- {change.key} = {_show(change.before)}")
        else:
            lines.append(f"~ {change.key}: {_show(change.before)} → {_show(change.after)}")
    if len(lines) == 1:
        lines.append("(no changes)")
    return lines


def _commit_index(text: str, name: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CliError(f"{name} {text!r}: expected a commit index (an int; -1: the initial state)") from None


def _diff_runs(first: str, second: str, as_json: bool) -> str | list[str]:
    """``diff TRACE_A TRACE_B``: where run B went differently from run A."""
    from flowchart._record.diff import diff_runs

    try:
        diff = diff_runs(_load(first), _load(second))
    except FlowchartError as exc:
        raise CliError(str(exc)) from None
    return json.dumps(diff.to_dict(), ensure_ascii=False, indent=2) if as_json else diff.lines()


def cmd_view(args: argparse.Namespace) -> str:
    """``view``: write the trace as one self-contained HTML page (``flowchart.viewer``)."""
    from flowchart.viewer import installed_panels, load_panel, write_page

    try:
        panels = [load_panel(target) for target in args.panel or ()]
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not args.panel and not args.no_panels:
        panels = installed_panels(warn=lambda text: warn("flowchart view", text))
    trace = _load(args.trace)
    out = args.output or os.path.splitext(args.trace)[0] + ".html"
    try:
        page = write_page(trace, out, panels)
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None
    if args.open:
        import webbrowser

        webbrowser.open(page.resolve().as_uri())
    return str(page)


def load_chart(target: str, app_dir: str | None = None) -> FlowChart:
    """Import ``MODULE:ATTR`` (ATTR may be dotted) and return the chart it names.

    ATTR is a ``FlowChart`` or a callable taking no arguments that returns one. Installed
    modules are importable; ``app_dir`` (``--app-dir .``) is searched first when given — the
    current directory only then. Raises ``CliError``.
    """
    usage = "expected MODULE:ATTR (e.g. examples.loan:chart)"
    chart: FlowChart = load_target(target, FlowChart, usage, app_dir)
    return chart


def cmd_show(args: argparse.Namespace) -> str:
    """``show``: the chart's description, or its mermaid drawing with ``--mermaid``."""
    chart = load_chart(args.target, args.app_dir)
    return chart.to_mermaid() if args.mermaid else chart.description


def parse_set(text: str) -> tuple[str, Any]:
    """``KEY=JSON`` → ``(KEY, value)``; a ``CliError`` naming the mistake otherwise."""
    from flowchart._core.serde import loads

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise CliError(f"--set {text!r}: expected KEY=JSON (e.g. --set limit=5 or --set 'name=\"ada\"')")
    try:
        return key, loads(raw, what="--set value")
    except FlowchartError as exc:
        raise CliError(f"--set {key}: the value is not JSON: {exc}") from None


def _at(text: str) -> int | tuple[int, ...]:
    """``--at``: ``K``, or ``M,J[,...]`` for a commit inside a subflow's log."""
    try:
        path = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise CliError(f"--at {text}: expected a commit index K or a path M,J (ints)") from None
    return path[0] if len(path) == 1 else path


def cmd_fork(args: argparse.Namespace) -> str:
    """``fork``: a new run of ``--chart`` from commit ``--at`` of TRACE with ``--set`` values."""
    trace = _load(args.trace)
    patch = dict(parse_set(item) for item in args.set or ())
    chart = load_chart(args.chart, args.app_dir)
    try:
        result = chart.fork(trace, at=_at(args.at), patch=patch or None, reuse=args.reuse)
    except FlowchartError as exc:
        raise CliError(str(exc)) from None
    if args.out:
        try:
            result.trace().save(args.out)
        except OSError as exc:
            raise CliError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    for reuse in result.reused:  # stderr: stdout stays the state's JSON
        warn("flowchart fork", reuse.line())
    return json.dumps(result.state, ensure_ascii=False, indent=2)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every command has ``--help``)."""
    parser = OneLineParser(prog="flowchart", description="Replay, narrate and explain flowchart runs.")
    parser.add_version_option()
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Any, text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text)
        sub.set_defaults(handler=handler)
        return sub

    sub = command("replay", cmd_replay, "Print the state after a commit, as JSON.")
    sub.add_argument("trace", metavar="TRACE", help="a trace file (result.trace().save(path))")
    sub.add_argument("--at", type=int, metavar="N", help="commit index (default: the last; -1: initial)")

    sub = command("narrate", cmd_narrate, "Print the run's narrative.")
    sub.add_argument("trace", metavar="TRACE", help="a trace file")

    sub = command("why", cmd_why, "Explain a key's value: the commits and reads that produced it.")
    sub.add_argument("trace", metavar="TRACE", help="a trace file")
    sub.add_argument("key", metavar="KEY", help="a top-level state key")
    sub.add_argument("--at", type=int, metavar="N", help="explain the value as of commit N")
    sub.add_argument(
        "--in",
        dest="within",
        metavar="MOUNT",
        help="explain a key of a subflow's own state (its mount path or runtime id, e.g. planner or planner#1)",
    )

    sub = command(
        "diff",
        cmd_diff,
        "Show what changed between two commits of a trace (TRACE A B), or where run B went differently "
        "from run A (TRACE_A TRACE_B): the first divergent commit, the decisions that moved, the final values.",
    )
    sub.add_argument("trace", metavar="TRACE", help="a trace file (run A with two traces)")
    sub.add_argument("a", metavar="A", help="the earlier commit index (-1: initial state), or run B's trace file")
    sub.add_argument("b", metavar="B", nargs="?", help="the later commit index (absent: diff two runs)")
    sub.add_argument("--json", action="store_true", help="print the run diff as JSON")

    sub = command("show", cmd_show, "Describe a chart defined in your code.")
    sub.add_argument("target", metavar="MODULE:ATTR", help="a FlowChart, or a function returning one")
    sub.add_argument("--mermaid", action="store_true", help="print a mermaid flowchart instead")
    add_app_dir_option(sub)

    sub = command("view", cmd_view, "Write the run as one self-contained HTML page.")
    sub.add_argument("trace", metavar="TRACE", help="a trace file")
    sub.add_argument("-o", "--output", metavar="PAGE", help="the page to write (default: TRACE with .html)")
    sub.add_argument("--open", action="store_true", help="open the page in a web browser")
    sub.add_argument(
        "--panel",
        action="append",
        metavar="MODULE:ATTR",
        help="use this viewer Panel (repeatable) instead of the installed ones, e.g. agent.viewer_panel:PANEL",
    )
    sub.add_argument(
        "--no-panels",
        action="store_true",
        help="leave out the installed viewer panels (entry points flowchart.viewer_panels)",
    )

    sub = command("fork", cmd_fork, "Run the chart on from a commit of TRACE, with edited values.")
    sub.add_argument("trace", metavar="TRACE", help="a trace file")
    sub.add_argument("--chart", required=True, metavar="MODULE:ATTR", help="the chart the trace is a run of")
    sub.add_argument(
        "--at",
        required=True,
        metavar="K",
        help="the commit to fork at (-1: the start); M,J: commit J of the subflow mounted at commit M",
    )
    sub.add_argument("--set", action="append", metavar="KEY=JSON", help="write KEY = JSON first (repeatable)")
    sub.add_argument(
        "--reuse",
        action="store_true",
        help="take from the trace every stage whose recorded reads did not change (instead of running it)",
    )
    sub.add_argument("--out", metavar="FILE", help="save the forked run's trace there")
    add_app_dir_option(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 error)."""
    return run_cli("flowchart", build_parser, argv)


if __name__ == "__main__":
    raise SystemExit(main())
