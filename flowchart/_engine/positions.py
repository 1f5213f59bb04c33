"""Fork positions: where a run stood after commit k, read off its commit log and its chart.

Laws:
- A position is derived from the RECORD alone (the commit log, the subflow logs when
  known, the chart): the log is walked the way the traversal walks the chart — each
  commit must be the stage the walk expects (a log of another chart is refused, naming
  the commit), a decider's recorded choice picks its branch, a selector's its children,
  a ``loop_to`` edge counts against its target. No stage body runs.
- The position after commit k is what runs next: a stage (with the continuation and
  invoker the traversal would hold there), or the children of a fork or selector whose
  parent committed at k. Its counters are the run's at that boundary: the execution
  counter (the runtime id the next stage takes), the visit counts and the loop counts.
- Inside a subflow (``locate_inside``, ``at = (m, j)``) the same walk runs over the
  subflow's own log, under the mount that committed at ``m`` — which must have run on its
  own (a plain stage or a decider branch, not a parallel child); the counters are the
  parent's before the mount, the mount's visit and the subflow's at ``j``, and the next
  runtime id is the next stamp after the boundary, at whatever level it comes.
- A boundary that is not a resume point — between the children of one parallel batch,
  between a paused stage and its resume, after the commit of the stage that failed or
  paused last — is a ``ForkError`` naming the nearest valid commits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from flowchart._core.commits import Commit
from flowchart._core.errors import ForkError
from flowchart._core.nodes import StageNode


@attrs.frozen
class Position:
    """What runs after commit ``at``: ``node`` (with ``cont`` and ``invoker``), or, when
    ``children`` is set, those children of the fork/selector ``node`` and then its ``next``."""

    at: int
    node: StageNode | None
    cont: StageNode | None
    invoker: str | None
    children: tuple[StageNode, ...] | None
    counter: int
    visit_counts: dict[str, int]
    loop_counts: dict[str, int]


def _is_fork(commit: Commit) -> bool:
    """A fork's own commit: ``fork`` at the top, ``<mount>/fork`` for a fork inside a subflow."""
    return (
        commit.stage_id.rpartition("/")[2] == "fork"
        and isinstance(commit.decision, dict)
        and "forked_from" in commit.decision
    )


def _rid_index(rid: str) -> int:
    tail = rid.rpartition("#")[2]
    return int(tail) if tail.isdigit() else -1


class _Walk:
    """One level's walk over its log (recursing into subflow logs for their counts)."""

    def __init__(
        self, chart: Any, log: Sequence[Commit], prefix: str, subflows: Mapping[str, Sequence[Commit]] | None
    ) -> None:
        self.chart = chart
        self.log = log
        self.prefix = prefix
        self.subflows = subflows
        self.visits: dict[str, int] = {}
        self.loops: dict[str, int] = {}
        self.max_rid = -1
        #: the hop held after each commit index (``None``: not a resume point, with why)
        self.after: dict[int, tuple[StageNode | None, StageNode | None, str | None, tuple[StageNode, ...] | None]] = {}
        self.invalid: dict[int, str] = {}
        self.counts: dict[int, tuple[dict[str, int], dict[str, int]]] = {}

    def _take(self, i: int, node: StageNode) -> Commit:
        if i >= len(self.log):
            raise IndexError(i)
        commit = self.log[i]
        full = self.prefix + node.id
        if commit.stage_id != full:
            raise ForkError(
                f"commit {i} of the log is stage '{commit.stage_id}' but the chart runs '{full}' there: "
                "this log was not written by this chart (fork a run with the chart it ran on)",
                stage_id=commit.stage_id,
            )
        self.visits[full] = self.visits.get(full, 0) + 1
        self.max_rid = max(self.max_rid, _rid_index(commit.runtime_stage_id))
        if node.kind == "subflow" and self.subflows is not None:
            self._inner(node, commit)
        return commit

    def _inner(self, node: StageNode, commit: Commit) -> None:
        inner_log = self.subflows.get(commit.runtime_stage_id) if self.subflows is not None else None
        if not inner_log or node.mount is None:
            return
        inner = _Walk(node.mount.chart, inner_log, self.prefix + node.id + "/", self.subflows)
        try:
            inner.run()
        except ForkError:
            return
        for key, value in inner.visits.items():
            self.visits[key] = self.visits.get(key, 0) + value
        for key, value in inner.loops.items():
            self.loops[key] = self.loops.get(key, 0) + value
        self.max_rid = max(self.max_rid, inner.max_rid)

    def _mark(self, i: int, hop: Any) -> None:
        self.after[i] = hop
        self.counts[i] = (dict(self.visits), dict(self.loops))

    def _resumed(self, i: int, ids: set[str]) -> int:
        """Skip the answer/resume commits of a stage that paused; the boundaries before them are not resume points."""
        while i < len(self.log) and self.log[i].stage_id in ids:
            self.invalid[i - 1] = "the run paused there (that stage's resume commits follow)"
            self.max_rid = max(self.max_rid, _rid_index(self.log[i].runtime_stage_id))
            i += 1
        return i

    def _rerun(self, i: int, commit: Commit) -> tuple[int, Commit]:
        """Skip a failed execution's partial commit for the commit of its re-run, which replaces
        it (``recovers``); the boundary between them is not a resume point."""
        while i < len(self.log) and self.log[i].recovers == commit.runtime_stage_id:
            self.invalid[i - 1] = "the stage failed there (its re-run's commit follows)"
            commit = self.log[i]
            self.max_rid = max(self.max_rid, _rid_index(commit.runtime_stage_id))
            i += 1
        return i, commit

    def _map_children(self, i: int, full: str) -> int:
        """Skip a map's child commits (same stage id) up to its own, the last one."""
        while i < len(self.log) and self.log[i].stage_id == full and not _is_fork(self.log[i]):
            self.invalid[i - 1] = "the children of a map commit together"
            self.max_rid = max(self.max_rid, _rid_index(self.log[i].runtime_stage_id))
            i += 1
        return i

    def _follow(self, node: StageNode, cont: StageNode | None) -> tuple[StageNode | None, StageNode | None, None]:
        return (node.next, cont, None) if node.next is not None else (cont, None, None)

    def run(self) -> None:
        """Walk the whole log, recording the hop held after every commit."""
        chart, log, prefix = self.chart, self.log, self.prefix
        node: StageNode | None = chart.root
        cont: StageNode | None = None
        invoker: str | None = None
        self._mark(-1, (node, None, None, None))
        i = 0
        while node is not None and i < len(log):
            if _is_fork(log[i]):  # a stored fork's own first commit: the walk goes on unchanged
                self._mark(i, (node, cont, invoker, None))
                i += 1
                continue
            if node.kind == "loop":
                target = node.loop_to or node.id
                self.loops[prefix + target] = self.loops.get(prefix + target, 0) + 1
                node, cont, invoker = chart.find(target), None, None
                continue
            i, commit = self._rerun(i + 1, self._take(i, node))
            if node.map is not None:  # its children's commits, then its own: one stage
                i = self._map_children(i, prefix + node.id)
            if node.kind == "pausable":
                i = self._resumed(i, {prefix + node.id})
            hop: tuple[Any, Any, Any, Any]
            if node.kind == "decider":
                branch = self._branch(node, commit, i - 1)
                hop = (branch, node.next if node.next is not None else cont, prefix + node.id, None)
                if branch is None:
                    self.invalid[i - 1] = "the decider recorded no branch"
                    break
            elif node.kind == "selector" or node.children:
                children = self._children(node, commit, i - 1)
                self._mark(i - 1, (node, cont, invoker, children))
                while i < len(log) and _is_fork(log[i]):
                    self._mark(i, (node, cont, invoker, children))
                    i += 1
                start = i
                for child in children:
                    if i >= len(log):
                        break
                    i, _ = self._rerun(i + 1, self._take(i, child))
                for j in range(start, i - 1):
                    self.invalid[j] = "the children of one parallel batch commit together"
                if len(children) > 0 and i - start < len(children):
                    self.invalid[i - 1] = "the children of one parallel batch commit together"
                    break
                i = self._resumed(i, {prefix + c.id for c in children if c.kind == "pausable"})
                nxt = self._follow(node, cont)
                hop = (*nxt, None)
                node, cont, invoker = nxt
                self._mark(i - 1, hop)
                continue
            else:
                nxt = self._follow(node, cont)
                hop = (*nxt, None)
            self._mark(i - 1, hop)
            node, cont, invoker = hop[0], hop[1], hop[2]
        if i < len(log):
            extra = log[i]
            raise ForkError(
                f"commit {i} of the log is stage '{extra.stage_id}' but the chart ends before it: this log "
                "was not written by this chart (fork a run with the chart it ran on)",
                stage_id=extra.stage_id,
            )

    def _branch(self, node: StageNode, commit: Commit, i: int) -> StageNode | None:
        decision = commit.decision or {}
        chosen = decision.get("chosen")
        branch = node.branches.get(chosen) if isinstance(chosen, str) else None
        if branch is None and node.default_branch is not None and "chosen" in decision:
            branch = node.branches[node.default_branch]
        return branch

    def _children(self, node: StageNode, commit: Commit, i: int) -> tuple[StageNode, ...]:
        if node.kind != "selector":
            return tuple(node.children)
        selected = (commit.decision or {}).get("selected")
        if not isinstance(selected, list) or not all(isinstance(s, str) and s in node.branches for s in selected):
            raise ForkError(
                f"commit {i} (selector '{commit.stage_id}') records no valid selection ({selected!r}): "
                "its children cannot be told apart; fork at another commit",
                stage_id=commit.stage_id,
            )
        return tuple(node.branches[s] for s in dict.fromkeys(selected))


def locate(
    chart: Any,
    log: Sequence[Commit],
    at: int,
    *,
    ended_early: str | None = None,
    subflows: Mapping[str, Sequence[Commit]] | None = None,
    prefix: str = "",
    label: Callable[[int], str] = str,
) -> Position:
    """The position after commit ``at`` (``-1``: before the first) of a run of ``chart``.

    ``ended_early`` says why the log's last commit is not a resume point (the run paused
    or failed there); ``subflows`` maps a mount's runtime id to its own log, so the counts
    of stages inside subflows carry over (without it they start afresh). ``prefix`` is the
    stage-id prefix of a subflow's log and ``label`` names a commit in messages.
    """
    if isinstance(at, bool) or not isinstance(at, int):
        raise TypeError(f"fork(at=...) must be a commit index (an int), got {type(at).__name__}")
    if not -1 <= at < len(log):
        raise ForkError(
            f"commit {label(at)} is out of range: the log has {len(log)} commits "
            f"(fork at {label(-1)}..{label(len(log) - 1)})"
        )
    walk = _Walk(chart, log, prefix, subflows)
    walk.run()
    if ended_early is not None and log:
        walk.invalid[len(log) - 1] = ended_early
    if at in walk.invalid or at not in walk.after:
        why = walk.invalid.get(at, "the chart does not go on from there")
        valid = sorted(k for k in walk.after if k not in walk.invalid)
        below = [k for k in valid if k < at][-1:]
        above = [k for k in valid if k > at][:1]
        near = " or ".join(label(k) for k in (*below, *above)) or "none"
        raise ForkError(f"commit {label(at)} is not a fork point ({why}); the nearest valid commits are {near}")
    node, cont, invoker, children = walk.after[at]
    visits, loops = walk.counts[at]
    counter = _rid_index(log[at + 1].runtime_stage_id) if at + 1 < len(log) else walk.max_rid + 1
    return Position(at, node, cont, invoker, children, max(counter, 0), visits, loops)


@attrs.frozen
class MountPoint:
    """A fork inside a subflow: the mount ``node`` that committed at ``at[0]`` of its level
    (its runtime id ``rid`` kept, with the ``cont`` and ``invoker`` the traversal held),
    the level's ``state`` before that mount, the subflow's ``args`` (its mapped input) and
    ``inner``, where to go on inside the subflow (a ``Position``, or a ``MountPoint`` for
    a nested subflow) over ``inner_state``. The counters are the run's at that boundary."""

    at: tuple[int, ...]
    node: StageNode
    rid: str
    cont: StageNode | None
    invoker: str | None
    state: dict[str, Any]
    args: dict[str, Any]
    inner: Position | MountPoint
    inner_state: dict[str, Any]
    counter: int
    visit_counts: dict[str, int]
    loop_counts: dict[str, int]


def _address(path: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(k) for k in path) + ")"


def _summed(*counts: Mapping[str, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for count in counts:
        for key, value in count.items():
            out[key] = out.get(key, 0) + value
    return out


def locate_inside(
    chart: Any,
    log: Sequence[Commit],
    at: tuple[int, ...],
    *,
    initial: Mapping[str, Any],
    ended_early: str | None,
    subflows: Mapping[str, Sequence[Commit]] | None,
    initials: Mapping[str, Mapping[str, Any]],
    prefix: str = "",
    above: tuple[int, ...] = (),
) -> MountPoint:
    """The position after commit ``at[-1]`` of the subflow whose mount committed at ``at[0]``
    of ``log`` (and so on down for nested subflows): ``at = (9, 1)`` is commit 1 of the
    log of the subflow mounted at commit 9. ``initials`` maps a mount's runtime id to the
    subflow's initial state (its mapped input)."""
    from flowchart._core.commits import replay

    path = (*above, at[0])
    m = at[0]
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < len(log):
        raise ForkError(f"commit {_address(path)} is out of range: the log has {len(log)} commits")
    walk = _Walk(chart, log, prefix, subflows)
    walk.run()
    commit = log[m]
    hop = walk.after.get(m - 1)
    mount = hop[0] if hop is not None and m - 1 not in walk.invalid and hop[3] is None else None
    if (
        hop is None
        or mount is None
        or mount.kind != "subflow"
        or mount.mount is None
        or prefix + mount.id != commit.stage_id
    ):
        raise ForkError(
            f"commit {_address(path)} ('{commit.stage_id}') is not a subflow mount that ran on its own: "
            "fork inside a subflow mounted as a plain stage or a decider branch (not a parallel child)",
            stage_id=commit.stage_id,
        )
    rid = commit.runtime_stage_id
    inner_log = subflows.get(rid) if subflows is not None else None
    inner_initial = initials.get(rid)
    if inner_log is None or inner_initial is None:
        raise ForkError(
            f"the record has no log of subflow '{rid}' (commit {_address(path)}): fork a RunResult, a Trace "
            "or a stored run that keeps its subflow logs",
            stage_id=commit.stage_id,
        )
    inner_prefix = prefix + mount.id + "/"
    inner_ended = ended_early if m == len(log) - 1 else None
    rest = at[1:]
    inner: Position | MountPoint
    if len(rest) == 1:
        j = rest[0]
        inner = locate(
            mount.mount.chart,
            inner_log,
            j,
            ended_early=inner_ended,
            subflows=subflows,
            prefix=inner_prefix,
            label=lambda k: _address((*path, k)),
        )
        inner_state = replay(inner_log, upto=j, initial=inner_initial)
        nxt = _rid_index(inner_log[j + 1].runtime_stage_id) if j + 1 < len(inner_log) else None
    else:
        inner = locate_inside(
            mount.mount.chart,
            inner_log,
            rest,
            initial=inner_initial,
            ended_early=inner_ended,
            subflows=subflows,
            initials=initials,
            prefix=inner_prefix,
            above=path,
        )
        inner_state = inner.inner_state
        nxt = inner.counter if inner.counter >= 0 else None
    if nxt is None:  # the subflow ended there: the next stamp is this level's next stage
        nxt = _rid_index(log[m + 1].runtime_stage_id) if m + 1 < len(log) else (-1 if above else walk.max_rid + 1)
    visits, loops = walk.counts[m - 1]
    visits = _summed(visits, {prefix + mount.id: 1}, inner.visit_counts)
    loops = _summed(loops, inner.loop_counts)
    state = replay(log, upto=m - 1, initial=initial)
    return MountPoint(
        (*above, *at),
        mount,
        rid,
        hop[1],
        hop[2],
        state,
        dict(inner_initial),
        inner,
        inner_state,
        nxt,
        visits,
        loops,
    )
