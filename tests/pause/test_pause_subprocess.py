"""Pause here, resume in a fresh interpreter: the checkpoint's JSON is all it needs.

The parent pauses each chart of ``pause_charts`` and hands ``checkpoint.to_json()`` to a
new ``python`` process, which builds the chart from the same module, loads the text
with ``Checkpoint.from_json`` and resumes (again and again, if the run pauses again).
Its final state, commit logs and later checkpoints must equal resuming in-process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pause_charts
import pytest

from flowchart import Checkpoint, FlowChart, RunResult

HERE = Path(__file__).resolve().parent

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[1])
import pause_charts
from flowchart import Checkpoint

def record(result, calls):
    return {
        "state": result.state,
        "paused": result.paused,
        "calls": list(calls),
        "log": [c.to_dict() for c in result.commit_log],
        "subflows": {
            k: [c.to_dict() for c in v.commit_log]
            for k, v in result.subflow_results.items() if k == v.runtime_stage_id
        },
        "checkpoint": result.checkpoint.to_dict() if result.checkpoint else None,
    }

out = {}
for name, text in json.load(sys.stdin).items():
    calls = []
    chart = pause_charts.CHARTS[name](calls)
    checkpoint = Checkpoint.from_json(text)
    records = []
    n = 1
    while checkpoint is not None:
        calls.clear()
        result = chart.resume(checkpoint, {"answer": n})
        records.append(record(result, calls))
        checkpoint, n = result.checkpoint, n + 1
    out[name] = records
json.dump(out, sys.stdout)
"""


def record(result: RunResult, calls: list[str]) -> dict[str, Any]:
    """What the child reports for one resume, computed the same way in-process."""
    return {
        "state": result.state,
        "paused": result.paused,
        "calls": list(calls),
        "log": [c.to_dict() for c in result.commit_log],
        "subflows": {
            k: [c.to_dict() for c in v.commit_log] for k, v in result.subflow_results.items() if k == v.runtime_stage_id
        },
        "checkpoint": result.checkpoint.to_dict() if result.checkpoint else None,
    }


def resume_in_process(chart: FlowChart, checkpoint: Checkpoint, calls: list[str]) -> list[dict[str, Any]]:
    """Resume until the run ends, answering ``{"answer": n}`` to the n-th pause."""
    records = []
    n = 1
    current: Checkpoint | None = checkpoint
    while current is not None:
        calls.clear()
        result = chart.resume(current, {"answer": n})
        records.append(record(result, calls))
        current, n = result.checkpoint, n + 1
    return records


def comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with the two fields that differ on every run left out of checkpoints."""
    out = json.loads(json.dumps(records))
    for entry in out:
        if entry["checkpoint"] is not None:
            del entry["checkpoint"]["paused_at"], entry["checkpoint"]["run_id"]
    return out


@pytest.fixture(scope="module")
def both_ways() -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """For every chart: the in-process resumes and the fresh interpreter's, from one checkpoint."""
    texts: dict[str, str] = {}
    local: dict[str, list[dict[str, Any]]] = {}
    for name, make in pause_charts.CHARTS.items():
        calls: list[str] = []
        chart = make(calls)
        paused = chart.run()
        assert paused.checkpoint is not None
        texts[name] = paused.checkpoint.to_json()
        local[name] = resume_in_process(chart, paused.checkpoint, calls)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(HERE)],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    remote = json.loads(done.stdout)
    return {name: (local[name], remote[name]) for name in pause_charts.CHARTS}


@pytest.mark.parametrize("name", list(pause_charts.CHARTS))
def test_resume_in_a_fresh_interpreter_equals_resume_in_process(
    name: str, both_ways: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]
) -> None:
    """Same final state, same calls, same commit logs (top and subflows), same later
    checkpoints (but for their run id and time)."""
    local, remote = both_ways[name]
    assert comparable(remote) == comparable(local)
    assert remote[-1]["paused"] is False
    assert remote[-1]["state"] == local[-1]["state"]
    assert [entry["log"] for entry in remote] == [entry["log"] for entry in local]
