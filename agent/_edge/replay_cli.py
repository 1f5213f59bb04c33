"""``agent diff A B`` and ``agent runs export RUN... -o DIR``: stored runs as regression fixtures.

Laws:
- ``diff`` takes two trace files or run ids in the store and prints ``flowchart.diff_runs``:
  the first divergent commit, the decisions that moved, the final values that differ — each
  side shown under both runs' rules (``--json`` for the value).
- ``export`` writes each run as a SHOWN trace file (``DIR/<run id>.trace.json``: what the run
  hid stays hidden, the store's raw input included), the fixtures ``pytest --replay DIR``
  replays (``flowchart.testing``). A run id that is not a plain file name gets a safe one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path
from typing import Any

from agent._edge.cli_common import open_store
from agent._run.loading import load_agent
from flowchart import FlowchartError, Trace
from flowchart._cli_support import CliError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def fixture_name(run_id: str) -> str:
    """The file a run is exported to: ``<run id>.trace.json`` (unsafe characters as ``_``)."""
    name = _UNSAFE.sub("_", run_id).lstrip(".") or "run"
    return f"{name}.trace.json"


def _source(args: argparse.Namespace, target: str) -> Any:
    if os.path.exists(target):
        try:
            return Trace.load(target)
        except (OSError, FlowchartError) as exc:
            raise CliError(f"{target}: {exc}") from None
    from flowchart.store.export import record_trace

    return record_trace(open_store(args).get(target))


def cmd_diff(args: argparse.Namespace) -> str | list[str]:
    """``diff A B``: where run B went differently from run A."""
    from flowchart import diff_runs

    try:
        diff = diff_runs(_source(args, args.a), _source(args, args.b))
    except FlowchartError as exc:
        raise CliError(str(exc)) from None
    return json.dumps(diff.to_dict(), ensure_ascii=False, indent=2) if args.json else diff.lines()


def cmd_export(args: argparse.Namespace) -> list[str]:
    """``runs export RUN... -o DIR``: each run as a shown trace file under DIR (printed)."""
    from flowchart.store.export import record_trace

    redaction = load_agent(args.agent, args.app_dir).recorded_redaction if args.agent else None
    store = open_store(args)
    out = Path(args.output)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CliError(f"cannot make {out}: {exc.strerror or exc}") from None
    written = []
    for run_id in args.runs:
        trace = record_trace(store.get(run_id), redaction=redaction)
        path = out / fixture_name(run_id)
        try:
            trace.save(path)
        except OSError as exc:
            raise CliError(f"cannot write {path}: {exc.strerror or exc}") from None
        written.append(str(path))
    return written


def add_commands(groups: Any, runs_command: Any, store_options: argparse.ArgumentParser) -> None:
    """``agent diff`` under ``groups``; ``runs export`` through ``runs_command(name, handler, text)``."""
    sub = runs_command("export", cmd_export, "Write runs as shown trace files: fixtures for pytest --replay DIR.")
    sub.add_argument("runs", metavar="RUN", nargs="+", help="the run ids")
    sub.add_argument("-o", "--output", required=True, metavar="DIR", help="the directory to write them into")
    sub.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="the agent whose redaction the files apply (default: the rule stored with each run)",
    )
    text = "Show where run B went differently from run A: the first divergent commit, the decisions that moved."
    diff = groups.add_parser("diff", help=text, description=text, parents=[store_options])
    diff.set_defaults(handler=cmd_diff)
    diff.add_argument("a", metavar="A", help="run A: a trace file, or a run id in the store")
    diff.add_argument("b", metavar="B", help="run B: a trace file, or a run id in the store")
    diff.add_argument("--json", action="store_true", help="print JSON")
