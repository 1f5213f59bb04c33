"""``replayer``: today's agent run against a recorded run's world — the target ``pytest --replay``
(``flowchart.testing``) re-runs each fixture with.

Law: ``replayer(agent)(record)`` runs the agent's CURRENT definition (its prompt, middleware,
route, tools' schemas — whatever the code says today) on the recorded run's input, with the
model replaced by ``replayed(record)`` and each tool by its recorded results
(``replayed_tools``; the tools named in ``live`` run as today's code). No store is written and
no model or side-effecting tool is called. The result is today's run (an ``AgentSnapshot``:
``.record``) to diff against the recorded one; a request the record does not hold ends it with
the ``ReplayMissError`` naming the first difference, and the run as far as it got is the result
(its record carries the failure, so the diff names both the first divergent commit and the
miss). A record whose input its rule hid is refused: there is nothing to re-run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from agent._run.agent import Agent
from agent.errors import AgentError
from agent.providers.replayed import LOG_PLACEHOLDER, replayed, replayed_tools, shown_record
from flowchart import failed_run

__all__ = ["ReplayInputError", "replayer"]


class ReplayInputError(AgentError, ValueError):
    """The recorded run cannot be re-run: its input is hidden, or it is not a one-message run."""


def _message(shown: Any) -> str:
    message = shown.input.get("input_message")
    if message == LOG_PLACEHOLDER:
        raise ReplayInputError(
            f"run {shown.run_id} hides its input (input_message is redacted): a replay needs the message "
            "it was asked — export the run under a rule that keeps input_message"
        )
    if not isinstance(message, str):
        raise ReplayInputError(f"run {shown.run_id} is not an agent run on one message (no input_message)")
    return message


def replayer(agent: Agent | Callable[[], Agent], *, live: Iterable[str] = ()) -> Callable[[Any], Any]:
    """A function re-running ``agent`` (or the agent a zero-argument factory builds) against a
    record's world (see the module law)."""
    live = tuple(live)

    def rerun(record: Any) -> Any:
        shown = shown_record(record)
        made = agent if isinstance(agent, Agent) else agent()
        cfg = made.config
        tools = replayed_tools(shown, list(cfg.tools.values()), live=live)
        served = attrs.evolve(cfg, provider=replayed(shown), tools={tool.name: tool for tool in tools})
        today = made.with_config(served)
        today.store = None  # a replay writes no store
        message = _message(shown)
        try:
            today.run(message)
        except Exception as exc:  # a miss (or today's bug) ends the run: its record, as far as it got
            ended = failed_run(exc)
            if ended is None:
                raise
            return ended[0]
        return today.last_snapshot()

    return rerun
