"""What every ``agent`` command shares: the run store it opens, the ``MODULE:ATTR`` it imports,
and a stored run's input as a person may see it.

Law: ``--db`` opens a run store and nothing else (``SqliteStore(path, create=...)`` refuses any
other file, naming it); a store is created only with ``--create``; what is printed of a stored
run's input is its shown record's (the rule stored with the run applied, ``flowchart.Record``).
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from agent._chart.state import FINAL_CONTENT
from agent._run.durable import AGENT_RUN_KIND
from flowchart._cli_support import CliError, import_target
from flowchart.store import PostgresStore, RunRecord, RunStore, SqliteStore, StoreError


def load_object(target: str, what: str, app_dir: str | None = None) -> Any:
    """Import ``MODULE:ATTR`` for option ``what`` (``app_dir``, from ``--app-dir``, searched first)."""
    return import_target(target, f"expected MODULE:ATTR for {what} (e.g. myapp.agents:support)", app_dir)


_OPENED: list[RunStore] = []
"""The stores this command opened (``agent.cli.main`` closes them when it ends: run in-process, a
command leaves no connection open behind it)."""


def _opened(store: RunStore) -> RunStore:
    _OPENED.append(store)
    return store


def close_opened() -> None:
    """Close the stores the command opened (never the agent's own)."""
    while _OPENED:
        _OPENED.pop().close()


def open_store(args: argparse.Namespace, agent: Any = None) -> RunStore:
    """The store named by ``--dsn``/``--db`` (or their environment defaults, or the agent's)."""
    dsn = args.dsn or os.environ.get("AGENT_RUNS_DSN")
    db = args.db or os.environ.get("AGENT_RUNS_DB")
    if dsn:
        return _opened(PostgresStore(dsn))
    if db is None and agent is not None and agent.store is not None:
        return agent.store
    path = db or "runs.db"
    create = bool(getattr(args, "create", False))
    if not create and not os.path.exists(path):
        raise CliError(
            f"no run store at {path}: pass --db PATH (SQLite) or --dsn DSN (PostgreSQL), "
            "or --create to make a new, empty store there"
        )
    try:
        return _opened(SqliteStore(path, create=create))
    except StoreError as exc:
        raise CliError(str(exc).replace("create=True (agent command: --create)", "--create")) from None


def shown_input(record: RunRecord) -> dict[str, Any]:
    """The run's input as a reader may see it: under the rule stored with the run."""
    return dict(record.record.shown().input)


def shown_output(record: RunRecord) -> Any:
    """The run's output as a reader may see it (``agent runs show`` / ``approve``, an MCP result
    of a stored run): an agent's answer is its ``final_content``, read from the run's shown
    record — hidden (``"REDACTED"``) when its log hid that key. The store keeps the output raw:
    it is what ``resume_run`` and a queue's caller are answered with."""
    if record.kind != AGENT_RUN_KIND:
        return record.output
    shown = record.record.shown()
    if any(path.split("/", 1)[0] == FINAL_CONTENT for path in shown.redacted_paths):
        return shown.final_state.get(FINAL_CONTENT, record.output)
    return record.output


__all__ = ["close_opened", "load_object", "open_store", "shown_input", "shown_output"]
