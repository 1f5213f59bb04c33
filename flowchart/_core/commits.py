"""The commit log: one ``Commit`` per executed stage, and the fold that replays it.

Laws:
- A commit holds the stage's NET change as ordered ops: ``set`` (the whole value at a
  path), ``merge`` (a nested dict patch: dicts merge recursively, anything else
  replaces), ``append`` (items added to the end of a list: the op carries only the new
  tail, so a log grows with what each stage added, not with the list) and ``delete``
  (the key is removed). Paths are lists of keys from the top of
  the state (``["runs", "a", "x"]`` for a fork child's write).
- Folding the log over the initial state reproduces the live state exactly: ``replay``
  and the engine apply ops through the same ``apply_op`` (``replay`` extends in place a
  top-level list it made itself, with the same result, so a list that grows by appends
  replays in linear time).
- Committed values are shared, never mutated: ``apply_op`` copies only the containers on
  the path it changes (copy-on-write), never the whole state.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs

from flowchart._core.retry import Attempt
from flowchart._core.values import slot_setters

Verb = Literal["set", "merge", "append", "delete"]


@attrs.frozen(slots=True)
class Op:
    """One change: ``verb`` at ``path`` (a tuple of keys); ``value`` is ``None`` for delete."""

    path: tuple[str, ...]
    verb: Verb
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form: ``{"path": [...], "verb": ..., "value"?: ...}``."""
        out: dict[str, Any] = {"path": list(self.path), "verb": self.verb}
        if self.verb != "delete":
            out["value"] = copy.deepcopy(self.value)
        return out


@attrs.frozen(slots=True)
class Commit:
    """One executed stage's entry in the run's commit log.

    ``trace`` is the ordered list of ops; ``reads`` the state keys the stage read (in
    first-read order; used by causal backtracking); ``redacted_paths`` the paths whose
    values were replaced by ``"REDACTED"`` in this entry; ``decision`` what a decider or
    selector returned (``{"chosen" | "selected", "evidence"?}``), ``None`` for other stages;
    ``attempts`` the failed attempts of a stage that was retried (``flowchart._core.retry``), before
    the attempt this commit is; ``recovers`` the runtime id of a failed execution this one
    re-ran when a failed run was resumed (its partial writes are undone by this commit's ops).
    Both are absent from ``to_dict`` when empty, so a run without retries records as before.
    """

    idx: int
    stage: str
    stage_id: str
    runtime_stage_id: str
    trace: tuple[Op, ...] = ()
    reads: tuple[str, ...] = ()
    redacted_paths: tuple[str, ...] = ()
    decision: dict[str, Any] | None = None
    attempts: tuple[Attempt, ...] = ()
    recovers: str | None = None

    @property
    def overwrite(self) -> dict[str, Any]:
        """footprintjs's nested patch of every ``set`` op (later ops win)."""
        return _nested_patch(op for op in self.trace if op.verb == "set")

    @property
    def updates(self) -> dict[str, Any]:
        """footprintjs's nested patch of every ``merge`` op."""
        return _nested_patch(op for op in self.trace if op.verb == "merge")

    @property
    def written_keys(self) -> tuple[str, ...]:
        """Top-level keys this commit changed, in op order, without repeats."""
        return tuple(dict.fromkeys(op.path[0] for op in self.trace))

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form with stable keys (what traces and stores persist)."""
        return {
            "idx": self.idx,
            "stage": self.stage,
            "stage_id": self.stage_id,
            "runtime_stage_id": self.runtime_stage_id,
            "trace": [op.to_dict() for op in self.trace],
            "reads": list(self.reads),
            "redacted_paths": list(self.redacted_paths),
        } | self._extras()

    def _extras(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.decision is not None:
            out["decision"] = copy.deepcopy(self.decision)
        if self.attempts:
            out["attempts"] = [a.to_dict() for a in self.attempts]
        if self.recovers is not None:
            out["recovers"] = self.recovers
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Commit:
        """Inverse of ``to_dict`` (no validation: use the trace/checkpoint converter for that)."""
        return cls(
            idx=data["idx"],
            stage=data["stage"],
            stage_id=data["stage_id"],
            runtime_stage_id=data["runtime_stage_id"],
            trace=tuple(Op(tuple(o["path"]), o["verb"], copy.deepcopy(o.get("value"))) for o in data["trace"]),
            reads=tuple(data.get("reads", ())),
            redacted_paths=tuple(data.get("redacted_paths", ())),
            decision=copy.deepcopy(data.get("decision")),
            attempts=tuple(Attempt(a["attempt"], a["error_type"], a["message"]) for a in data.get("attempts", ())),
            recovers=data.get("recovers"),
        )


# the slots' own setters (``values.slot_setters``): the engine's commits and ops made without
# attrs' frozen ``__init__``
_new_object = object.__new__
_SET_PATH, _SET_VERB, _SET_VALUE = slot_setters(Op)
(
    _SET_IDX,
    _SET_STAGE,
    _SET_SID,
    _SET_RID,
    _SET_TRACE,
    _SET_READS,
    _SET_REDACTED,
    _SET_DECISION,
    _SET_ATTEMPTS,
    _SET_RECOVERS,
) = slot_setters(Commit)


def make_op(path: tuple[str, ...], verb: Verb, value: Any = None) -> Op:
    """``Op(path, verb, value)`` as the engine makes one per change: the same frozen value.

    Equal, hashable and frozen like the class call's; made by filling the slots directly
    (the engine's hot path: one per stage write, ≈ 40 % of the class call's cost).
    """
    op = _new_object(Op)
    _SET_PATH(op, path)
    _SET_VERB(op, verb)
    _SET_VALUE(op, value)
    return op


def make_commit(
    idx: int,
    stage: str,
    stage_id: str,
    runtime_stage_id: str,
    trace: tuple[Op, ...],
    reads: tuple[str, ...],
    redacted_paths: tuple[str, ...],
    decision: dict[str, Any] | None,
    attempts: tuple[Attempt, ...],
    recovers: str | None,
) -> Commit:
    """``Commit(...)`` with every field given, as the engine makes one per executed stage.

    The same value as the class call (equal, hashable when its fields are, frozen), made by
    filling the slots directly: attrs' frozen ``__init__`` goes through ``object.__setattr__``
    once per field, ten times per commit.
    """
    commit = _new_object(Commit)
    _SET_IDX(commit, idx)
    _SET_STAGE(commit, stage)
    _SET_SID(commit, stage_id)
    _SET_RID(commit, runtime_stage_id)
    _SET_TRACE(commit, trace)
    _SET_READS(commit, reads)
    _SET_REDACTED(commit, redacted_paths)
    _SET_DECISION(commit, decision)
    _SET_ATTEMPTS(commit, attempts)
    _SET_RECOVERS(commit, recovers)
    return commit


def _nested_patch(ops: Iterable[Op]) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    for op in ops:
        target = patch
        for key in op.path[:-1]:
            target = target.setdefault(key, {})
        target[op.path[-1]] = op.value
    return patch


def merge_value(base: Any, patch: Any) -> Any:
    """Deep-merge ``patch`` into ``base`` without mutating either (dicts recurse; else replace)."""
    if not (isinstance(base, dict) and isinstance(patch, dict)):
        return patch
    out = dict(base)
    for key, value in patch.items():
        out[key] = merge_value(base[key], value) if key in base else value
    return out


def apply_op(state: dict[str, Any], op: Op) -> None:
    """Apply ``op`` to ``state`` in place, copying only the containers along ``op.path``."""
    path = op.path
    if len(path) == 1:
        key = path[0]
        if op.verb == "set":
            state[key] = op.value
        elif op.verb == "append":
            current = state.get(key)
            state[key] = [*current, *op.value] if isinstance(current, list) else list(op.value)
        elif op.verb == "merge":
            state[key] = merge_value(state.get(key), op.value) if key in state else op.value
        else:
            state.pop(key, None)
        return
    head = path[0]
    child = state.get(head)
    child = dict(child) if isinstance(child, dict) else {}
    state[head] = child
    apply_op(child, Op(path[1:], op.verb, op.value))


def apply_commit(state: dict[str, Any], commit: Commit) -> None:
    """Apply every op of ``commit`` to ``state`` in place (copy-on-write along each path)."""
    for op in commit.trace:
        apply_op(state, op)


def replay(
    commit_log: Iterable[Commit], upto: int | None = None, initial: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Rebuild the state after commit ``upto`` (inclusive; ``None`` = the whole log).

    ``initial`` is the state the run started from (a subflow's mapped input; ``{}`` for a
    top-level run). The result is a fresh deep copy the caller may mutate.
    """
    log = list(commit_log)
    if upto is not None and not -1 <= upto < len(log):
        raise IndexError(f"commit index {upto} is out of range: the log has {len(log)} commits (0..{len(log) - 1})")
    state: dict[str, Any] = dict(initial or {})
    end = len(log) if upto is None else upto + 1
    grown: dict[str, list[Any]] = {}  # top-level key -> the list this fold made for it (no one else holds it)
    for commit in log[:end]:
        for op in commit.trace:
            if op.verb == "append" and len(op.path) == 1:
                _append_owned(state, op.path[0], op.value, grown)
            else:
                apply_op(state, op)
    return copy.deepcopy(state)


def _append_owned(state: dict[str, Any], key: str, tail: list[Any], grown: dict[str, list[Any]]) -> None:
    """``apply_op`` of a top-level append, in amortised O(len(tail)): the first append copies the
    list (it may be a committed value), later ones extend that copy while it is still the state's."""
    current = state.get(key)
    if key in grown and current is grown[key]:
        grown[key].extend(tail)
        return
    grown[key] = state[key] = [*current, *tail] if isinstance(current, list) else list(tail)


def commit_data(commit: Commit) -> dict[str, Any]:
    """``commit.to_dict()`` for a caller that serialises it at once and lets it go.

    The same keys in the same order, so the JSON is byte-identical; nothing is copied (values
    are shared with the commit, tuples stand for lists): this is the form ``Trace.save`` and the
    run stores write, one dict per commit, built once.
    """
    data: dict[str, Any] = {
        "idx": commit.idx,
        "stage": commit.stage,
        "stage_id": commit.stage_id,
        "runtime_stage_id": commit.runtime_stage_id,
        "trace": [
            {"path": op.path, "verb": op.verb}
            if op.verb == "delete"
            else {"path": op.path, "verb": op.verb, "value": op.value}
            for op in commit.trace
        ],
        "reads": commit.reads,
        "redacted_paths": commit.redacted_paths,
    }
    if commit.decision is not None:
        data["decision"] = commit.decision
    if commit.attempts:
        data["attempts"] = [a.to_dict() for a in commit.attempts]
    if commit.recovers is not None:
        data["recovers"] = commit.recovers
    return data


def commit_from_parsed(data: Mapping[str, Any]) -> Commit:
    """``Commit.from_dict`` for data freshly parsed from JSON text (nobody else holds it): no copies."""
    return Commit(
        idx=data["idx"],
        stage=data["stage"],
        stage_id=data["stage_id"],
        runtime_stage_id=data["runtime_stage_id"],
        trace=tuple(Op(tuple(o["path"]), o["verb"], o.get("value")) for o in data["trace"]),
        reads=tuple(data.get("reads", ())),
        redacted_paths=tuple(data.get("redacted_paths", ())),
        decision=data.get("decision"),
        attempts=tuple(Attempt(a["attempt"], a["error_type"], a["message"]) for a in data.get("attempts", ())),
        recovers=data.get("recovers"),
    )
