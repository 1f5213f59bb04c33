"""A trace file's narrative as columns (version 3), checked at load and built into records on
first read: what a reader sees is what was saved, and a bad narrative is refused by the load."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import narrative_entries
from trace_versions import as_version_1, as_version_2

from flowchart import Trace, flow_chart, narrative
from flowchart._core import fastjson
from flowchart._core.errors import CheckpointError
from flowchart._core.narrative_columns import NarrativeColumns
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._record.trace import _NARRATIVE, TRACE_VERSION


def _trace() -> Trace:
    def work(scope: Any, ctx: Any) -> None:
        scope.n = getattr(scope, "n", 0) + 1
        if scope.n >= 3:
            ctx.stop()

    return (
        flow_chart("Work", work, "work").loop_to("work").build().run(recorders=[narrative()], max_iterations=4).trace()
    )


BASE = _trace()
NAMES = st.none() | st.text(max_size=6)
RECORDS = st.lists(narrative_entries(NAMES, max_depth=3, steps=st.integers(-(2**70), 2**70)), max_size=12)


def _with(records: list[NarrativeEntry] | None) -> Trace:
    return attrs.evolve(Trace.from_dict(BASE.to_dict()), narrative=records)


@pytest.mark.parametrize("stdlib", [True, False], ids=["json", "orjson"])
@settings(max_examples=60, deadline=None)
@given(records=st.none() | RECORDS)
def test_a_narrative_built_on_first_read_equals_the_saved_records(stdlib: bool, records: Any) -> None:
    """Random narratives, saved and loaded with or without orjson: the loaded trace holds checked
    columns and no record until ``narrative`` is read; then the records equal the saved ones
    (type, depth, text, every stage id, step numbers past 64 bits), ``narrative_lines`` equals
    their text without building them, and an unread narrative saves to the same bytes."""
    trace = _with(records)
    text = trace.to_json()
    with fastjson.stdlib_only() if stdlib else contextlib.nullcontext():
        loaded = Trace.from_json(text.encode())
    stored = _NARRATIVE.__get__(loaded, Trace)
    assert stored is None if records is None else type(stored) is NarrativeColumns
    assert loaded.narrative_lines == (None if records is None else [r.text for r in records])
    assert _NARRATIVE.__get__(loaded, Trace) is stored  # the lines built no record
    assert loaded.to_json() == text  # saved from its columns, as they are
    assert loaded.narrative == records
    assert _NARRATIVE.__get__(loaded, Trace) == records  # built once, kept
    assert loaded == trace and loaded.to_json() == text


def test_a_trace_file_keeps_its_narrative_as_columns_in_field_order() -> None:
    """Version 3 writes one list per record field, keys once, in the record's field order."""
    data = json.loads(BASE.to_json())
    assert data["version"] == TRACE_VERSION == 3
    records = BASE.narrative or []
    assert list(data["narrative"]) == [
        "type",
        "depth",
        "text",
        "stage_name",
        "stage_id",
        "runtime_stage_id",
        "subflow_id",
        "key",
        "step_number",
    ]
    assert data["narrative"]["text"] == [r.text for r in records]
    assert data["narrative"]["step_number"] == [r.step_number for r in records]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (
            lambda n: n["type"].__setitem__(1, "poem"),
            r"unknown narrative record type 'poem' .* @ \$\.narrative\.type\[1\]$",
        ),
        (lambda n: n["depth"].__setitem__(2, -1), r"a narrative depth is 0 or more @ \$\.narrative\.depth\[2\]$"),
        (
            lambda n: n["stage_id"].pop(),
            r"narrative column 'stage_id' has \d+ values where 'type' has \d+ .* @ \$\.narrative\.stage_id$",
        ),
        (lambda n: n["text"].__setitem__(0, None), r"expected a string, got null @ \$\.narrative\.text\[0\]$"),
    ],
)
@pytest.mark.parametrize("stdlib", [True, False], ids=["json", "orjson"])
def test_a_bad_narrative_is_refused_by_the_load_not_when_it_is_read(
    tmp_path: Path, change: Any, match: str, stdlib: bool
) -> None:
    """A narrative column of an unknown type, a negative depth, a missing value or a wrong JSON
    type: ``Trace.load`` refuses the file naming the value (records are built later, so the
    check cannot wait for them)."""
    data = json.loads(BASE.to_json())
    change(data["narrative"])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
    with fastjson.stdlib_only() if stdlib else contextlib.nullcontext(), pytest.raises(CheckpointError, match=match):
        Trace.load(path)


@pytest.mark.parametrize("old", [as_version_1, as_version_2], ids=["version 1", "version 2"])
def test_an_older_file_still_loads_and_saves_as_version_3(tmp_path: Path, old: Any) -> None:
    """A file from before the columns (version 2: records; version 1: bare lines) loads from disk;
    its records are what that version held (lines: type ``line``, no stage), and it saves as
    today's file, which loads back to the same trace."""
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old(json.loads(BASE.to_json()))), encoding="utf-8")
    loaded = Trace.load(path)
    if old is as_version_2:
        assert loaded.narrative == BASE.narrative
    else:
        assert loaded.narrative == [NarrativeEntry("line", 0, line) for line in BASE.narrative_lines or []]
    assert loaded.version == TRACE_VERSION
    again = Trace.load(loaded.save(tmp_path / "again.json"))
    assert again == loaded and json.loads(again.to_json())["version"] == 3
