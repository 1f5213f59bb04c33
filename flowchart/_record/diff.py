"""``diff_runs``: where two runs of one chart went different ways — a decision diff.

Laws:
- A diff reads two SHOWN records (``flowchart._record.record``) and nothing else: no chart is
  run, no live state is looked at. Each side is shown under the UNION of both runs' rules, so a
  key either run hides is hidden on both sides and no value one run hid can appear in the diff.
- Two runs of different charts (different fingerprints) are refused with a ``DiffError``
  naming both fingerprints: their commits do not line up, and a diff of them would be noise.
- The diff names, in this order: the FIRST DIVERGENT COMMIT (the first index where the two logs
  hold different commits — stage, writes, reads or decision; ``-1`` when the runs started from
  different inputs), the DECISIONS THAT MOVED (each decider/selector execution paired by stage
  and occurrence: its choice and the first rule whose outcome changed, with that rule's
  evidence on both sides; each person's answer paired by tool and occurrence), and the KEYS
  whose final values differ, each with the commit that last wrote it on each side.
- Side A is the baseline ("was"), side B the new run: ``tool-calls → final`` reads A → B.
- Ids derived from a run's id (``<3 letters>_<32 hex digits>``: a check-in's request id, say)
  differ between any two runs by construction: a commit or a value that differs only in such
  ids is the same (as in ``flowchart.testing``'s snapshots); so is a person's answer that
  differs only in its ``store_head`` (the head of the store chain that recorded it).
- One pass over each log: a diff of two 30,000-commit runs costs well under a second (bench).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from flowchart._core.commits import Commit, replay
from flowchart._core.errors import FlowchartError
from flowchart._core.redaction import Redaction
from flowchart._record.record import HUMAN_DECISIONS, ShownRecord

__all__ = ["DecisionMove", "DiffError", "Divergence", "KeyDiff", "RunDiff", "diff_runs", "shown_of"]


class DiffError(FlowchartError, ValueError):
    """Two runs cannot be diffed (different charts), or a source is not a run."""


@attrs.frozen
class Divergence:
    """The first commit at which the two runs differ (``idx`` ``-1``: their inputs differ)."""

    idx: int
    a: str | None
    """A's commit there (its runtime stage id), ``None`` when A's log had ended."""
    b: str | None
    differs: tuple[str, ...]
    """What differs: ``stage``, ``writes``, ``reads``, ``decision``, ``input``, ``ended``."""

    def line(self) -> str:
        """``first divergent commit: #4 call-llm#4 vs call-llm#4 (writes)``."""
        if self.idx < 0:
            return f"first divergence: before commit 0 (the runs started differently: {', '.join(self.differs)})"
        side_a = self.a or "(A had ended)"
        side_b = self.b or "(B had ended)"
        shown = side_a if side_a == side_b else f"{side_a} vs {side_b}"
        return f"first divergent commit: #{self.idx} {shown} ({', '.join(self.differs)})"

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {"idx": self.idx, "a": self.a, "b": self.b, "differs": list(self.differs)}


@attrs.frozen
class DecisionMove:
    """One decision that moved: a route/decider/selector choice or a person's answer."""

    kind: str
    """``decider`` (a decider's or selector's choice) or ``check-in`` (a person's answer)."""
    where: str
    """The decider's runtime stage id on A (else B), or the check-in's tool name."""
    before: str
    after: str
    a_idx: int | None
    b_idx: int | None
    rule: str | None = None
    """The first rule whose outcome changed, with its evidence on both sides (deciders)."""

    def lines(self) -> list[str]:
        """``route#5: tool-calls → final`` (and the rule line under it)."""
        head = f"check-in {self.where}" if self.kind == "check-in" else self.where
        out = [f"{head}: {self.before} → {self.after}"] if self.before != self.after else []
        if self.rule is not None:
            out.append(self.rule)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "kind": self.kind,
            "where": self.where,
            "before": self.before,
            "after": self.after,
            "a_idx": self.a_idx,
            "b_idx": self.b_idx,
            "rule": self.rule,
        }


@attrs.frozen
class KeyDiff:
    """A key whose final value differs, and the commit that last wrote it on each side
    (``-1``: the value is the initial state's; ``None``: the key is absent on that side)."""

    key: str
    a: Any
    b: Any
    a_writer: int | None
    b_writer: int | None
    a_present: bool = True
    b_present: bool = True

    def line(self) -> str:
        """``~ total: 3 (commit 4) → 5 (commit 6)``."""
        before = _side(self.a, self.a_present, self.a_writer)
        return f"~ {self.key}: {before} → {_side(self.b, self.b_present, self.b_writer)}"

    def to_dict(self) -> dict[str, Any]:
        """JSON form (an absent side's value is ``null`` with ``present: false``)."""
        return {
            "key": self.key,
            "a": {"present": self.a_present, "value": self.a, "writer": self.a_writer},
            "b": {"present": self.b_present, "value": self.b, "writer": self.b_writer},
        }


def _side(value: Any, present: bool, writer: int | None) -> str:
    if not present:
        return "(absent)"
    where = "initial state" if writer is None or writer < 0 else f"commit {writer}"
    return f"{_json(value)} ({where})"


def _json(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@attrs.frozen
class RunDiff:
    """What ``diff_runs(a, b)`` returns: ``same`` when nothing moved."""

    a_run_id: str
    b_run_id: str
    chart_fingerprint: str
    divergence: Divergence | None
    moved: tuple[DecisionMove, ...]
    keys: tuple[KeyDiff, ...]
    a_commits: int
    b_commits: int
    a_failure: str | None = None
    """How run A failed (``error: message at stage``), ``None`` when it did not."""
    b_failure: str | None = None

    @property
    def same(self) -> bool:
        """True when the two runs committed the same things (nothing moved, nothing differs)."""
        return self.divergence is None and not self.moved and not self.keys and self.a_failure == self.b_failure

    def lines(self) -> list[str]:
        """The diff as text: the first divergent commit, the decisions that moved, the keys."""
        out = [f"run {self.a_run_id} ({self.a_commits} commits) → run {self.b_run_id} ({self.b_commits} commits)"]
        if self.same:
            out.append("no difference: the same commits, decisions and final state")
            return out
        if self.divergence is not None:
            out.append(self.divergence.line())
        if self.a_failure != self.b_failure:
            out.extend(
                f"run {side} failed: {text}" for side, text in (("A", self.a_failure), ("B", self.b_failure)) if text
            )
        if self.moved:
            out.append("decisions that moved:")
            out.extend("  " + line for move in self.moved for line in move.lines())
        if self.keys:
            out.append("final values that differ:")
            out.extend("  " + key.line() for key in self.keys)
        return out

    def format(self) -> str:
        """``lines()`` joined."""
        return "\n".join(self.lines())

    def to_dict(self) -> dict[str, Any]:
        """JSON form (``flowchart diff A B --json``)."""
        return {
            "a": self.a_run_id,
            "b": self.b_run_id,
            "chart_fingerprint": self.chart_fingerprint,
            "same": self.same,
            "first_divergence": None if self.divergence is None else self.divergence.to_dict(),
            "moved": [move.to_dict() for move in self.moved],
            "keys": [key.to_dict() for key in self.keys],
            "a_failure": self.a_failure,
            "b_failure": self.b_failure,
        }


# -- reading the sources ---------------------------------------------------------------------------
def shown_of(source: Any, what: str = "run") -> ShownRecord:
    """The shown record of ``source`` (``flowchart._record.trace.shown_of``), or ``DiffError``."""
    from flowchart._record.trace import shown_of as shown

    found = shown(source)
    if found is not None:
        return found
    raise DiffError(
        f"{what}: expected a Record, a ShownRecord, a Trace, a trace file path, a RunResult or a stored run, "
        f"got {type(source).__name__}"
    )


def _same_rule(a: Redaction, b: Redaction) -> bool:
    return a.to_dict() == b.to_dict()


# -- commits under the union rule ------------------------------------------------------------------
def _commit_shown(commit: Commit, rule: Redaction) -> Commit:
    decision = commit.decision
    return attrs.evolve(
        commit,
        trace=tuple(rule.scrub_ops(list(commit.trace), 0)[0]),
        redacted_paths=(),
        decision=None if decision is None else rule.shown_evidence(decision),
    )


def _differs(a: Commit, b: Commit) -> tuple[str, ...]:
    out = []
    if a.stage_id != b.stage_id or a.runtime_stage_id != b.runtime_stage_id:
        out.append("stage")
    if a.trace != b.trace:
        out.append("writes")
    if a.reads != b.reads:
        out.append("reads")
    if a.decision != b.decision:
        out.append("decision")
    if a.attempts != b.attempts or a.recovers != b.recovers:
        out.append("attempts")
    return tuple(out)


_OPAQUE_ID = re.compile(r"\b([a-z]{3})_[0-9a-f]{32}\b")
_STORE_HEAD = re.compile(r'"store_head": "[0-9a-f]{64}"')


def _unbound(value: Any) -> str:
    """``value``'s JSON with each run-bound opaque id replaced by its prefix (``<cki>``) and each
    person's answer's ``store_head`` (the head of the store chain it was recorded in) left out."""
    text = json.dumps(value, sort_keys=True, default=str)
    return _STORE_HEAD.sub('"store_head": "<head>"', _OPAQUE_ID.sub(r"<\1>", text))


def _same_but_ids(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` differ only in run-bound opaque ids."""
    return _unbound(a) == _unbound(b)


def _commit_value(commit: Commit) -> dict[str, Any]:
    return {k: v for k, v in commit.to_dict().items() if k != "idx"}


def _divergence(a: Sequence[Commit], b: Sequence[Commit], a0: ShownRecord, b0: ShownRecord) -> Divergence | None:
    started = []
    if dict(a0.input) != dict(b0.input):
        started.append("input")
    if dict(a0.initial_state) != dict(b0.initial_state):
        started.append("initial state")
    if started:
        return Divergence(-1, None, None, tuple(started))
    for idx, (left, right) in enumerate(zip(a, b, strict=False)):
        if left is right or left == right:
            continue
        differs = _differs(left, right)
        if differs and not _same_but_ids(_commit_value(left), _commit_value(right)):
            return Divergence(idx, left.runtime_stage_id, right.runtime_stage_id, differs)
    if len(a) != len(b):
        idx = min(len(a), len(b))
        return Divergence(
            idx,
            a[idx].runtime_stage_id if idx < len(a) else None,
            b[idx].runtime_stage_id if idx < len(b) else None,
            ("ended",),
        )
    return None


# -- decisions -------------------------------------------------------------------------------------
def _deciders(log: Iterable[Commit]) -> dict[tuple[str, int], Commit]:
    seen: dict[str, int] = {}
    out: dict[tuple[str, int], Commit] = {}
    for commit in log:
        if commit.decision is None:
            continue
        n = seen.get(commit.stage_id, 0)
        seen[commit.stage_id] = n + 1
        out[(commit.stage_id, n)] = commit
    return out


def _choice(decision: Mapping[str, Any]) -> str:
    if "selected" in decision:
        selected = decision.get("selected")
        return "[" + ", ".join(str(s) for s in selected) + "]" if isinstance(selected, list) else str(selected)
    return str(decision.get("chosen"))


def _rules(decision: Mapping[str, Any]) -> list[Any]:
    evidence = decision.get("evidence")
    rules = evidence.get("rules") if isinstance(evidence, Mapping) else None
    return list(rules) if isinstance(rules, list) else []


def _mark(ok: Any) -> str:
    return "✓" if ok else "✗"


def _rule_text(rule: Mapping[str, Any]) -> str:
    """``count 3 lt 3 ✗`` for a filter rule's conditions; ``✓``/``✗`` for a function rule
    (with the summaries of what it read)."""
    if rule.get("type") == "filter":
        parts = [
            f"{c.get('key')} {c.get('actual_summary')} {c.get('op')} {_json(c.get('threshold'), 40)} "
            + _mark(c.get("result"))
            for c in rule.get("conditions") or ()
            if isinstance(c, Mapping)
        ]
        return ", ".join(parts) or _mark(rule.get("matched"))
    inputs = [f"{i.get('key')}={i.get('value_summary')}" for i in rule.get("inputs") or () if isinstance(i, Mapping)]
    label = rule.get("label")
    said = f"'{label}' " if label else ""
    return f"{said}{'(' + ', '.join(inputs) + ') ' if inputs else ''}{_mark(rule.get('matched'))}"


def _moved_rule(stage: str, a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> str | None:
    """The first rule whose outcome or evidence changed, told on both sides."""
    rules_a = _rules(a) if a is not None else []
    rules_b = _rules(b) if b is not None else []
    for index in range(max(len(rules_a), len(rules_b))):
        ra = rules_a[index] if index < len(rules_a) and isinstance(rules_a[index], Mapping) else None
        rb = rules_b[index] if index < len(rules_b) and isinstance(rules_b[index], Mapping) else None
        if ra == rb:
            continue
        shown = rb if rb is not None else ra
        assert shown is not None
        label = shown.get("label") if shown.get("type") == "filter" else None
        head = f"decider {stage}: rule {index}" + (f" '{label}'" if label else "")
        now = _rule_text(rb) if rb is not None else "(not evaluated)"
        was = _rule_text(ra) if ra is not None else "not evaluated"
        if now == was:
            continue
        return f"{head} {now} (was {was})"
    return None


def _decision_moves(a: Sequence[Commit], b: Sequence[Commit]) -> list[DecisionMove]:
    da, db = _deciders(a), _deciders(b)
    order = list(da) + [k for k in db if k not in da]
    order.sort(key=lambda k: (da[k].idx if k in da else db[k].idx, k[1]))
    moves = []
    for key in order:
        ca, cb = da.get(key), db.get(key)
        if (
            ca is not None
            and cb is not None
            and (ca.decision == cb.decision or _same_but_ids(ca.decision, cb.decision))
        ):
            continue
        before = _choice(ca.decision) if ca is not None and ca.decision is not None else "(not reached)"
        after = _choice(cb.decision) if cb is not None and cb.decision is not None else "(not reached)"
        where = (ca or cb).runtime_stage_id  # type: ignore[union-attr]
        rule = None
        if ca is not None and cb is not None:
            rule = _moved_rule((ca.stage or ca.stage_id), ca.decision, cb.decision)
        if before == after and rule is None:
            continue
        moves.append(
            DecisionMove(
                "decider", where, before, after, None if ca is None else ca.idx, None if cb is None else cb.idx, rule
            )
        )
    return moves


def _answer(row: Any) -> str:
    if not isinstance(row, Mapping):
        return "not asked"
    if row.get("gate") == "ask_human":
        return f"answered {_json(row.get('answer'), 60)}"
    verdict = "approved" if row.get("approved") is True else "declined"
    by = row.get("by")
    text = f"{verdict} by {by}" if by else verdict
    if "after" in row:
        text += f" (edited to {_json(row['after'], 60)})"
    return text


def _rows_by_tool(rows: Sequence[Any]) -> dict[tuple[str, int], Any]:
    seen: dict[str, int] = {}
    out: dict[tuple[str, int], Any] = {}
    for row in rows:
        tool = str(row.get("tool")) if isinstance(row, Mapping) else "?"
        n = seen.get(tool, 0)
        seen[tool] = n + 1
        out[(tool, n)] = row
    return out


def _human_moves(a_final: Mapping[str, Any], b_final: Mapping[str, Any], rule: Redaction) -> list[DecisionMove]:
    if rule.hides(HUMAN_DECISIONS):
        return []
    rows_a = a_final.get(HUMAN_DECISIONS)
    rows_b = b_final.get(HUMAN_DECISIONS)
    ra = _rows_by_tool(rows_a if isinstance(rows_a, list) else [])
    rb = _rows_by_tool(rows_b if isinstance(rows_b, list) else [])
    moves = []
    for key in list(ra) + [k for k in rb if k not in ra]:
        before, after = _answer(ra.get(key)), _answer(rb.get(key))  # the answers, never the request ids
        if before != after:
            moves.append(DecisionMove("check-in", key[0], before, after, None, None))
    return moves


# -- final values ----------------------------------------------------------------------------------
def _writers(log: Iterable[Commit]) -> dict[str, int]:
    out: dict[str, int] = {}
    for commit in log:
        for op in commit.trace:
            out[op.path[0]] = commit.idx
    return out


def _key_diffs(a: ShownRecord, b: ShownRecord, fa: dict[str, Any], fb: dict[str, Any]) -> list[KeyDiff]:
    wa, wb = _writers(a.commits), _writers(b.commits)
    out = []
    for key in list(fa) + [k for k in fb if k not in fa]:
        in_a, in_b = key in fa, key in fb
        if in_a and in_b and (fa[key] == fb[key] or _same_but_ids(fa[key], fb[key])):
            continue
        out.append(KeyDiff(key, fa.get(key), fb.get(key), wa.get(key, -1), wb.get(key, -1), in_a, in_b))
    return out


# -- the diff --------------------------------------------------------------------------------------
def diff_runs(a: Any, b: Any) -> RunDiff:
    """Where run ``b`` went differently from run ``a`` (see the module law). Each is a ``Record``,
    a ``ShownRecord``, a ``Trace``, a trace file path, a ``RunResult`` or a stored run;
    ``DiffError`` when they are runs of two different charts."""
    left, right = shown_of(a, "a"), shown_of(b, "b")
    if left.chart_fingerprint != right.chart_fingerprint:
        raise DiffError(
            f"cannot diff runs of two different charts: run {left.run_id} is of chart "
            f"{left.chart_fingerprint[:12]}…, run {right.run_id} of chart {right.chart_fingerprint[:12]}… "
            "(diff runs of one chart: re-run the old run's input on today's chart with the same fingerprint)"
        )
    rule_a, rule_b = left.rule, right.rule
    rule = rule_a.union(rule_b)
    log_a: Sequence[Commit] = left.commits
    log_b: Sequence[Commit] = right.commits
    if rule.active and not (_same_rule(rule_a, rule) and _same_rule(rule_b, rule)):
        log_a = [_commit_shown(c, rule) for c in log_a]
        log_b = [_commit_shown(c, rule) for c in log_b]
    input_a, input_b = rule.scrub_state(left.input), rule.scrub_state(right.input)
    init_a, init_b = rule.scrub_state(left.initial_state), rule.scrub_state(right.initial_state)
    left_s = attrs.evolve(left, input=input_a, initial_state=init_a, commits=log_a)
    right_s = attrs.evolve(right, input=input_b, initial_state=init_b, commits=log_b)
    final_a = rule.scrub_state(replay(list(log_a), None, dict(init_a)))
    final_b = rule.scrub_state(replay(list(log_b), None, dict(init_b)))
    moved = _decision_moves(log_a, log_b) + _human_moves(final_a, final_b, rule)
    return RunDiff(
        a_run_id=left.run_id,
        b_run_id=right.run_id,
        chart_fingerprint=left.chart_fingerprint,
        divergence=_divergence(log_a, log_b, left_s, right_s),
        moved=tuple(moved),
        keys=tuple(_key_diffs(left_s, right_s, final_a, final_b)),
        a_commits=len(log_a),
        b_commits=len(log_b),
        a_failure=_failure(left),
        b_failure=_failure(right),
    )


def _failure(shown: ShownRecord) -> str | None:
    failure = shown.failure
    if failure is None:
        return None
    return f"{failure.error_type} at {failure.runtime_stage_id}: {failure.message}"
