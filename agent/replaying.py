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
miss). A run that paused for a person is replayed through every pause it recorded an answer
to: today's run is kept in a temporary store of its own and each pause is answered with the
recorded person's answer (who, when, the note, edited arguments), in order; the result is the
whole run's record. A record whose input its rule hid is refused: there is nothing to re-run.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import attrs

from agent._chart.paused import Paused
from agent._run.agent import Agent
from agent.errors import AgentError
from agent.providers.replayed import replayed, replayed_tools, shown_record
from flowchart import failed_run

__all__ = ["ReplayInputError", "replayer"]


class ReplayInputError(AgentError, ValueError):
    """The recorded run cannot be re-run: its input is hidden, or it is not a one-message run."""


def _message(shown: Any) -> str:
    message = shown.input.get("input_message")
    if shown.rule.hides("input_message"):
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
        today.store = None  # a replay writes no store of yours
        message = _message(shown)
        rows = [row for row in shown.human_decisions if isinstance(row, dict)]
        if rows:
            return _answered(today, message, rows)
        try:
            today.run(message)
        except Exception as exc:  # a miss (or today's bug) ends the run: its record, as far as it got
            ended = failed_run(exc)
            if ended is None:
                raise
            return ended[0]
        return today.last_snapshot()

    return rerun


def _answered(today: Agent, message: str, rows: list[dict[str, Any]]) -> Any:
    """Run ``today`` in a store of its own (a temporary one), answering each pause with the
    recorded person's answer, in order; the whole run's record (every segment)."""
    from flowchart.store import SqliteStore

    with tempfile.TemporaryDirectory(prefix="replay-") as folder:
        store = SqliteStore(Path(folder) / "replay.db")
        today.store = store
        run_id: str | None = None
        try:
            outcome = today.run(message)
            answers = iter(rows)
            while isinstance(outcome, Paused):
                paused_id = run_id = outcome.run_id
                row = next(answers, None)
                if row is None or paused_id is None:  # today's run asks more than the record answered
                    break
                outcome = today.resume_run(paused_id, _answer(outcome, row))
        except Exception as exc:  # a miss (or today's bug): the run as far as it got
            if run_id is None:  # before any pause: the failed run's own record
                ended = failed_run(exc)
                if ended is None:
                    raise
                return ended[0]
        if run_id is None:
            run_id = today.last_snapshot().record.run_id
        found = store.get(run_id).record
        close = getattr(store, "close", None)
        if callable(close):
            close()
        return found


def _answer(paused: Paused, row: dict[str, Any]) -> Any:
    """Today's answer to ``paused``: the recorded person's (who, when, the note, edited args)."""
    from governance import check_in_approved, check_in_declined

    if row.get("gate") == "ask_human":
        return row.get("answer")
    request = paused.check_in or paused.ask
    by, note, at = str(row.get("by") or "someone"), row.get("note"), row.get("at")
    if row.get("approved") is True:
        return check_in_approved(request=request, by=by, note=note, at=at, args=row.get("after"))
    return check_in_declined(request=request, by=by, note=note, at=at)
