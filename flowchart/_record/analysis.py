"""Queries over a commit log: footprintjs's ``findCommit`` family in snake_case.

Law: these read the log and nothing else (no state, no chart), never mutate it, and cost
one pass over the commits they look at. A ``key`` names a state key (``"count"``) or an
op path (``("runs", "a", "x")``); a commit "writes" a key when one of its ops has exactly
that path — footprintjs's ``trace.some(t => t.path === key)``. Indexes are positions in
the log (``commit_log[i]``), as in footprintjs.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from flowchart._core.commits import Commit, apply_op

__all__ = ["commit_value_at", "find_commit", "find_commits", "find_last_writer"]

Key = str | tuple[str, ...]
Match = str | Callable[[Commit], bool]


def _path(key: Key) -> tuple[str, ...]:
    if isinstance(key, str):
        return (key,)
    if isinstance(key, tuple) and key and all(isinstance(part, str) for part in key):
        return key
    raise TypeError(f"a key is a state key (str) or an op path (tuple of str), got {key!r}")


def _writes(commit: Commit, path: tuple[str, ...]) -> bool:
    return any(op.path == path for op in commit.trace)


def _matcher(match: Match, key: Key | None) -> Callable[[Commit], bool]:
    if callable(match):
        if key is not None:
            raise TypeError(
                "find_commit(log, predicate, key=...): pass a stage id with key=, "
                "or fold the key test into the predicate"
            )
        return match
    if not isinstance(match, str):
        raise TypeError(f"find_commit needs a stage id (str) or a predicate(commit) -> bool, got {match!r}")
    if key is None:
        return lambda commit: commit.stage_id == match
    path = _path(key)
    return lambda commit: commit.stage_id == match and _writes(commit, path)


def find_commit(commit_log: Sequence[Commit], stage_id_or_predicate: Match, key: Key | None = None) -> Commit | None:
    """The first commit of stage ``stage_id`` (that wrote ``key``, when given), or ``None``.

    ``stage_id_or_predicate`` may also be a ``predicate(commit) -> bool``.
    footprintjs ``findCommit(commitLog, stageId, key?)``.
    """
    matches = _matcher(stage_id_or_predicate, key)
    return next((commit for commit in commit_log if matches(commit)), None)


def find_commits(commit_log: Sequence[Commit], stage_id_or_predicate: Match, key: Key | None = None) -> list[Commit]:
    """Every commit of stage ``stage_id`` (or matching the predicate), in log order.

    footprintjs ``findCommits(commitLog, stageId)`` (``key`` narrows it, as for ``find_commit``).
    """
    matches = _matcher(stage_id_or_predicate, key)
    return [commit for commit in commit_log if matches(commit)]


def find_last_writer(commit_log: Sequence[Commit], key: Key, before: int | None = None) -> Commit | None:
    """The last commit that wrote ``key`` — before index ``before`` when given — or ``None``.

    footprintjs ``findLastWriter(commitLog, key, beforeIdx)``: the backtracking step.
    """
    path = _path(key)
    end = len(commit_log) if before is None else max(0, min(before, len(commit_log)))
    for index in range(end - 1, -1, -1):
        if _writes(commit_log[index], path):
            return commit_log[index]
    return None


def commit_value_at(commit_log: Sequence[Commit], key: Key, idx: int) -> Any:
    """The full value of ``key`` as of commit index ``idx`` (inclusive), or ``None`` when absent.

    Folds only the ops on ``key`` (``set``/``delete`` anchor, ``merge`` and ``append``
    fold onto it), so it costs the key's history, not the state's. Like footprintjs's
    ``commitValueAt``, it sees the log alone: a key seeded before the run (a subflow's
    mapped input) folds from absent. The result is a copy the caller may mutate.
    """
    path = _path(key)
    if not -len(commit_log) <= idx < len(commit_log):
        raise IndexError(f"commit index {idx} is out of range: the log has {len(commit_log)} commits")
    end = idx % len(commit_log) + 1
    depth = len(path)
    holder: dict[str, Any] = {}
    for commit in commit_log[:end]:
        for op in commit.trace:
            # ops on the key itself, on a value above it, or inside it all change it
            if op.path[:depth] == path or path[: len(op.path)] == op.path:
                apply_op(holder, op)
    value: Any = holder
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return copy.deepcopy(value)
