"""Causal backtracking: which commits, through which keys, produced a value.

Law (footprintjs's backward thin slice, ``backtrack.ts`` ``causalChain``, stage level):

- The ROOT is the commit that last wrote top-level ``key`` at or before commit ``at``
  (any ``set``, ``merge`` or ``delete`` whose path starts at ``key``; a ``"a/b"`` key
  that no commit wrote as such is read as the path ``("a", "b")``).
- A node is expanded through the keys its stage READ (``Commit.reads``): for each read
  key, its parent is the LAST commit strictly before the node that wrote that key — a
  stage's own writes are never its parent. A read key with no earlier writer came from
  the initial state (or a run input) and is listed in ``from_initial``.
- Nodes are deduplicated by ``runtime_stage_id`` into a DAG and visited breadth first;
  ``nodes`` is that BFS order, root first. Each node keeps every edge to its parents.
- A read key that nothing wrote and that the run did not start with (``initial``: the
  initial state and the run input, when the caller knows them — ``Trace.why`` passes them)
  was read while ABSENT (footprintjs's ``Read k = undefined``): it is listed in ``absent``,
  not ``from_initial``, so the chain says the stage depended on the key being missing.
- Limits: a node deeper than ``max_depth`` is not expanded and no more than
  ``max_nodes`` nodes are kept; either cut sets ``truncated`` (and says which).
- A key that no commit wrote is not an error: the chain comes back empty with
  ``missing="never-written"`` (``"empty-log"`` for an empty log), as footprintjs's
  ``sliceForKey`` reports it. An ``at`` out of range IS an error (``IndexError``, the
  message ``replay`` uses).

Reads are recorded as top-level keys, so a fork child's read of ``x`` is traced to the
last writer of top-level ``x`` even when the child read its own ``runs/<id>/x``. Subflows
have their own logs: backtrack inside one with its own commit log.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import attrs

from flowchart._core.commits import Commit

Missing = Literal["never-written", "empty-log"]


@attrs.frozen
class CausalEdge:
    """``key`` was read by the child and last written, before it, by ``runtime_stage_id``."""

    key: str
    runtime_stage_id: str


@attrs.frozen
class CausalNode:
    """One commit of the slice: who it is, what it wrote, and whose writes it read.

    ``depth`` is the BFS distance from the root; ``linked_by`` the key through which the
    node was first reached (``None`` for the root); ``parents`` one edge per read key
    that an earlier commit wrote; ``from_initial`` the read keys nothing wrote before.
    """

    idx: int
    stage: str
    stage_id: str
    runtime_stage_id: str
    depth: int
    linked_by: str | None
    wrote: tuple[str, ...]
    reads: tuple[str, ...]
    parents: tuple[CausalEdge, ...] = ()
    from_initial: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``Stage (runtime_stage_id)``, the node as ``format`` prints it."""
        return f"{self.stage} ({self.runtime_stage_id})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form with stable keys (``absent`` only when a read found its key absent)."""
        out: dict[str, Any] = {
            "idx": self.idx,
            "stage": self.stage,
            "stage_id": self.stage_id,
            "runtime_stage_id": self.runtime_stage_id,
            "depth": self.depth,
            "linked_by": self.linked_by,
            "wrote": list(self.wrote),
            "reads": list(self.reads),
            "parents": [{"key": e.key, "runtime_stage_id": e.runtime_stage_id} for e in self.parents],
            "from_initial": list(self.from_initial),
        }
        if self.absent:
            out["absent"] = list(self.absent)
        return out


@attrs.frozen
class CausalChain:
    """The slice for ``key`` as of commit ``at``: ``nodes`` in BFS order, root first."""

    key: str
    at: int
    nodes: tuple[CausalNode, ...]
    truncated_by_depth: bool = False
    truncated_by_nodes: bool = False
    missing: Missing | None = None

    @property
    def truncated(self) -> bool:
        """True when a depth or size limit cut the slice short."""
        return self.truncated_by_depth or self.truncated_by_nodes

    @property
    def root(self) -> CausalNode | None:
        """The commit that last wrote ``key`` (``None`` when it was never written)."""
        return self.nodes[0] if self.nodes else None

    def node(self, runtime_stage_id: str) -> CausalNode:
        """The node for ``runtime_stage_id``; ``KeyError`` naming it when it is not in the slice."""
        for candidate in self.nodes:
            if candidate.runtime_stage_id == runtime_stage_id:
                return candidate
        raise KeyError(f"'{runtime_stage_id}' is not in the causal chain of '{self.key}'")

    def format(self) -> str:
        """The slice as indented text, one ``key ← Stage (rid) [wrote: ...]`` line per edge.

        The first line is the root (``key ← Stage (rid) [wrote: ...]``); below each node
        come its parents, one per read key, indented. A node already printed is shown as
        ``↳ rid (see above)``; a read key nothing wrote as ``key ← initial state``, or as
        ``key ← absent (read as undefined)`` when the run did not start with it either.
        """
        if self.root is None:
            where = "the log is empty" if self.missing == "empty-log" else f"no commit up to #{self.at} wrote it"
            return f"{self.key}: never written ({where}; it is absent or comes from the initial state)"
        by_id = {n.runtime_stage_id: n for n in self.nodes}
        lines: list[str] = []
        printed: set[str] = set()
        # (key, runtime id or None for "from the initial state", indent); a stack = depth first
        stack: list[tuple[str, str | None, int]] = [(self.key, self.root.runtime_stage_id, 0)]
        absent = {k for n in self.nodes for k in n.absent}
        while stack:
            key, rid, indent = stack.pop()
            pad = "  " * indent
            if rid is None:
                source = "absent (read as undefined)" if key in absent else "initial state"
                lines.append(f"{pad}{key} ← {source}")
            elif rid in printed:
                lines.append(f"{pad}{key} ← ↳ {rid} (see above)")
            else:
                printed.add(rid)
                node = by_id[rid]
                wrote = ", ".join(node.wrote) or "nothing"
                lines.append(f"{pad}{key} ← {node.label} [wrote: {wrote}]")
                writers = {e.key: e.runtime_stage_id for e in node.parents if e.runtime_stage_id in by_id}
                unwritten = (*node.from_initial, *node.absent)
                below = [(k, writers.get(k), indent + 1) for k in node.reads if k in writers or k in unwritten]
                stack.extend(reversed(below))
        if self.truncated:
            why = [
                w
                for w, cut in (
                    ("depth limit", self.truncated_by_depth),
                    ("node limit", self.truncated_by_nodes),
                )
                if cut
            ]
            lines.append(f"⚠ slice truncated ({' and '.join(why)})")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: the key, ``at``, flags and every node in BFS order."""
        return {
            "key": self.key,
            "at": self.at,
            "missing": self.missing,
            "truncated": self.truncated,
            "truncated_by_depth": self.truncated_by_depth,
            "truncated_by_nodes": self.truncated_by_nodes,
            "nodes": [n.to_dict() for n in self.nodes],
        }


class _Writers:
    """Last-writer lookup: ``key -> sorted commit indices`` searched by bisection."""

    def __init__(self, log: Sequence[Commit]) -> None:
        index: dict[str, list[int]] = {}
        for position, commit in enumerate(log):
            for op in commit.trace:  # ``commit.written_keys``, without a tuple per commit
                positions = index.get(op.path[0])
                if positions is None:
                    index[op.path[0]] = [position]
                elif positions[-1] != position:
                    positions.append(position)
        self._index = index

    def before(self, key: str, position: int) -> int | None:
        """The position of the last commit strictly before ``position`` that wrote ``key``."""
        positions = self._index.get(key)
        if not positions:
            return None
        found = bisect.bisect_left(positions, position)
        return positions[found - 1] if found else None


def _last_path_writer(log: Sequence[Commit], path: tuple[str, ...], end: int) -> int | None:
    """The last commit at or before ``end`` with an op on, above or below ``path``."""
    for position in range(end, -1, -1):
        if any(_overlaps(op.path, path) for op in log[position].trace):
            return position
    return None


def _overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def causal_chain(
    commit_log: Iterable[Commit],
    key: str,
    at: int | None = None,
    *,
    max_depth: int = 20,
    max_nodes: int = 100,
    initial: Iterable[str] | None = None,
) -> CausalChain:
    """Backtrack ``key``'s value as of commit ``at`` (``None`` = the end of the log).

    See the module docstring for the law. Raises ``IndexError`` when ``at`` is outside
    ``-1 .. len(log) - 1`` and ``ValueError`` for a negative ``max_depth`` or a
    ``max_nodes`` below 1. ``initial`` names the keys the run started with (initial state and
    run input); given, an unwritten read of any other key is reported as ``absent``.
    """
    chains = causal_chains(commit_log, (key,), at, max_depth=max_depth, max_nodes=max_nodes, initial=initial)
    return chains[key]


def causal_chains(
    commit_log: Iterable[Commit],
    keys: Iterable[str],
    at: int | None = None,
    *,
    max_depth: int = 20,
    max_nodes: int = 100,
    initial: Iterable[str] | None = None,
) -> dict[str, CausalChain]:
    """``causal_chain`` of each of ``keys`` (same arguments, same errors), the log indexed once."""
    log = list(commit_log)
    started_with = None if initial is None else frozenset(initial)
    if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0:
        raise ValueError(f"max_depth must be an integer >= 0, got {max_depth!r}")
    if isinstance(max_nodes, bool) or not isinstance(max_nodes, int) or max_nodes < 1:
        raise ValueError(f"max_nodes must be an integer >= 1, got {max_nodes!r}")
    if at is not None and not -1 <= at < len(log):
        raise IndexError(f"commit index {at} is out of range: the log has {len(log)} commits (0..{len(log) - 1})")
    end = len(log) - 1 if at is None else at
    if not log:
        return {key: CausalChain(key, end, (), missing="empty-log") for key in keys}
    writers = _Writers(log)
    return {key: _backtrack(log, writers, key, end, max_depth, max_nodes, started_with) for key in keys}


def _backtrack(
    log: list[Commit],
    writers: _Writers,
    key: str,
    end: int,
    max_depth: int,
    max_nodes: int,
    started_with: frozenset[str] | None,
) -> CausalChain:
    start = writers.before(key, end + 1)
    if start is None and "/" in key:
        start = _last_path_writer(log, tuple(key.split("/")), end)
    if start is None:
        return CausalChain(key, end, (), missing="never-written")

    queue: deque[str] = deque()
    found: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    by_depth = by_nodes = False

    def visit(position: int, depth: int, linked_by: str | None) -> str | None:
        nonlocal by_nodes
        rid = log[position].runtime_stage_id
        if rid in found:
            return rid
        if len(found) >= max_nodes:
            by_nodes = True
            return None
        found[rid] = {
            "position": position,
            "depth": depth,
            "linked_by": linked_by,
            "parents": [],
            "initial": [],
            "absent": [],
        }
        order.append(rid)
        queue.append(rid)
        return rid

    visit(start, 0, None)
    while queue:
        entry = found[queue.popleft()]
        position, depth = entry["position"], entry["depth"]
        for read in log[position].reads:
            parent = writers.before(read, position)
            if parent is None:
                missing = started_with is not None and read not in started_with
                entry["absent" if missing else "initial"].append(read)
                continue
            if depth >= max_depth:
                by_depth = True
                continue
            parent_rid = visit(parent, depth + 1, read)
            if parent_rid is not None:
                entry["parents"].append(CausalEdge(read, parent_rid))

    nodes = []
    for rid in order:
        entry = found[rid]
        commit = log[entry["position"]]
        nodes.append(
            CausalNode(
                idx=commit.idx,
                stage=commit.stage,
                stage_id=commit.stage_id,
                runtime_stage_id=rid,
                depth=entry["depth"],
                linked_by=entry["linked_by"],
                wrote=commit.written_keys,
                reads=commit.reads,
                parents=tuple(entry["parents"]),
                from_initial=tuple(entry["initial"]),
                absent=tuple(entry["absent"]),
            )
        )
    return CausalChain(key, end, tuple(nodes), by_depth, by_nodes)


def format_causal_chain(chain: CausalChain) -> str:
    """The chain for people, as footprintjs's ``formatCausalChain`` draws it: the root first,
    then each node's parents indented under it, one line per commit —
    ``Stage (runtime id) ← via key [wrote: a, b]`` (``via`` names the key through which the
    node was reached; the root has none). A node already drawn is ``↳ runtime id (see
    above)``; a cut slice ends with ``⚠ slice truncated (max_depth reached, max_nodes
    reached) — older causes exist beyond this horizon``. A key never written reads as
    ``CausalChain.format`` says it."""
    root = chain.root
    if root is None:
        return chain.format()
    by_id = {n.runtime_stage_id: n for n in chain.nodes}
    lines: list[str] = []
    drawn: set[str] = set()
    stack: list[tuple[CausalNode, int]] = [(root, 0)]
    while stack:  # depth first, parents in the order the node read them
        node, indent = stack.pop()
        pad = "  " * indent
        if node.runtime_stage_id in drawn:
            lines.append(f"{pad}↳ {node.runtime_stage_id} (see above)")
            continue
        drawn.add(node.runtime_stage_id)
        link = f" ← via {node.linked_by}" if node.linked_by else ""
        wrote = f" [wrote: {', '.join(node.wrote)}]" if node.wrote else ""
        lines.append(f"{pad}{node.label}{link}{wrote}")
        parents = list(dict.fromkeys(e.runtime_stage_id for e in node.parents if e.runtime_stage_id in by_id))
        stack.extend((by_id[rid], indent + 1) for rid in reversed(parents))
    if chain.truncated:
        causes = [
            c
            for c, cut in (
                ("max_depth reached", chain.truncated_by_depth),
                ("max_nodes reached", chain.truncated_by_nodes),
            )
            if cut
        ]
        lines.append(f"⚠ slice truncated ({', '.join(causes)}) — older causes exist beyond this horizon")
    return "\n".join(lines)
