"""The record of a run: one frozen value, and the one place its redaction is applied.

Laws:
- A run's evidence is ONE value, ``Record``: the chart (spec and fingerprint), the run's id
  and input, the state its log folds from, the commits, the subflow logs, the narrative
  records, the checkpoint (a paused run's, or a failed run's retry point), the failure, the
  redaction rule, its status and its lineage (the run a fork continues). ``result.record``,
  ``trace.record``, ``store.get(id).record`` and ``agent.last_snapshot().record`` are that
  value; ``RunResult``, ``Trace`` and the store's ``RunRecord`` are views of it (a live
  result with its state, a record in a file, a record with timestamps).
- Redaction is applied HERE, once, for every reader after the fact (how — the rule and the
  functions that apply it — is ``flowchart/_core/redaction.py``, the one file). The commit
  log and the narrative are written redacted by the engine (``_engine/redacting.py`` calls
  that file: no real hidden value is ever written there); what a record still holds real —
  the run's input, the state its log folds from, the checkpoint's states and a retry's
  restore values, each subflow's starting state — is hidden by ``Record.shown()`` and by
  nothing else. ``shown()`` returns a ``ShownRecord``, a distinct type: every reader of runs
  (the trace file, the store's export, the viewer, the CLIs, ``explain_answer``, MCP results
  of a stored run) is handed one, so a reader given the raw record is a type error, not a
  leak found later.
- A failed run's checkpoint is its retry point, not a pause: the shown record tells the
  failure once (``failure``) and carries no checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from flowchart._core.commits import Commit, replay
from flowchart._core.failure import RunFailure
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.pause import Checkpoint
from flowchart._core.redaction import Redaction
from flowchart._core.values import copy_json
from flowchart._record.trace_narrative import narrative_of

if TYPE_CHECKING:
    from flowchart._record.result import RunResult

Status = Literal["running", "paused", "done", "failed"]
HUMAN_DECISIONS = "human_decisions"
"""The state key the agent commits a person's answers under (``governance.human``)."""


@attrs.define
class SubflowTrace:
    """One subflow execution: its mount, the state it started from and its own log."""

    mount_id: str
    runtime_stage_id: str
    initial_state: dict[str, Any]
    commit_log: list[Commit]


def subflow_traces(subflow_results: Mapping[str, Any], hides: Redaction | None = None) -> dict[str, SubflowTrace]:
    """Each subflow execution of a run as a ``SubflowTrace`` (its initial state under ``hides``),
    in execution order."""
    return {
        rid: SubflowTrace(
            sub.mount_id,
            rid,
            (hides or Redaction()).within(sub.mount_id).scrub_state(sub.initial),
            list(sub.commit_log),
        )
        for rid, sub in sorted(subflow_results.items(), key=lambda item: _rid_order(item[0]))
        if rid == sub.runtime_stage_id
    }


def _rid_order(rid: str) -> tuple[int, str]:
    head, _, count = rid.rpartition("#")
    return (int(count) if count.isdigit() else -1, head)


@attrs.frozen
class Reuse:
    """One stage a reuse-fork took from the record instead of running it: its runtime id in the
    fork, and the run and commit it was taken from (``chart.fork(..., reuse=True)``)."""

    runtime_stage_id: str
    from_run: str
    from_commit: int

    def line(self) -> str:
        """``call-llm#4: reused from commit 4 of run R``."""
        return f"{self.runtime_stage_id}: reused from commit {self.from_commit} of run {self.from_run}"


def _reuses(value: Iterable[Reuse]) -> tuple[Reuse, ...]:
    return tuple(value)


@attrs.frozen
class Lineage:
    """A fork's origin: the run it continues and the commit of that run it forked at."""

    parent_run_id: str
    forked_at: int


def _state(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value) if value is not None else {}


def _commits(value: Iterable[Commit]) -> tuple[Commit, ...]:
    return tuple(value)


def _paths(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class _Fields:
    """The fields a record and a shown record share (one declaration, two distinct types)."""

    run_id: str
    chart_fingerprint: str
    chart_spec: Mapping[str, Any] = attrs.field(repr=False)
    input: Mapping[str, Any] = attrs.field(converter=_state)
    initial_state: Mapping[str, Any] = attrs.field(converter=_state, repr=False)
    commits: tuple[Commit, ...] = attrs.field(converter=_commits, repr=False)
    subflows: Mapping[str, SubflowTrace] = attrs.field(factory=dict, repr=False)
    narrative: tuple[NarrativeEntry, ...] | None = attrs.field(default=None, repr=False)
    checkpoint: Checkpoint | None = attrs.field(default=None, repr=False)
    failure: RunFailure | None = None
    redaction: Redaction | None = attrs.field(default=None, repr=False)
    redacted_paths: tuple[str, ...] = attrs.field(default=(), converter=_paths)
    status: Status = "done"
    lineage: Lineage | None = None
    reused: tuple[Reuse, ...] = attrs.field(default=(), converter=_reuses, repr=False)
    """A reuse-fork's stages taken from the record (each other stage after the fork re-ran)."""

    @property
    def rule(self) -> Redaction:
        """The rule the run is shown under: its own, else the keys its log reports hiding."""
        if self.redaction is not None:
            return self.redaction
        return Redaction(keys={path.split("/", 1)[0] for path in self.redacted_paths})

    @property
    def final_state(self) -> dict[str, Any]:
        """The state the commits fold to from ``initial_state``."""
        return replay(list(self.commits), None, dict(self.initial_state))

    @property
    def human_decisions(self) -> tuple[Any, ...]:
        """Each person's answer the run committed (``human_decisions`` rows), in order."""
        rows = self.final_state.get(HUMAN_DECISIONS) if self._decided() else None
        return tuple(rows) if isinstance(rows, list) else ()

    def _decided(self) -> bool:
        return HUMAN_DECISIONS in self.initial_state or any(
            HUMAN_DECISIONS in commit.written_keys for commit in self.commits
        )


@attrs.frozen
class Record(_Fields):
    """What a run is (see the module law): build readers from ``shown()``, never from this."""

    def shown(self, rule: Redaction | None = None) -> ShownRecord:
        """The record as every reader may see it: what the run hides, hidden — once, here
        (``rule`` overrides the run's own: a run stored before rules were kept)."""
        hides = rule if rule is not None else self.rule
        checkpoint = None if self.status == "failed" else self.checkpoint
        if checkpoint is not None:
            checkpoint = hides.scrub_checkpoint(checkpoint)
        return ShownRecord(
            run_id=self.run_id,
            chart_fingerprint=self.chart_fingerprint,
            chart_spec=copy_json(self.chart_spec),
            input=hides.scrub_state(self.input),
            initial_state=hides.scrub_state(self.initial_state),
            commits=self.commits,
            subflows={
                rid: attrs.evolve(sub, initial_state=hides.within(sub.mount_id).scrub_state(sub.initial_state))
                for rid, sub in self.subflows.items()
            },
            narrative=self.narrative,
            checkpoint=checkpoint,
            failure=self.failure if self.status == "failed" else None,
            redaction=rule if rule is not None else self.redaction,
            redacted_paths=self.redacted_paths,
            status=self.status,
            lineage=self.lineage,
            reused=self.reused,
        )

    @classmethod
    def of_result(cls, result: RunResult) -> Record:
        """The record of a finished, paused or failed (``failed_run``) run segment."""
        status: Status = "failed" if result.failure is not None else "paused" if result.paused else "done"
        return cls(
            run_id=result.run_id,
            chart_fingerprint=result.chart.fingerprint,
            chart_spec=result.chart.spec,
            input=result.args,
            initial_state=result.initial_state,
            commits=result.commit_log,
            subflows=subflow_traces(result.subflow_results),
            narrative=_tupled(narrative_of(result.recorders)),
            checkpoint=result.checkpoint,
            failure=result.failure,
            redaction=result.redaction,
            redacted_paths=result.redacted_paths,
            status=status,
            reused=result.reused,
        )


@attrs.frozen
class ShownRecord(_Fields):
    """A record as readers see it, made by ``Record.shown()``: what the run hides is hidden here
    (``Trace.of(shown)`` writes it as a file)."""


def _tupled(records: list[NarrativeEntry] | None) -> tuple[NarrativeEntry, ...] | None:
    return None if records is None else tuple(records)


__all__ = ["Lineage", "Record", "Reuse", "ShownRecord", "Status", "SubflowTrace", "subflow_traces"]
