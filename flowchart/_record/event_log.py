"""``EventLog``: footprintjs's commit store (``footprintjs/advanced``), a log a caller fills.

Law: an ``EventLog`` holds the state a run started from (a deep copy, ``{}`` by default) and
the commits recorded into it, in order; ``record`` numbers each commit by its place
(``idx`` = how many came before, whatever ``idx`` it carried) and ``clear`` forgets the
commits, never the starting state. ``materialise(step)`` folds the first ``step`` commits
(EXCLUSIVE, as footprintjs's: ``materialise(3)`` folds commits 0, 1 and 2; ``replay``'s
``upto`` is inclusive) onto a fresh copy of the starting state; the caller owns what it gets.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from flowchart._core.commits import Commit, replay


class EventLog:
    """Commits recorded one by one over a starting state (footprintjs's ``EventLog``)."""

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        if initial is not None and not isinstance(initial, Mapping):
            raise TypeError(f"EventLog(initial): expected a dict of state, got {type(initial).__name__}")
        self._base: dict[str, Any] = copy.deepcopy(dict(initial or {}))
        self._steps: list[Commit] = []

    def record(self, commit: Commit) -> Commit:
        """Append ``commit`` numbered by its place in the log (``idx``); return the recorded commit."""
        if not isinstance(commit, Commit):
            raise TypeError(f"EventLog.record(commit): expected a flowchart.Commit, got {type(commit).__name__}")
        recorded = commit if commit.idx == len(self._steps) else attrs.evolve(commit, idx=len(self._steps))
        self._steps.append(recorded)
        return recorded

    def list(self) -> list[Commit]:
        """The recorded commits, oldest first (a new list)."""
        return list(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    def __iter__(self) -> Iterator[Commit]:
        return iter(list(self._steps))

    def clear(self) -> None:
        """Forget every recorded commit (the starting state stays)."""
        self._steps = []

    def initial_state(self) -> dict[str, Any]:
        """The state before the first commit (a fresh copy)."""
        return copy.deepcopy(self._base)

    def materialise(self, step: int | None = None) -> dict[str, Any]:
        """The state after the first ``step`` commits (exclusive; ``None``: all of them)."""
        count = len(self._steps) if step is None else step
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= len(self._steps):
            raise IndexError(f"EventLog.materialise({step!r}): expected 0..{len(self._steps)} (the commits to fold)")
        return replay(self._steps, count - 1, self._base)
