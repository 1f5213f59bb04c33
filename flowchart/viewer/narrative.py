"""Which narrative records belong to which commit: placed by stage id, never by wording.

Law: a record is placed by the runtime stage id that told it — never by parsing its
text, so rewording a sentence (a ``renderer``, a new footprintjs phrasing) moves nothing.
A record belongs to the top-level commit with its runtime stage id; a record told inside
a subflow belongs to the commit of the mount that ran it (through the trace's subflow
logs, nested mounts included). A record whose stage made no commit (a stored run without
its subflow logs) joins the commit of the record before it (the first placed one when it
comes first). Records of a version-1 trace carry no stage: nothing is placed. A step's
decision is its first ``condition`` / ``selector`` record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from flowchart._core.commits import Commit
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._record.record import SubflowTrace

DECISION_TYPES = ("condition", "selector")
HEADLINE_TYPES = ("stage", "subflow", "answer", "pause")


def owners(commits: Sequence[Commit], subflows: Mapping[str, SubflowTrace]) -> dict[str, int]:
    """Runtime stage id → the index of the top-level commit it belongs to."""
    owner = {commit.runtime_stage_id: commit.idx for commit in commits}
    pending = dict(subflows)
    while pending:  # a nested mount's log resolves once its own mount has
        placed = [rid for rid in pending if rid in owner]
        if not placed:
            break
        for rid in placed:
            for inner in pending.pop(rid).commit_log:
                owner.setdefault(inner.runtime_stage_id, owner[rid])
    return owner


def commit_records(
    records: Sequence[NarrativeEntry] | None,
    commits: Sequence[Commit],
    subflows: Mapping[str, SubflowTrace] | None = None,
) -> list[list[int]]:
    """For each commit, the indexes of its narrative records, in run order (see the module law)."""
    out: list[list[int]] = [[] for _ in commits]
    if not records or not commits:
        return out
    owner = owners(commits, subflows or {})
    placed = [owner.get(r.runtime_stage_id) if r.runtime_stage_id is not None else None for r in records]
    if all(p is None for p in placed):
        return out
    last = next(p for p in placed if p is not None)
    for i, at in enumerate(placed):
        last = at if at is not None else last
        out[last].append(i)
    return out


def decision_record(records: Sequence[NarrativeEntry], mine: Sequence[int]) -> int | None:
    """The index of the step's first ``condition`` / ``selector`` record, if any."""
    return next((i for i in mine if records[i].type in DECISION_TYPES), None)


def headline_record(records: Sequence[NarrativeEntry], mine: Sequence[int]) -> int | None:
    """What the timeline shows for a step: its decision, else its first stage / subflow / answer /
    pause record, else its first depth-0 record, else its first."""
    found = decision_record(records, mine)
    for kinds in (HEADLINE_TYPES, None):
        if found is None:
            found = next(
                (i for i in mine if records[i].depth == 0 and records[i].type in (kinds or (records[i].type,))), None
            )
    return found if found is not None else (mine[0] if mine else None)


__all__ = ["commit_records", "decision_record", "headline_record", "owners"]
