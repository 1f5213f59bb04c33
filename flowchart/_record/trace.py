"""``Trace``: one run as a file — chart spec, commit log, narrative, checkpoint — and back.

Laws:
- A trace is a RECORD, not a resume token. It holds what the run recorded: the commit
  log exactly as the engine wrote it (already redacted), the initial state, the run
  input and the checkpoint with every value the run's redaction hides replaced by
  ``"REDACTED"`` (top-level keys and keys under ``runs/<child>``). The final state is
  NOT stored: ``trace.final_state`` replays the recorded log, so it can never show
  more than the log does. Without redaction the checkpoint is byte-identical to the
  run's and can still resume.
- A failed run's trace (``failed_run(error)[0].trace()``, or a stored failed run's)
  carries ``failure``: the error's class, message and the stage that raised. The key is
  absent from every other trace, which stays byte-identical.
- Two runs of the same chart on the same input give byte-identical trace files except
  for ``run_id`` and the checkpoint's ``run_id`` / ``paused_at``.
- The narrative is kept as RECORDS (``NarrativeEntry``: type, depth, text and the runtime
  stage id that told it), so a reader places a line by its stage, never by its wording.
  A file keeps them as columns (version 3: one list per field, ``flowchart._core.narrative_columns``);
  a loaded trace keeps those columns, checked at load, and builds the records when
  ``narrative`` is first read. Older files still load: version 2 (a list of record objects)
  and version 1 (bare lines: each a record of type ``line`` with no stage); a loaded trace
  is version 3 and saves as one. Any other shape or version is refused.
- Saving and loading a file are fast and atomic (``flowchart._record.trace_codec``: the commit log
  written in chunks to a temporary file that replaces the target only when complete;
  ``flowchart._record.trace_parsed``: the commit log and the narrative read back by strict passes
  that accept and refuse exactly what the converter does, and prove the limits on the way).
- Loading is fail closed through the checkpoint discipline (``flowchart._core.serde``): JSON
  only, unknown or missing keys, wrong types and an unknown ``version`` are refused
  with a ``CheckpointError`` naming the field path (``$.commit_log[2].trace[0].verb``);
  the spec must match ``chart_fingerprint``, commit ``idx`` must equal its position,
  and the checkpoint is validated as a checkpoint. Nothing is ever executed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from flowchart._core.commits import Commit, Op, commit_data, replay
from flowchart._core.errors import CheckpointError, TraceError
from flowchart._core.failure import RunFailure
from flowchart._core.fastjson import available, dumps_exact, reads
from flowchart._core.fingerprint import spec_fingerprint
from flowchart._core.narrative_columns import (
    NarrativeColumns,
    built_on_read,
    check_columns,
    column_path,
    record_path,
    stored_slot,
)
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.pause import Checkpoint, checkpoint_hooks
from flowchart._core.retry import Attempt
from flowchart._core.serde import check_version, dumps, every_key, load_error, make_converter
from flowchart._core.spec_shape import check_spec
from flowchart._core.untrusted import check, decoded, parse_proven
from flowchart._core.values import copy_json
from flowchart._record.causal import CausalChain, causal_chain
from flowchart._record.crossing import CrossedChain, why_across
from flowchart._record.record import Record, ShownRecord, Status, SubflowTrace
from flowchart._record.trace_codec import (
    check_log,
    collector_held,
    log_chunks,
    nested_checkpoint,
    no_gc_pauses,
    refuse,
    write_atomically,
)
from flowchart._record.trace_narrative import check_records, file_narrative, register_narrative_hooks
from flowchart._record.trace_parsed import ParsedParts, parsed_trace
from flowchart._version import package_version

if TYPE_CHECKING:
    from flowchart._record.result import RunResult

TRACE_VERSION = 3
RECORDS_VERSION = 2
"""The version whose narrative is a list of record objects (loaded, and saved as version 3)."""
LINES_VERSION = 1
"""The version whose narrative is bare lines (loaded as records of type ``line``)."""


@attrs.frozen
class KeyChange:
    """One top-level key that differs between two states (``Trace.diff``)."""

    key: str
    change: Literal["added", "removed", "changed"]
    before: Any = None
    after: Any = None


@built_on_read("narrative")
@attrs.frozen
class Trace:
    """A saved run. Make one with ``result.trace()`` / ``Trace.from_result(result)``.

    Fields (stable JSON keys, in this order): ``version``, ``library_version``,
    ``run_id``, ``chart_fingerprint``, ``chart_spec`` (``chart.spec``), ``run_input``,
    ``initial_state``, ``commit_log``, ``subflows`` (per mount runtime id, e.g.
    ``"sf#1"``), ``redacted_paths``, ``narrative`` (``NarrativeEntry`` records, or ``None``
    when the run had no narrative recorder; ``narrative_lines`` gives their text),
    ``checkpoint`` (``None`` unless the run paused) and, only for a failed run, ``failure``
    (a ``RunFailure``).
    """

    library_version: str
    run_id: str
    chart_fingerprint: str
    chart_spec: dict[str, Any]
    run_input: dict[str, Any]
    initial_state: dict[str, Any]
    commit_log: list[Commit]
    subflows: dict[str, SubflowTrace] = attrs.Factory(dict)
    redacted_paths: list[str] = attrs.Factory(list)
    narrative: list[NarrativeEntry] | None = None
    checkpoint: Checkpoint | None = None
    version: int = TRACE_VERSION
    failure: RunFailure | None = None

    # -- building -------------------------------------------------------------------------
    @classmethod
    def from_result(cls, result: RunResult) -> Trace:
        """The trace of a finished, paused or failed run: its record, shown (``flowchart._record.record``:
        the one place a run's redaction is applied), in a file."""
        return cls.of(result.record.shown())

    @classmethod
    def of(cls, shown: ShownRecord) -> Trace:
        """The trace file of a shown record (nothing is hidden here: ``shown`` already is)."""
        return cls(
            library_version=package_version(),
            run_id=shown.run_id,
            chart_fingerprint=shown.chart_fingerprint,
            chart_spec=copy_json(shown.chart_spec),
            run_input=dict(shown.input),
            initial_state=dict(shown.initial_state),
            commit_log=list(shown.commits),
            subflows=dict(shown.subflows),
            redacted_paths=list(shown.redacted_paths),
            narrative=None if shown.narrative is None else list(shown.narrative),
            checkpoint=shown.checkpoint,
            failure=shown.failure,
        )

    @property
    def record(self) -> Record:
        """The record this file holds. A file is written from a shown record, so its values are
        hidden already; showing it again hides the same keys (its ``redacted_paths``) and no more."""
        status: Status = "failed" if self.failure is not None else "paused" if self.checkpoint is not None else "done"
        narrative = self.narrative
        return Record(
            run_id=self.run_id,
            chart_fingerprint=self.chart_fingerprint,
            chart_spec=self.chart_spec,
            input=self.run_input,
            initial_state=self.initial_state,
            commits=self.commit_log,
            subflows=self.subflows,
            narrative=None if narrative is None else tuple(narrative),
            checkpoint=self.checkpoint,
            failure=self.failure,
            redacted_paths=self.redacted_paths,
            status=status,
        )

    # -- reading --------------------------------------------------------------------------
    @property
    def narrative_lines(self) -> list[str] | None:
        """The narrative's text, one line per record (``None`` without a narrative)."""
        stored = _NARRATIVE.__get__(self, Trace)
        if type(stored) is NarrativeColumns:  # loaded and not read yet: no record is built for this
            return stored.texts()
        return None if stored is None else [record.text for record in stored]

    @property
    def paused(self) -> bool:
        """True when the run paused (the trace carries its checkpoint)."""
        return self.checkpoint is not None

    @property
    def final_state(self) -> dict[str, Any]:
        """The state at the end of the recorded log (redacted values stay redacted)."""
        return replay(self.commit_log, None, self.initial_state)

    def state_at(self, at: int | None = None) -> dict[str, Any]:
        """The state after commit ``at`` (``-1``: the initial state); ``IndexError`` if no such."""
        return replay(self.commit_log, at, self.initial_state)

    def why(self, key: str, at: int | None = None, **limits: int) -> CausalChain:
        """``causal_chain`` over this trace's log (``max_depth`` / ``max_nodes`` pass through)."""
        started_with = {*self.initial_state, *self.run_input}
        return causal_chain(self.commit_log, key, at, initial=started_with, **limits)

    def why_across(self, key: str, at: int | None = None, *, where: str | None = None) -> CrossedChain:
        """``why`` continued into and out of every subflow mount it meets (``_record/crossing.py``);
        ``where``: start in a subflow's log (its runtime id or mount path) instead of the run's."""
        started_with = {*self.initial_state, *self.run_input}
        return why_across(self.commit_log, key, at, subflows=self.subflows, initial=started_with, where=where)

    def diff(self, a: int, b: int) -> list[KeyChange]:
        """Top-level keys that differ between the states after commits ``a`` and ``b``.

        Keys come in the order of state ``b`` (then the removed ones in the order of
        state ``a``). ``IndexError`` when either index is out of range.
        """
        before, after = self.state_at(a), self.state_at(b)
        changes = []
        for key, value in after.items():
            if key not in before:
                changes.append(KeyChange(key, "added", None, value))
            elif _canonical(before[key]) != _canonical(value):
                changes.append(KeyChange(key, "changed", before[key], value))
        changes.extend(KeyChange(k, "removed", v, None) for k, v in before.items() if k not in after)
        return changes

    # -- persistence ----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """JSON-safe dict with stable keys (a deep copy the caller may change)."""
        return copy_json(self._plain())

    def _plain(self) -> dict[str, Any]:
        """The trace as plain JSON data, built once, sharing the commits' values (never mutate it)."""
        data: dict[str, Any] = {}
        for key in _FIELD_ORDER:
            data[key] = self._plain_field(key)
        if self.failure is not None:  # absent unless the run failed: other traces stay byte-identical
            data["failure"] = CONVERTER.unstructure(self.failure)
        return data

    def _plain_field(self, key: str) -> Any:
        if key == "commit_log":
            return [commit_data(c) for c in self.commit_log]
        if key == "subflows":
            return {
                rid: {
                    "mount_id": sub.mount_id,
                    "runtime_stage_id": sub.runtime_stage_id,
                    "initial_state": sub.initial_state,
                    "commit_log": [commit_data(c) for c in sub.commit_log],
                }
                for rid, sub in self.subflows.items()
            }
        if key == "narrative":
            columns = _narrative_columns(self)
            return None if columns is None else columns.data()
        return CONVERTER.unstructure(getattr(self, key))

    def _chunks(self) -> Iterator[str | bytes]:
        """The JSON text of the trace in pieces; the commit log goes in chunks (``trace_codec.log_chunks``).
        A big piece is written by orjson when it provably writes the same text (``fastjson.dumps_exact``)."""
        yield "{"
        keys = (*_FIELD_ORDER, "failure") if self.failure is not None else _FIELD_ORDER
        for n, key in enumerate(keys):
            yield ("," if n else "") + dumps(key) + ":"
            if key == "commit_log":
                yield from log_chunks(self.commit_log)
                continue
            if key == "narrative":
                columns = _narrative_columns(self)
                if columns is None:
                    yield "null"
                    continue
                data = columns.data()
                yield (dumps_exact(data, proved=True) if available() and columns.plain() else None) or dumps(data)
                continue
            yield dumps(CONVERTER.unstructure(self.failure) if key == "failure" else self._plain_field(key))
        yield "}"

    def to_json(self) -> str:
        """Compact, deterministic JSON text."""
        with collector_held():
            return "".join(c if isinstance(c, str) else c.decode("utf-8") for c in self._chunks())

    @classmethod
    def from_dict(cls, data: Any) -> Trace:
        """Load and validate; raises ``TraceError`` (a ``CheckpointError``) naming the bad field path."""
        with _as_trace_error():
            return structure_trace(data)

    @classmethod
    def from_json(cls, text: str | bytes) -> Trace:
        """Parse JSON text and load it like ``from_dict`` (never executes anything); ``TraceError`` if bad."""
        with _as_trace_error(), no_gc_pauses():
            data, parts = parse_proven(text, what="trace", proof=parsed_trace, fast=True)
            return structure_trace(data, checked=True, parts=parts)

    def save(self, path: str | Path) -> Path:
        """Write the trace as JSON (UTF-8, one trailing newline); return the path.

        The text is streamed to a temporary file beside ``path`` that replaces it once
        complete: a save that fails leaves ``path`` as it was.
        """
        with collector_held():
            return write_atomically(path, self._chunks())

    @classmethod
    def load(cls, path: str | Path) -> Trace:
        """Read a trace file: ``OSError`` if unreadable, ``TraceError`` (a ``CheckpointError``) if invalid.

        Unless orjson reads the file (``fastjson.reads``), the bytes are decoded and let go
        before the parse: the load never holds the file's bytes, its text and its values at once."""
        raw: str | bytes = Path(path).read_bytes()
        if type(raw) is bytes and not reads(len(raw)):
            raw = decoded(raw)  # the only reference to the bytes: they go here
        return cls.from_json(raw)


_FIELD_ORDER = (
    "version",
    "library_version",
    "run_id",
    "chart_fingerprint",
    "chart_spec",
    "run_input",
    "initial_state",
    "commit_log",
    "subflows",
    "redacted_paths",
    "narrative",
    "checkpoint",
)


def _narrative_columns(trace: Trace) -> NarrativeColumns | None:
    """The narrative as a file holds it (columns, ``flowchart._core.narrative_columns``; ``None``
    without one). A loaded narrative nobody read is written from its columns as they are: no
    record is built to save it (and its values were shown to be plain JSON when it was read:
    ``NarrativeColumns.plain``, what orjson writes as ``json`` does)."""
    stored = _NARRATIVE.__get__(trace, Trace)
    if stored is None or type(stored) is NarrativeColumns:
        return stored
    return NarrativeColumns.of_records(stored)


@contextlib.contextmanager
def _as_trace_error() -> Iterator[None]:
    """A ``CheckpointError`` raised while loading a trace becomes a ``TraceError`` (same message, path, detail)."""
    try:
        yield
    except TraceError:
        raise
    except CheckpointError as exc:
        raise TraceError(str(exc), path=exc.path, detail=exc.detail) from None


# -- redaction ----------------------------------------------------------------------------------
def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


# -- the converter --------------------------------------------------------------------------------
def make_trace_converter() -> cattrs.Converter:
    """The checkpoint converter plus commits, ops and traces (every key required but ``value``).

    Built on ``serde.make_converter``, the one factory of the package's strict converters, with
    the checkpoint's hooks (``pause.checkpoint_hooks``); the version check is
    ``serde.check_version``, shared with checkpoints."""
    converter = checkpoint_hooks(make_converter())
    # innermost first: a hook captures its fields' hooks; a commit's decision is optional
    converter.register_structure_hook(Attempt, every_key(Attempt, converter))
    converter.register_structure_hook(
        Commit, every_key(Commit, converter, optional=("decision", "attempts", "recovers"))
    )
    converter.register_structure_hook(RunFailure, every_key(RunFailure, converter))
    converter.register_structure_hook(NarrativeEntry, every_key(NarrativeEntry, converter))
    register_narrative_hooks(converter)
    converter.register_structure_hook(SubflowTrace, every_key(SubflowTrace, converter))
    converter.register_structure_hook(Trace, every_key(Trace, converter, optional=("failure",)))
    converter.register_unstructure_hook(RunFailure, RunFailure.to_dict)
    converter.register_unstructure_hook(Commit, Commit.to_dict)
    converter.register_unstructure_hook(Op, Op.to_dict)
    converter.register_unstructure_hook(Checkpoint, Checkpoint.to_dict)
    return converter


CONVERTER = make_trace_converter()


def structure_columns(raw: Any) -> NarrativeColumns | None:
    """A narrative in columns (a version-3 trace's, a stored run's) read by the converter:
    ``CheckpointError`` naming the field (``$.narrative.depth[2]``) when it is not."""
    return file_narrative(CONVERTER, raw, lines=False)


def structure_trace(data: Any, *, checked: bool = False, parts: ParsedParts | None = None) -> Trace:
    """JSON-safe dict → Trace, validated field by field (fail closed). ``checked``: ``data``
    came from ``untrusted.parse_proven``, which already held it to the limits of
    ``flowchart._core.untrusted``; ``parts``: what its proof (``trace_parsed.parsed_trace``) already
    structured by the strict fast passes, sharing the freshly parsed values (nobody else
    holds them); the converter structures the rest. A narrative read as columns is checked
    here (``check_columns``) and kept as columns: its records are built when first read."""
    if not isinstance(data, dict):
        raise CheckpointError(f"Invalid trace: expected an object, got {type(data).__name__} @ $", path="$")
    if not checked:
        check(data, what="trace")
    check_version(data, "trace", TRACE_VERSION, LINES_VERSION, RECORDS_VERSION)
    version = data.get("version")
    spec, fingerprint = data.get("chart_spec"), data.get("chart_fingerprint")
    if type(spec) is dict and type(fingerprint) is str:  # the fingerprint first, then the spec's shape
        if spec_fingerprint(spec) != fingerprint:
            raise refuse("chart_spec does not match chart_fingerprint", "$.chart_fingerprint")
        check_spec(spec)
    body = dict(data)
    if type(version) is int:
        body["version"] = TRACE_VERSION  # an older file loads as the current version (and saves as one)
    columns: NarrativeColumns | None = parts.narrative if parts is not None else None
    taken = columns is not None  # by the file version's strict pass (``parsed_trace``)
    if not taken and "narrative" in data and version in (LINES_VERSION, TRACE_VERSION):
        columns, taken = file_narrative(CONVERTER, data["narrative"], lines=version == LINES_VERSION), True
    elif type(version) is not int:
        taken = "narrative" in data  # no version names its form: the version's own error alone
    if taken:
        body["narrative"] = None
    raw_checkpoint = body.get("checkpoint")
    if "checkpoint" in body:
        body["checkpoint"] = None
    log = parts.commit_log if parts is not None else None
    if log is not None:
        body["commit_log"] = []  # checked already; the converter checks the rest
    try:
        trace = CONVERTER.structure(body, Trace)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "trace") from None
    if log is not None or raw_checkpoint is not None:
        trace = attrs.evolve(
            trace,
            commit_log=trace.commit_log if log is None else log,
            checkpoint=None if raw_checkpoint is None else nested_checkpoint(raw_checkpoint),
        )
    if taken:
        _NARRATIVE.__set__(trace, columns)
    _check_consistency(trace, record_path if version == RECORDS_VERSION else column_path)
    return trace


def _check_consistency(trace: Trace, narrative_path: Callable[[str, int], str]) -> None:
    check_log(trace.commit_log, "$.commit_log")
    for rid, sub in trace.subflows.items():
        if sub.runtime_stage_id != rid:
            raise refuse(
                f"subflow '{rid}' says it is '{sub.runtime_stage_id}'",
                f"$.subflows[{json.dumps(rid)}].runtime_stage_id",
            )
        check_log(sub.commit_log, f"$.subflows[{json.dumps(rid)}].commit_log")
    stored = _NARRATIVE.__get__(trace, Trace)
    if type(stored) is NarrativeColumns:  # checked without building a record
        check_columns(stored, narrative_path)
    else:
        check_records(stored or [])
    cp = trace.checkpoint
    if cp is not None and cp.chart_fingerprint != trace.chart_fingerprint:
        raise refuse("the checkpoint belongs to another chart", "$.checkpoint.chart_fingerprint")


_NARRATIVE = stored_slot(Trace, "narrative")
"""``Trace.narrative``'s slot: a loaded trace keeps its checked columns there until it is read."""


def shown_of(source: Any) -> ShownRecord | None:
    """The shown record of any source of a run — a ``ShownRecord``, a ``Record``, a ``Trace``, a
    trace file path, or anything with a ``.record`` (a ``RunResult``, a stored ``RunRecord``, an
    agent's snapshot) — or ``None`` when ``source`` is none of these (the caller names the error)."""
    if isinstance(source, ShownRecord):
        return source
    if isinstance(source, str | Path):
        source = Trace.load(source)
    if isinstance(source, Trace):
        return source.record.shown()
    if isinstance(source, Record):
        return source.shown()
    found = getattr(source, "record", None)
    return found.shown() if isinstance(found, Record) else None


__all__ = ["CONVERTER", "TRACE_VERSION", "KeyChange", "SubflowTrace", "Trace", "shown_of", "spec_fingerprint"]
