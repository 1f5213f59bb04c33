"""Reuse-forks: a fork that takes from the record every stage whose inputs did not change.

Laws:
- ``chart.fork(source, at=k, patch=..., reuse=True)`` runs as any fork, except that before a
  top-level stage body runs, the parent's commit of the SAME execution (same runtime id, same
  stage) is looked up; when every key that commit recorded reading holds, in the fork's state
  now, exactly the value (``same_json``) it held in the parent's state before that commit, the
  stage is not run: its recorded commit is applied instead (its ops, reads and decision — a
  decider's recorded choice is followed), and the fork's record names it
  (``Reuse(runtime_stage_id, from_run, from_commit)``; the narrative says "reused from commit N
  of run R"). Every other stage runs for real.
- A deterministic stage given the same reads writes the same values, so a reuse-fork commits
  byte-identically (state, commits, decisions) to a fork that re-ran everything against the
  same recorded world. What a stage sees beyond its reads — the run id, the clock, a live
  model or tool — is its own: charts whose stages depend on those reuse what the record says.
- A write that changes nothing leaves no op, so a record cannot tell that a stage made it: a
  stage that, in the parent, wrote a key with the value the key already held is reused as the
  commit says (without that write). Where the patch (or a re-run stage) changed that key, a
  full re-run would have written it back and the reuse-fork keeps the changed value — the one
  case in which the two part. Charts whose stages only write values that change their keys
  (every write leaves an op) are reused byte-identically.
- Never reused (they run): the parent's last commit (a run's output or a ``ctx.stop`` is not in
  a commit), a commit the parent's rule redacted (its values are placeholders), a retried or
  recovering execution, pausable stages, subflow mounts and maps, anything inside a subflow or
  a parallel child's namespace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flowchart._core.commits import Commit, Op, apply_op
from flowchart._core.decide import Decision, Selection
from flowchart._core.values import same_json

REUSABLE_KINDS = frozenset(("stage", "decider", "selector"))
_ABSENT = object()


class ReusePlan:
    """The parent's commits after the fork point, by runtime id, with the state before each."""

    def __init__(self, parent_run_id: str, log: Sequence[Commit], at: int, initial: dict[str, Any]) -> None:
        self.parent_run_id = parent_run_id
        self.reused: dict[str, int] = {}
        self._commits: dict[str, Commit] = {}
        self._before: dict[str, dict[str, Any]] = {}
        last = log[-1].idx if log else -1
        state = dict(initial)
        for commit in log:
            if (
                commit.idx > at
                and commit.idx != last
                and not commit.redacted_paths
                and not commit.attempts
                and commit.recovers is None
                and "/" not in commit.stage_id
            ):
                self._commits[commit.runtime_stage_id] = commit
                self._before[commit.runtime_stage_id] = dict(state)  # copy-on-write: a shallow copy
            for op in commit.trace:
                apply_op(state, op)

    def take(self, stage_id: str, kind: str, rid: str, state: dict[str, Any]) -> Commit | None:
        """The parent's commit to reuse for this execution, or ``None`` (it runs)."""
        commit = self._commits.get(rid)
        if commit is None or commit.stage_id != stage_id or kind not in REUSABLE_KINDS:
            return None
        if (kind == "stage") != (commit.decision is None):
            return None
        before = self._before[rid]
        for key in commit.reads:
            now, then = state.get(key, _ABSENT), before.get(key, _ABSENT)
            if (now is _ABSENT) != (then is _ABSENT) or (now is not _ABSENT and not same_json(now, then)):
                return None
        self.reused[rid] = commit.idx
        return commit

    def told(self, rid: str) -> str | None:
        """What the narrative says of a reused execution (``None``: it ran)."""
        idx = self.reused.get(rid)
        return None if idx is None else f"reused from commit {idx} of run {self.parent_run_id}"


def recorded_output(commit: Commit) -> Any:
    """What the stage returned, as far as the engine needs it: a decider's or selector's choice
    (rebuilt from its recorded decision so the traversal follows it), else ``None``."""
    decision = commit.decision
    if decision is None:
        return None
    if "selected" in decision:
        selected = list(decision["selected"])
        return Selection(tuple(selected), decision["evidence"]) if "evidence" in decision else selected
    if "evidence" in decision:
        return Decision(decision["chosen"], decision["evidence"])
    return decision["chosen"]


class ReusedTransaction:
    """Stands in for a stage's transaction: committing it applies the recorded ops."""

    namespace: tuple[str, ...] = ()
    oplog: None = None

    def __init__(self, state: dict[str, Any], commit: Commit) -> None:
        self.state = state
        self.reads = commit.reads
        self._ops = commit.trace

    def commit(self) -> list[Op]:
        """Apply the recorded ops to the state; they are this execution's ops."""
        for op in self._ops:
            apply_op(self.state, op)
        return list(self._ops)


__all__ = ["REUSABLE_KINDS", "ReusePlan", "ReusedTransaction", "recorded_output"]
