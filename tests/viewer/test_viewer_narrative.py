"""The viewer places narrative records by the stage that told them, never by their wording."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from viewer_traces import loan_trace, support_traces

from flowchart import Trace, flow_chart, narrative
from flowchart._record.trace import TRACE_VERSION
from flowchart.cli import main as flowchart_main
from flowchart.recorders import NarrativeEntry
from flowchart.viewer import build_payload
from flowchart.viewer.narrative import commit_records


class Reworded:
    """A renderer that rewords every stage line and every step (the structure stays the engine's)."""

    def render_stage(self, ctx: Any) -> str:
        return f"Etapa {ctx.stage_number}: {ctx.stage_name}"

    def render_op(self, ctx: Any) -> str:
        return f"Paso {ctx.step_number}: {ctx.type} {ctx.key}"


def test_the_decider_commit_gets_its_condition_record() -> None:
    """The loan run: every commit has records; Route's decision is its ``condition`` record."""
    trace = loan_trace()
    payload = build_payload(trace)
    assert all(payload["blocks"])
    route = next(c.idx for c in trace.commit_log if c.stage_id == "route")
    assert payload["narrative"][payload["decisions"][route]][0] == "condition"
    assert payload["narrative"][payload["decisions"][route]][2].startswith("[Condition]: It evaluated Rule 0")
    assert [payload["decisions"][i] for i in range(len(trace.commit_log)) if i != route] == [None] * (
        len(trace.commit_log) - 1
    )


def test_rewording_every_sentence_moves_no_line() -> None:
    """The same chart run with a renderer that rewords each stage and step line: the same
    records land on the same commits, the headline and decision are the same records."""
    from examples import loan

    plain = loan.chart.run({"applicant": loan.APPLICANT}, recorders=[narrative()]).trace()
    other = loan.chart.run({"applicant": loan.APPLICANT}, recorders=[narrative(renderer=Reworded())]).trace()
    assert plain.narrative_lines != other.narrative_lines  # the words did change
    one, two = build_payload(plain), build_payload(other)
    assert two["blocks"] == one["blocks"]
    assert two["headlines"] == one["headlines"] and two["decisions"] == one["decisions"]
    assert any(two["narrative"][h][2].startswith("Etapa ") for h in two["headlines"] if h is not None)


def test_subflow_records_belong_to_the_mount_commit() -> None:
    """The resumed demo: PrepareFinal's and BreakFinal's records, told inside the ``final``
    subflow, sit on the mount's commit, between its ``Entering`` and ``Exiting`` records."""
    _, resumed = support_traces()
    records = resumed.narrative or []
    blocks = commit_records(records, resumed.commit_log, resumed.subflows)
    mount = next(c.idx for c in resumed.commit_log if c.stage_id == "final")
    texts = [records[i].text for i in blocks[mount]]
    assert texts[0] == "Entering the Final subflow." and texts[-1] == "Exiting the Final subflow."
    assert "Stage 1: The process began with final/PrepareFinal." in texts
    assert sorted(i for block in blocks for i in block) == list(range(len(records)))  # each record once


def test_a_record_of_a_stage_without_a_commit_joins_the_one_before() -> None:
    """Without the subflow logs (an old stored run) the inner records stay with the mount, by order."""
    _, resumed = support_traces()
    records = resumed.narrative or []
    blocks = commit_records(records, resumed.commit_log, {})
    assert blocks == commit_records(records, resumed.commit_log, resumed.subflows)


def test_a_version_1_trace_loads_and_places_nothing() -> None:
    """A trace written with bare narrative lines loads (records of type ``line``, the same text,
    ``flowchart narrate`` unchanged) and the viewer places none of them rather than guess."""
    trace = loan_trace()
    data = trace.to_dict()
    data["version"] = 1
    data["narrative"] = trace.narrative_lines
    old = Trace.from_json(json.dumps(data))
    assert old.version == TRACE_VERSION  # an old file loads as the current version
    assert old.narrative_lines == trace.narrative_lines
    assert {r.type for r in old.narrative or []} == {"line"}
    assert old.narrative is not None and old.narrative[0] == NarrativeEntry("line", 0, trace.narrative_lines[0])  # type: ignore[index]
    payload = build_payload(old)
    assert payload["blocks"] == [[] for _ in trace.commit_log]


def test_a_fork_child_records_sit_on_their_own_commits() -> None:
    """Records are keyed by runtime stage id: a linear chart's commits each get exactly their own."""
    chart = (
        flow_chart("A", lambda s: setattr(s, "a", 1), "a").add_function("B", lambda s: setattr(s, "b", 2), "b").build()
    )
    trace = chart.run({}, recorders=[narrative()]).trace()
    blocks = commit_records(trace.narrative, trace.commit_log)
    records = trace.narrative or []
    for commit, mine in zip(trace.commit_log, blocks, strict=True):
        assert {records[i].runtime_stage_id for i in mine} == {commit.runtime_stage_id}


def test_flowchart_narrate_prints_the_same_bytes_for_records_and_old_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``flowchart narrate`` prints the recorder's lines exactly, from a version-2 trace (records)
    and from the same run written as a version-1 trace (bare lines)."""
    from examples import loan

    rec = narrative()
    trace = loan.chart.run({"applicant": loan.APPLICANT}, recorders=[rec]).trace()
    new = trace.save(tmp_path / "new.json")
    data = trace.to_dict()
    data.update(version=1, narrative=rec.lines())
    old = tmp_path / "old.json"
    old.write_text(json.dumps(data), encoding="utf-8")
    printed = []
    for path in (new, old):
        assert flowchart_main(["narrate", str(path)]) == 0
        printed.append(capsys.readouterr().out)
    assert printed[0] == printed[1] == "\n".join(rec.lines()) + "\n"
