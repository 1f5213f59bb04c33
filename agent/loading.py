"""Loading an agent named by import path: ``"MODULE:ATTR"`` → a built ``Agent``.

Law of this file: there is one way to load an agent by name, used by the ``agent``
command (``--agent``) and by Celery workers (``agent.celery.make_app``). The target is a
built ``Agent`` or a zero-argument function returning one; the current directory is
importable (as with ``python -m``). Anything else is an ``AgentLoadError`` naming what
went wrong (malformed target, missing module or attribute, a factory that raised, an
object that is not an agent) — nothing is pickled or evaluated.
"""

from __future__ import annotations

from flowchart.cli_support import CliError, load_target

from .agent import Agent
from .errors import AgentLoadError

USAGE = "expected MODULE:ATTR for --agent (e.g. myapp.agents:support)"


def load_agent(target: str) -> Agent:
    """The ``Agent`` that ``MODULE:ATTR`` names (a built agent or a zero-argument factory)."""
    try:
        agent: Agent = load_target(target, Agent, USAGE)
    except CliError as exc:
        raise AgentLoadError(str(exc)) from None
    return agent
