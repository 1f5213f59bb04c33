"""An agent's last run segment as a value: its state, commit log, narrative and record.

Law: a snapshot is frozen; its narrative is worded the first time it is read (a run does
not pay for lines nobody asks for), then kept.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from flowchart import Record, RunResult


def _worded(lines: Any) -> list[str]:
    return list(lines()) if callable(lines) else lines


@attrs.frozen(repr=False)
class AgentSnapshot:
    """The last run of an agent: its ``shared_state``, ``commit_log`` and ``narrative`` lines.

    ``narrative`` may be given as the run's narrative recorder's ``lines`` (a callable): the
    lines are then worded the first time they are asked for, not at the end of every run.
    """

    shared_state: dict[str, Any]
    commit_log: list[Any]
    _narrative: list[str] | Callable[[], list[str]] = attrs.field(alias="narrative", eq=_worded)
    result: RunResult = attrs.field(repr=False)

    @property
    def narrative(self) -> list[str]:
        """The run's narrative lines (worded on first use, then kept)."""
        lines = self._narrative
        if callable(lines):
            lines = list(lines())
            object.__setattr__(self, "_narrative", lines)  # a cache of what the run already decided
        return lines

    @property
    def cost(self) -> dict[str, Any]:
        """What the run's model calls cost: ``{"calls", "usd", "input_tokens", "output_tokens"}``
        (and ``unpriced``, the calls whose cost is unknown), ``usd`` the exact sum of the priced
        calls' costs (``"unknown"`` when none was priced). Zeros with ``pricing=False``."""
        from agent._chart.spend import run_totals

        return run_totals(self.shared_state.get("llm_cost"))

    @property
    def conversation_cost(self) -> dict[str, Any] | None:
        """What the conversation had spent through this run (a conversation turn): the earlier
        turns' spend its seed loaded plus its own — ``{"usd", "tokens", "calls"}`` and ``unpriced``
        (how many calls cost ``unknown``; ``usd`` sums the priced ones). ``None`` outside a
        conversation or without cost accounting."""
        from agent._chart.conversation_turns import spent_through
        from agent._chart.state import CONVERSATION, LLM_COST

        if CONVERSATION not in self.shared_state or LLM_COST not in self.shared_state:
            return None
        return spent_through(self.shared_state)

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Each model call's usage and cost, in order, as its commit recorded it (``llm_cost``)."""
        from agent._chart.spend import calls_of

        return calls_of(self.commit_log)

    @property
    def record(self) -> Record:
        """The last run segment's record (``flowchart._record.record``): ``record.shown()`` for a reader."""
        return self.result.record

    def __repr__(self) -> str:
        return (
            f"AgentSnapshot(shared_state={self.shared_state!r}, commit_log={self.commit_log!r}, "
            f"narrative={self.narrative!r})"
        )
