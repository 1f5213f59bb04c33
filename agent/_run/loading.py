"""Loading an agent named by import path: ``"MODULE:ATTR"`` → a built ``Agent``.

Law of this file: there is one way to load an agent by name, used by the ``agent``
command (``--agent``) and by Celery workers (``agent.celery.make_app``). The target is a
built ``Agent`` or a zero-argument function returning one; installed modules (and
``$PYTHONPATH``) are importable, and a directory only when named (``app_dir``, the
command's ``--app-dir .``): a file left in the working directory is never imported
unasked (a Celery worker runs with its own ``sys.path``: ``celery -A`` adds its working
directory). Anything else is an ``AgentLoadError`` naming what went wrong (malformed
target, missing module or attribute, a factory that raised, an object that is not an
agent) — nothing is pickled or evaluated.
"""

from __future__ import annotations

from typing import Any

from agent._run.agent import Agent
from agent.errors import AgentLoadError
from flowchart import FlowChart
from flowchart._cli_support import CliError, import_target, load_target
from flowchart.store import RunStore

USAGE = "expected MODULE:ATTR for --agent (e.g. myapp.agents:support)"


def load_agent(target: str, app_dir: str | None = None) -> Agent:
    """The ``Agent`` that ``MODULE:ATTR`` names (a built agent or a zero-argument factory);
    ``app_dir`` is searched first when given."""
    try:
        agent: Agent = load_target(target, Agent, USAGE, app_dir)
    except CliError as exc:
        raise AgentLoadError(str(exc)) from None
    return agent


def load_agent_or_chart(target: str) -> Agent | FlowChart:
    """What a Celery app advances: the ``Agent`` or plain ``FlowChart`` ``MODULE:ATTR`` names."""
    try:
        found: Any = import_target(target, USAGE)
        if isinstance(found, FlowChart):
            return found
        agent: Agent = load_target(target, Agent, USAGE)
    except CliError as exc:
        raise AgentLoadError(str(exc)) from None
    return agent


def load_store(target: str) -> RunStore:
    """The ``RunStore`` that ``MODULE:ATTR`` names (a store or a zero-argument factory)."""
    try:
        store: RunStore = load_target(target, RunStore, "expected MODULE:ATTR for store= (e.g. myapp.db:store)")
    except CliError as exc:
        raise AgentLoadError(str(exc)) from None
    return store
