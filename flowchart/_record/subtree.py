"""``get_subtree_snapshot`` / ``list_subflow_paths``: one subflow of a finished run, by path.

Law (footprintjs's ``getSubtreeSnapshot``): a run's subflows are found by their slash-separated
path of mount ids (``"payment"``, ``"payment/validation"``) or by a mount's runtime id (one
visit of a looped mount, ``"payment#3"``), as ``RunResult.subflow_results`` is keyed. The
snapshot is that subflow's own state, commit log and starting state, and — given the run's
narrative entries — the entries of the subflow's own stages plus its entry and exit lines
(not those of a subflow nested deeper: ask for its path). A path no subflow ran at is
``None``, not an error; ``list_subflow_paths`` names every path there is (no runtime ids).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs


@attrs.frozen
class SubtreeSnapshot:
    """What one subflow of a run left (footprintjs ``SubtreeSnapshot``)."""

    subflow_id: str
    path: str
    state: Mapping[str, Any]
    commit_log: tuple[Any, ...]
    initial_state: Mapping[str, Any]
    narrative_entries: tuple[Any, ...] | None = None


def _results(run: Any) -> Mapping[str, Any]:
    results = getattr(run, "subflow_results", None)
    if not isinstance(results, Mapping):
        raise TypeError(
            f"get_subtree_snapshot(run, path): expected a run result (chart.run(...)), got {type(run).__name__}"
        )
    return results


def get_subtree_snapshot(run: Any, path: str, narrative_entries: Iterable[Any] | None = None) -> SubtreeSnapshot | None:
    """The subflow of ``run`` at ``path`` (``"outer/inner"``, or a mount's runtime id), with
    its narrative entries when ``narrative_entries`` (``narrative().records()``) are given;
    ``None`` when no subflow ran there."""
    results = _results(run)
    if not isinstance(path, str):
        return None
    key = "/".join(part for part in path.split("/") if part)
    found = results.get(key) if key else None
    if found is None:
        return None
    where = found.mount_id  # the mount's path (a runtime id names one visit of it)
    entries = None
    if narrative_entries is not None:
        entries = tuple(
            e
            for e in narrative_entries
            if getattr(e, "subflow_id", None) == where
            or (getattr(e, "type", None) == "subflow" and getattr(e, "stage_id", None) == where)
        )
    return SubtreeSnapshot(
        subflow_id=where.rsplit("/", 1)[-1],
        path=where,
        state=found.state,
        commit_log=tuple(found.commit_log),
        initial_state=found.initial,
        narrative_entries=entries,
    )


def list_subflow_paths(run: Any) -> list[str]:
    """Every subflow path of ``run`` (``"outer"``, ``"outer/inner"``), runtime ids left out."""
    results = _results(run)
    paths = getattr(results, "paths", None)  # ``SubflowResults``: one entry per execution, paths aside
    return list(paths()) if callable(paths) else [key for key in results if "#" not in key]
