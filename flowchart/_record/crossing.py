"""``why`` across subflow mounts: a causal chain that goes into a mount and back out of it.

A subflow has its own log, so ``causal_chain`` over one log stops at a mount's commit (going
in) and at the subflow's initial state (going out). This module joins the logs.

Laws:
- **Into a mount.** A node of a chain that is a mount's commit (its runtime id names a subflow
  execution of the record) wrote a parent key ``K`` with a value the output mapper took from
  the subflow's final state (replayed from its log and initial state). The chain goes on in the
  subflow's log from the inner key holding that very value (canonical JSON equal); when several
  do, the one written last (the subflow's final word). A value found in no inner key (the
  mapper computed it) ends the crossing there, and the part says so.
- **Out of a mount.** A subflow's run starts from what its input mapper made (its initial
  state and its ``ctx.args``, whose reads are not tracked), and the mapper read the keys the
  mount's commit lists as its reads: a chain asked for inside a subflow goes on in the parent
  log from each of them, as of the commit before the mount — and on out, up to the run's log.
  A subflow entered from its parent's chain does not go back out: the mount's reads were
  followed there already.
- Each (log, key, as-of) is walked once; at most ``max_parts`` parts (a cut says so).
- Nothing here reads a value a record does not hold: a shown record's hidden values are
  compared as the placeholders they are (equal placeholders match; the part says which key).
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from flowchart._core.commits import Commit, replay
from flowchart._record.causal import CausalChain, causal_chain


@attrs.frozen
class ChainPart:
    """One log's causal chain: ``log`` is the subflow execution (its mount's runtime id) whose
    log it walks (``None``: the run's own log); ``via`` how the walk got there (``None`` for the
    chain asked for)."""

    log: str | None
    chain: CausalChain
    via: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {"log": self.log, "via": self.via, "chain": self.chain.to_dict()}


@attrs.frozen
class CrossedChain:
    """The chain of ``key`` and every chain it continues in across mounts (``parts``, the chain
    asked for first, then in the order they were reached)."""

    key: str
    parts: tuple[ChainPart, ...]
    truncated: bool = False

    @property
    def first(self) -> CausalChain:
        """The chain asked for (the log it was asked in)."""
        return self.parts[0].chain

    def format(self) -> str:
        """The first chain as ``CausalChain.format`` prints it, then each crossing: a
        ``⤷ into …`` / ``⤶ out of …`` line and its chain, indented."""
        lines = [self.first.format()]
        for part in self.parts[1:]:
            lines.append(f"⤷ {part.via}" if part.via and part.via.startswith("into") else f"⤶ {part.via}")
            lines.extend("  " + line for line in part.chain.format().splitlines())
        if self.truncated:
            lines.append("⚠ crossing cut short (part limit)")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: the key, each part, the cut."""
        return {"key": self.key, "parts": [p.to_dict() for p in self.parts], "truncated": self.truncated}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _initial(sub: Any) -> Mapping[str, Any]:
    """A subflow execution's initial state (``SubflowTrace.initial_state``, ``SubflowResult.initial``)."""
    found = getattr(sub, "initial_state", None)
    return found if isinstance(found, Mapping) else getattr(sub, "initial", {}) or {}


def _written(commit: Commit, key: str) -> tuple[bool, Any]:
    """The value ``commit`` set ``key`` to (its last whole-key set), if it did."""
    for op in reversed(commit.trace):
        if op.path == (key,) and op.verb == "set":
            return True, op.value
    return False, None


def _inner_key(sub: Any, value: Any) -> str | None:
    """The subflow's key whose final value is ``value``, the one written last when several are."""
    log = list(sub.commit_log)
    final = replay(log, initial=_initial(sub))
    wanted = _canonical(value)
    matches = [k for k, v in final.items() if _canonical(v) == wanted]
    if not matches:
        return None
    last: dict[str, int] = {}
    for position, commit in enumerate(log):
        for k in commit.written_keys:
            last[k] = position
    return max(matches, key=lambda k: (last.get(k, -1), k))


def why_across(
    commit_log: Sequence[Commit],
    key: str,
    at: int | None = None,
    *,
    subflows: Mapping[str, Any],
    initial: Iterable[str] = (),
    where: str | None = None,
    max_parts: int = 24,
) -> CrossedChain:
    """The causal chain of ``key`` as of commit ``at`` in the log ``where`` (a subflow
    execution's runtime id, or a mount path for its latest one; ``None``: the run's log),
    continued into and out of every mount it meets (the module law). ``subflows``: the
    record's subflow executions by runtime id; ``initial``: the keys the run started with.
    ``KeyError`` names a ``where`` the record has no subflow execution for."""
    runs = {rid: sub for rid, sub in subflows.items() if rid == getattr(sub, "runtime_stage_id", rid)}
    if where is not None and where not in runs:
        latest = [rid for rid, sub in runs.items() if getattr(sub, "mount_id", None) == where]
        if not latest:
            raise KeyError(f"no subflow execution '{where}' in this record (known: {', '.join(runs) or 'none'})")
        where = latest[-1]
    logs: dict[str | None, Sequence[Commit]] = {None: list(commit_log)}
    logs.update({rid: list(sub.commit_log) for rid, sub in runs.items()})
    # where each mount's commit is: the log holding it and its position
    mounts: dict[str, tuple[str | None, int]] = {}
    for log_id, log in logs.items():
        for position, commit in enumerate(log):
            if commit.runtime_stage_id in runs:
                mounts[commit.runtime_stage_id] = (log_id, position)
    started = frozenset(initial)
    parts: list[ChainPart] = []
    seen: set[tuple[str | None, str, int | None]] = set()
    queue: deque[tuple[str | None, str, int | None, str | None]] = deque([(where, key, at, None)])
    truncated = False
    entered: set[str] = set()  # subflows the walk went into from their parent's chain
    while queue:
        log_id, wanted, as_of, via = queue.popleft()
        if (log_id, wanted, as_of) in seen:
            continue
        seen.add((log_id, wanted, as_of))
        if len(parts) >= max_parts:
            truncated = True
            break
        known = started if log_id is None else frozenset(_initial(runs[log_id]))
        chain = causal_chain(logs[log_id], wanted, as_of, initial=known)
        parts.append(ChainPart(log_id, chain, via))
        into: dict[str, set[str]] = {}  # mount node -> the parent keys the chain followed it through
        if chain.root is not None:
            into.setdefault(chain.root.runtime_stage_id, set()).add(wanted)
        for node in chain.nodes:
            for edge in node.parents:
                into.setdefault(edge.runtime_stage_id, set()).add(edge.key)
        for node in chain.nodes:
            if node.runtime_stage_id not in runs:
                continue
            sub = runs[node.runtime_stage_id]
            commit = logs[log_id][mounts[node.runtime_stage_id][1]]
            for outer in sorted(into.get(node.runtime_stage_id, ())):
                wrote, value = _written(commit, outer)
                inner = _inner_key(sub, value) if wrote else None
                if inner is not None:
                    entered.add(node.runtime_stage_id)
                    queue.append(
                        (
                            node.runtime_stage_id,
                            inner,
                            None,
                            f"into the subflow {node.runtime_stage_id}: '{outer}' is its '{inner}' (the same value)",
                        )
                    )
        if log_id is not None and log_id not in entered and log_id in mounts:
            parent, position = mounts[log_id]
            for read in logs[parent][position].reads:
                queue.append(
                    (parent, read, position - 1, f"out of the subflow {log_id}: its input mapper read '{read}'")
                )
    return CrossedChain(key, tuple(parts), truncated)


__all__ = ["ChainPart", "CrossedChain", "why_across"]
