"""A trace's narrative as the file versions hold it, read by the converter, and as a run tells it.

Laws:
- Each file version's narrative is read in its own form, never another's: version 1 as bare
  lines (records of type ``line``, no stage), version 2 as a list of record objects, version 3
  as columns (``flowchart._core.narrative_columns``). What the strict passes (``trace_parsed``) do not
  take, the converter reads here, naming the bad field (``$.narrative.depth[2]``,
  ``$.narrative[0].type``); a version-2 narrative the converter read is checked by
  ``check_records`` as columns are by ``check_columns`` (a known type, a depth of 0 or more).
- A run's narrative is the records of its first recorder that keeps one (``narrative_of``).
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from flowchart._core.narrative_columns import NarrativeColumns
from flowchart._core.narrative_entry import RECORD_TYPES, NarrativeEntry
from flowchart._core.serde import every_key, load_error
from flowchart._record.trace_codec import refuse


@attrs.define
class _Lines:
    """A version-1 trace's narrative: bare lines."""

    narrative: list[str] | None


@attrs.define
class _Columns:
    """A version-3 trace's narrative as the converter reads it (``narrative_columns.FIELDS``)."""

    type: list[str]
    depth: list[int]
    text: list[str]
    stage_name: list[str | None]
    stage_id: list[str | None]
    runtime_stage_id: list[str | None]
    subflow_id: list[str | None]
    key: list[str | None]
    step_number: list[int | None]


@attrs.define
class _ColumnsFile:
    narrative: _Columns | None


def register_narrative_hooks(converter: cattrs.Converter) -> None:
    """Teach the trace converter the narrative forms of versions 1 and 3 (every key required)."""
    for form in (_Lines, _Columns, _ColumnsFile):
        converter.register_structure_hook(form, every_key(form, converter))


def file_narrative(converter: cattrs.Converter, raw: Any, *, lines: bool) -> NarrativeColumns | None:
    """A version-1 (``lines``) or version-3 (columns) narrative that no strict pass took, read by
    the converter: a wrong shape or type is refused naming its path."""
    try:
        if lines:
            told = converter.structure({"narrative": raw}, _Lines).narrative
            return None if told is None else NarrativeColumns.of_lines(told)
        columns = converter.structure({"narrative": raw}, _ColumnsFile).narrative
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "trace") from None
    return None if columns is None else NarrativeColumns(tuple(attrs.astuple(columns, recurse=False)))


_record_type = attrgetter("type")
_record_depth = attrgetter("depth")


def check_records(records: list[NarrativeEntry]) -> None:
    """``check_columns`` for a version-2 narrative the converter structured as records."""
    kinds, depths = set(map(_record_type, records)), list(map(_record_depth, records))
    if kinds <= RECORD_TYPES and min(depths, default=0) >= 0:
        return  # all plainly right: no record to name
    for n, record in enumerate(records):
        if record.type not in RECORD_TYPES:
            known = ", ".join(sorted(RECORD_TYPES))
            raise refuse(f"unknown narrative record type {record.type!r} (one of {known})", f"$.narrative[{n}].type")
        if record.depth < 0:
            raise refuse("a narrative depth is 0 or more", f"$.narrative[{n}].depth")


def narrative_of(recorders: Any) -> list[NarrativeEntry] | None:
    """The records of the first recorder that keeps a narrative (bare ``lines()``: type ``line``)."""
    for recorder in recorders:
        records = getattr(recorder, "records", None)
        if callable(records):
            return list(records())
        lines = getattr(recorder, "lines", None)
        if callable(lines):
            return [NarrativeEntry("line", 0, str(line)) for line in lines()]
    return None


__all__ = ["check_records", "file_narrative", "narrative_of", "register_narrative_hooks"]
