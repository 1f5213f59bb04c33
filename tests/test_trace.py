"""``Trace``: a run saved as JSON and loaded back, fail closed like a checkpoint."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import chart_specs, checkpoints, json_values, narrative_entries
from trace_versions import as_version_2

import flowchart
from flowchart import (
    CheckpointError,
    Commit,
    FlowChart,
    Pausable,
    Redaction,
    Trace,
    flow_chart,
    narrative,
    replay,
)
from flowchart._core.commits import Op
from flowchart._core.narrative_entry import RECORD_TYPES
from flowchart._record.record import SubflowTrace
from flowchart._record.trace import TRACE_VERSION, KeyChange, spec_fingerprint
from flowchart.recorders import NarrativeEntry

REJECTED = {"applicant": {"income": 5000, "debt": 2500, "credit_score": 720}}


def paused_chart() -> FlowChart:
    """App writes ssn and amount, a subflow adds y, then Approve pauses."""

    def app(scope: Any) -> None:
        scope.ssn = "123-45-6789"
        scope.amount = 10

    def add_one(scope: Any) -> None:
        scope.y = scope.x + 1

    sub = flow_chart("AddOne", add_one, "add").build()
    return (
        flow_chart("App", app, "app")
        .add_subflow_chart_next(
            "sf",
            sub,
            mount_name="Sf",
            input_mapper=lambda p: {"x": p["amount"]},
            output_mapper=lambda o, p: {"y": o["y"]},
        )
        .add_pausable_function(
            "Approve",
            Pausable(execute=lambda s: {"question": "ok?"}, resume=lambda s, i: setattr(s, "ok", i)),
            "approve",
        )
        .build()
    )


def without_run_ids(data: dict[str, Any]) -> dict[str, Any]:
    """The trace dict minus what legitimately differs between runs."""
    data = dict(data, run_id="")
    if data["checkpoint"] is not None:
        data["checkpoint"] = dict(data["checkpoint"], run_id="", paused_at=0)
    return data


# -- building ----------------------------------------------------------------------------------
def test_a_trace_holds_spec_log_narrative_and_version(loan_chart: FlowChart) -> None:
    """``result.trace()`` carries the chart spec, the log, the narrative lines and the version."""
    rec = narrative()
    result = loan_chart.run(REJECTED, recorders=[rec])
    trace = result.trace()
    assert trace.chart_spec == loan_chart.spec and trace.chart_fingerprint == loan_chart.fingerprint
    assert trace.commit_log == result.commit_log
    assert trace.narrative == rec.records()
    assert trace.narrative_lines == rec.lines()
    assert (trace.library_version, trace.run_id, trace.version) == (
        flowchart.__version__,
        result.run_id,
        TRACE_VERSION,
    )
    assert (trace.run_input, trace.initial_state, trace.checkpoint, trace.paused) == (
        REJECTED,
        {},
        None,
        False,
    )


def test_without_a_narrative_recorder_the_narrative_is_none(loan_chart: FlowChart) -> None:
    """No recorder with ``lines()`` → ``narrative is None``."""
    assert loan_chart.run(REJECTED, recorders=[object()]).trace().narrative is None


def test_the_commit_log_keeps_its_read_sets_in_json(loan_chart: FlowChart) -> None:
    """Reads are part of each recorded commit (backtracking needs them)."""
    data = json.loads(loan_chart.run(REJECTED).trace().to_json())
    assert data["commit_log"][2]["reads"] == ["credit_score", "dti"]
    assert list(data) == [
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
    ]


def test_replay_and_why_work_on_the_trace(loan_chart: FlowChart) -> None:
    """``final_state``, ``state_at`` and ``why`` answer from the recorded log."""
    result = loan_chart.run(REJECTED)
    trace = result.trace()
    assert trace.final_state == result.state
    assert trace.state_at(1) == replay(result.commit_log, 1)
    assert trace.state_at(-1) == {}
    assert trace.why("approved").nodes[0].runtime_stage_id == "reject#4"


def test_diff_lists_added_removed_and_changed_keys() -> None:
    """``diff(a, b)``: added/changed keys in ``b``'s order, then the removed ones."""
    log = [
        Commit(0, "A", "a", "a#0", (Op(("x",), "set", 1), Op(("gone",), "set", 0))),
        Commit(
            1,
            "B",
            "b",
            "b#1",
            (Op(("x",), "set", 2), Op(("new",), "set", [1]), Op(("gone",), "delete")),
        ),
    ]
    spec = {"root": "a", "name": "A", "stages": []}
    trace = Trace("0", "r", spec_fingerprint(spec), spec, {}, {}, log)
    assert trace.diff(0, 1) == [
        KeyChange("x", "changed", 1, 2),
        KeyChange("new", "added", None, [1]),
        KeyChange("gone", "removed", 0, None),
    ]
    assert trace.diff(1, 1) == []


def test_a_paused_run_keeps_its_checkpoint_and_subflow_logs() -> None:
    """A paused trace has the checkpoint; each subflow run is kept by its mount's runtime id."""
    result = paused_chart().run(recorders=[narrative()])
    trace = result.trace()
    assert trace.paused and trace.checkpoint is not None
    assert trace.checkpoint.paused_stage_id == "approve"
    assert list(trace.subflows) == ["sf#1"]
    sub = trace.subflows["sf#1"]
    assert (sub.mount_id, sub.initial_state, [c.stage_id for c in sub.commit_log]) == (
        "sf",
        {"x": 10},
        ["sf/add"],
    )
    assert Trace.from_json(trace.to_json()) == trace


def test_redacted_values_stay_hidden_in_the_trace() -> None:
    """The log, the checkpoint state and the replayed final state show ``REDACTED``."""
    result = paused_chart().run(redaction=Redaction(keys={"ssn"}))
    trace = result.trace()
    assert result.state["ssn"] == "123-45-6789"
    assert trace.checkpoint is not None and trace.checkpoint.shared_state["ssn"] == "REDACTED"
    assert trace.final_state["ssn"] == "REDACTED"
    assert "123-45-6789" not in trace.to_json()
    assert result.checkpoint is not None and result.checkpoint.shared_state["ssn"] == "123-45-6789"


def test_a_resumed_run_hides_secrets_of_its_initial_state() -> None:
    """A resume that never rewrites ``ssn`` still must not leak it through ``initial_state``."""
    chart = paused_chart()
    first = chart.run(redaction=Redaction(keys={"ssn"}))
    assert first.checkpoint is not None
    resumed = chart.resume(first.checkpoint, True, redaction=Redaction(keys={"ssn"}))
    assert "123-45-6789" not in resumed.trace().to_json()


def test_two_runs_give_the_same_trace_but_for_run_ids(loan_chart: FlowChart) -> None:
    """Determinism: only ``run_id`` (and a checkpoint's ``run_id``/``paused_at``) differ."""
    one = loan_chart.run(REJECTED, recorders=[narrative()]).trace().to_dict()
    two = loan_chart.run(REJECTED, recorders=[narrative()]).trace().to_dict()
    assert one["run_id"] != two["run_id"]
    assert without_run_ids(one) == without_run_ids(two)
    chart = paused_chart()
    assert without_run_ids(chart.run().trace().to_dict()) == without_run_ids(chart.run().trace().to_dict())


# -- saving and loading ------------------------------------------------------------------------
def test_save_and_load_round_trip(loan_chart: FlowChart, tmp_path: Path) -> None:
    """``save`` writes one JSON line; ``load`` gives back an equal trace."""
    trace = loan_chart.run(REJECTED, recorders=[narrative()]).trace()
    path = trace.save(tmp_path / "run.json")
    assert path.read_text(encoding="utf-8").count("\n") == 1
    assert Trace.load(path) == trace
    assert Trace.load(str(path)).to_dict() == trace.to_dict()


def test_loading_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    """An unreadable path is an ``OSError``, not a ``CheckpointError``."""
    with pytest.raises(FileNotFoundError):
        Trace.load(tmp_path / "nope.json")


def test_loading_text_that_is_not_json_is_refused() -> None:
    """Bad JSON names the position."""
    with pytest.raises(CheckpointError, match=r"^Invalid trace: not JSON \(Expecting value: line 1 column 1"):
        Trace.from_json("nope")


def _good() -> dict[str, Any]:
    return paused_chart().run(recorders=[narrative()]).trace().to_dict()


def _set(path: list[Any], value: Any) -> Any:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = value

    return mutate


def _pop(path: list[Any]) -> Any:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for step in path[:-1]:
            target = target[step]
        del target[path[-1]]

    return mutate


def _v2(mutate: Any) -> Any:
    """``mutate`` applied to the trace written as a version-2 file (the narrative a list of records)."""

    def on_version_2(data: dict[str, Any]) -> None:
        old = as_version_2(data)
        data.clear()
        data.update(old)
        mutate(data)

    return on_version_2


def _v1_records(data: dict[str, Any]) -> None:
    """A version-1 file whose narrative holds whole records, not lines (loaded with an empty
    narrative by ``from_json`` before: its record pass ran whatever the version)."""
    data.update(as_version_2(data), version=1)
    del data["narrative"][1:]


SF = '$.subflows["sf#1"]'
CL = "$.commit_log"
CP = "$.checkpoint"
BROKEN = [
    (_set(["version"], 4), "$.version", "unsupported version 4 @ $.version (this library reads versions 1, 2 and 3)"),
    (_set(["version"], "1"), "$.version", "expected an integer, got a string @ $.version"),
    (_set(["library_version"], 1), "$.library_version", "expected a string, got an integer @ $.library_version"),
    (_set(["run_id"], None), "$.run_id", "expected a string, got null @ $.run_id"),
    (
        _set(["chart_fingerprint"], "0" * 64),
        "$.chart_fingerprint",
        "chart_spec does not match chart_fingerprint @ $.chart_fingerprint",
    ),
    (_set(["chart_spec"], []), "$.chart_spec", "expected an object, got a list @ $.chart_spec"),
    (
        _set(["chart_spec", "name"], "Other"),
        "$.chart_fingerprint",
        "chart_spec does not match chart_fingerprint @ $.chart_fingerprint",
    ),
    (_set(["run_input"], "x"), "$.run_input", "expected an object, got a string @ $.run_input"),
    (
        _set(["initial_state"], {"a": {1, 2}}),
        "$.initial_state.a",
        "expected a JSON value: a set is not JSON-safe @ $.initial_state.a",
    ),
    (_set(["commit_log"], {}), CL, f"expected a list, got an object @ {CL}"),
    (_set(["commit_log", 0, "idx"], True), f"{CL}[0].idx", f"expected an integer, got a boolean @ {CL}[0].idx"),
    (_set(["commit_log", 1, "idx"], 7), f"{CL}[1].idx", f"commit idx 7 is not its position 1 @ {CL}[1].idx"),
    (_set(["commit_log", 0, "reads"], "ab"), f"{CL}[0].reads", f"expected a list, got a string @ {CL}[0].reads"),
    (_pop(["commit_log", 0, "reads"]), f"{CL}[0].reads", f"required key missing @ {CL}[0].reads"),
    (
        _set(["commit_log", 0, "trace", 0, "verb"], "put"),
        f"{CL}[0].trace[0].verb",
        f"expected one of 'set', 'merge', 'append', 'delete', got 'put' @ {CL}[0].trace[0].verb",
    ),
    (
        _set(["commit_log", 0, "trace", 0, "path"], []),
        f"{CL}[0].trace[0].path",
        f"an op path must not be empty @ {CL}[0].trace[0].path",
    ),
    (_set(["commit_log", 0, "trace", 0, "extra"], 1), f"{CL}[0].trace[0]", f"unknown key(s) extra @ {CL}[0].trace[0]"),
    (_set(["subflows"], []), "$.subflows", "expected an object, got a list @ $.subflows"),
    (
        _set(["subflows", "sf#1", "runtime_stage_id"], "sf#9"),
        f"{SF}.runtime_stage_id",
        f"subflow 'sf#1' says it is 'sf#9' @ {SF}.runtime_stage_id",
    ),
    (
        _set(["subflows", "sf#1", "commit_log", 0, "stage"], 3),
        f"{SF}.commit_log[0].stage",
        f"expected a string, got an integer @ {SF}.commit_log[0].stage",
    ),
    (_set(["redacted_paths"], [1]), "$.redacted_paths[0]", "expected a string, got an integer @ $.redacted_paths[0]"),
    # a version-3 file: the narrative as columns
    (_set(["narrative"], [1]), "$.narrative", "expected an object, got a list @ $.narrative"),
    (
        _set(["narrative", "text"], "Stage 1: A."),
        "$.narrative.text",
        "expected a list, got a string @ $.narrative.text",
    ),
    (
        _set(["narrative", "depth", 1], "1"),
        "$.narrative.depth[1]",
        "expected an integer, got a string @ $.narrative.depth[1]",
    ),
    (
        _set(["narrative", "step_number", 0], True),
        "$.narrative.step_number[0]",
        "expected an integer, got a boolean @ $.narrative.step_number[0]",
    ),
    (
        _set(["narrative", "type", 1], "poem"),
        "$.narrative.type[1]",
        "unknown narrative record type 'poem' (one of answer, break, condition, emit, error, fork, line, loop, map, "
        "note, pause, resume, retry, selector, stage, step, subflow) @ $.narrative.type[1]",
    ),
    (
        _set(["narrative", "depth", 2], -1),
        "$.narrative.depth[2]",
        "a narrative depth is 0 or more @ $.narrative.depth[2]",
    ),
    (
        _pop(["narrative", "runtime_stage_id"]),
        "$.narrative.runtime_stage_id",
        "required key missing @ $.narrative.runtime_stage_id",
    ),
    (_set(["narrative", "extra"], []), "$.narrative", "unknown key(s) extra @ $.narrative"),
    (
        lambda d: d["narrative"]["key"].pop(),
        "$.narrative.key",
        "narrative column 'key' has 9 values where 'type' has 10 (one value per record in every column) "
        "@ $.narrative.key",
    ),
    # a version-2 file: the narrative as a list of records
    (_v2(_set(["narrative"], [1])), "$.narrative[0]", "expected an object, got an integer @ $.narrative[0]"),
    (_v2(_set(["narrative"], ["Stage 1: A."])), "$.narrative[0]", "expected an object, got a string @ $.narrative[0]"),
    (
        _v2(_set(["narrative", 0, "type"], "poem")),
        "$.narrative[0].type",
        "unknown narrative record type 'poem' (one of answer, break, condition, emit, error, fork, line, loop, map, "
        "note, pause, resume, retry, selector, stage, step, subflow) @ $.narrative[0].type",
    ),
    (
        _v2(_set(["narrative", 0, "depth"], -1)),
        "$.narrative[0].depth",
        "a narrative depth is 0 or more @ $.narrative[0].depth",
    ),
    (
        _v2(_pop(["narrative", 0, "runtime_stage_id"])),
        "$.narrative[0].runtime_stage_id",
        "required key missing @ $.narrative[0].runtime_stage_id",
    ),
    (_v2(_set(["narrative", 0, "extra"], 1)), "$.narrative[0]", "unknown key(s) extra @ $.narrative[0]"),
    (_v2(_set(["narrative"], "text")), "$.narrative", "expected a list, got a string @ $.narrative"),
    # a version-1 file: bare lines (a record is not a line)
    (
        lambda d: d.update(version=1, narrative=[{"text": "Stage 1: A."}]),
        "$.narrative[0]",
        "expected a string, got an object @ $.narrative[0]",
    ),
    (_v1_records, "$.narrative[0]", "expected a string, got an object @ $.narrative[0]"),
    (_pop(["narrative"]), "$.narrative", "required key missing @ $.narrative"),
    (_set(["surprise"], 1), "$", "unknown key(s) surprise @ $"),
    (_set(["checkpoint"], []), CP, f"checkpoint: expected an object, got a list @ {CP}"),
    (
        _set(["checkpoint", "frames"], []),
        f"{CP}.frames",
        f"checkpoint: frames must not be empty (the last frame is the paused stage) @ {CP}.frames",
    ),
    (
        _set(["checkpoint", "execution_count"], "4"),
        f"{CP}.execution_count",
        f"checkpoint: expected an integer, got a string @ {CP}.execution_count",
    ),
    (
        _set(["checkpoint", "chart_fingerprint"], "f" * 64),
        f"{CP}.chart_fingerprint",
        f"the checkpoint belongs to another chart @ {CP}.chart_fingerprint",
    ),
]


@pytest.mark.parametrize(("mutate", "path", "message"), BROKEN, ids=[b[2][:48] for b in BROKEN])
def test_each_broken_field_is_refused_naming_its_path(mutate: Any, path: str, message: str) -> None:
    """Fail closed: a wrong field raises ``CheckpointError`` naming it in message and ``path``,
    from a dict and from the file's text alike (the text takes the strict passes first)."""
    data = _good()
    mutate(data)
    with pytest.raises(CheckpointError, match="^" + re.escape("Invalid trace: " + message) + "$") as caught:
        Trace.from_dict(data)
    assert caught.value.path == path
    try:
        text = json.dumps(data)
    except TypeError:  # a value JSON cannot hold (the set): only a dict can carry it
        return
    with pytest.raises(CheckpointError, match="^" + re.escape("Invalid trace: " + message) + "$") as caught:
        Trace.from_json(text)
    assert caught.value.path == path


def test_a_non_object_is_refused() -> None:
    """The top level must be a JSON object."""
    with pytest.raises(CheckpointError, match=r"^Invalid trace: expected an object, got list @ \$$"):
        Trace.from_dict([])


# -- round trip property -----------------------------------------------------------------------
JSON = json_values(max_leaves=8)
NAMES = st.text("abcxyz_", min_size=1, max_size=6)


@st.composite
def ops(draw: st.DrawFn) -> Op:
    """One op: a non-empty path, a verb, a value (none for delete)."""
    verb = draw(st.sampled_from(["set", "merge", "append", "delete"]))
    path = tuple(draw(st.lists(NAMES, min_size=1, max_size=3)))
    if verb == "delete":
        return Op(path, verb, None)
    return Op(path, verb, draw(st.lists(JSON, max_size=3)) if verb == "append" else draw(JSON))


@st.composite
def commit_logs(draw: st.DrawFn) -> list[Commit]:
    """A log of up to five commits with consistent indexes."""
    out = []
    for idx in range(draw(st.integers(0, 5))):
        name = draw(NAMES)
        out.append(
            Commit(
                idx,
                name,
                name,
                f"{name}#{idx}",
                tuple(draw(st.lists(ops(), max_size=3))),
                tuple(draw(st.lists(NAMES, max_size=3, unique=True))),
                tuple(draw(st.lists(NAMES, max_size=2))),
            )
        )
    return out


def narrative_records() -> st.SearchStrategy[NarrativeEntry]:
    """Valid narrative records: a known type, depth 0 or 1, any text, stage ids or none."""
    return narrative_entries(st.none() | NAMES)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    """Random, valid traces (a checkpoint, when present, names the trace's chart)."""
    spec = draw(chart_specs())
    fingerprint = spec_fingerprint(spec)
    checkpoint = draw(st.none() | checkpoints())
    if checkpoint is not None:
        checkpoint = attrs.evolve(checkpoint, chart_fingerprint=fingerprint)
    rids = draw(st.lists(NAMES.map(lambda n: n + "#1"), max_size=2, unique=True))
    states = st.dictionaries(NAMES, JSON, max_size=3)
    subflows = {rid: SubflowTrace(rid[:-2], rid, draw(states), draw(commit_logs())) for rid in rids}
    return Trace(
        library_version=draw(NAMES),
        run_id=draw(NAMES),
        chart_fingerprint=fingerprint,
        chart_spec=spec,
        run_input=draw(states),
        initial_state=draw(states),
        commit_log=draw(commit_logs()),
        subflows=subflows,
        redacted_paths=draw(st.lists(NAMES, max_size=2)),
        narrative=draw(st.none() | st.lists(narrative_records(), max_size=4)),
        checkpoint=checkpoint,
    )


@settings(max_examples=75, deadline=None)
@given(trace=traces())
def test_structure_of_unstructure_is_identity(trace: Trace) -> None:
    """Property: any valid trace survives ``to_json`` → ``from_json`` unchanged."""
    assert Trace.from_json(trace.to_json()) == trace
    assert Trace.from_dict(json.loads(json.dumps(trace.to_dict()))).to_dict() == trace.to_dict()


def test_every_record_type_the_narrative_writes_loads_back() -> None:
    """The trace loader's list of record types holds every type the narrative recorder pushes
    (read from its source), so a new kind of line cannot make its own traces unreadable."""
    source = (Path(flowchart.__file__).parent / "recorders" / "narrative.py").read_text(encoding="utf-8")
    pushed = set(re.findall(r'_push\(\s*"([a-z_]+)"', source)) | set(re.findall(r'push\(\("([a-z_]+)"', source))
    assert pushed and pushed <= RECORD_TYPES
