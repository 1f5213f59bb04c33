"""A resumed run's narrative goes on numbering: the checkpoint carries the narrative's counts
(``recorder_states``, checkpoint version 2); version-1 checkpoints still load."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from flowchart import Checkpoint, CheckpointError, narrative

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import pause_charts
from test_narrative_replay import CASES as ALL_CASES
from test_narrative_replay import _feed, _load, _recorder, _tuples

CASES = [c for c in ALL_CASES if "events_same_executor_resume" in _load(c)]


@pytest.mark.parametrize("case", CASES)
def test_a_fresh_recorder_loaded_from_the_saved_state_continues_as_footprintjs_same_executor(case: str) -> None:
    """footprintjs's own streams: the paused half's recorder saves its state, a NEW recorder
    loads it and hears the resumed half — and writes exactly the entries footprintjs's
    same-executor resume appends (the resumed half does not restart at "Stage 1")."""
    doc = _load(case)
    first = _recorder(doc)
    _feed(first, doc["events"])
    saved = json.loads(json.dumps(first.save_state()))  # through JSON, as a checkpoint carries it
    second = _recorder(doc)
    second.load_state(saved)
    _feed(second, doc["events_same_executor_resume"])
    expected = _tuples(doc["entries_after_same_executor_resume"])[len(doc["entries"]) :]
    assert second.entries() == expected


def test_a_resumed_run_in_a_fresh_process_goes_on_numbering() -> None:
    """The engine end to end: the checkpoint (through JSON) carries the count, the resumed
    run's first stage line is the next number, not "Stage 1"."""
    chart = pause_charts.CHARTS["linear"]([])
    paused = chart.run({}, recorders=[narrative()])
    assert paused.checkpoint is not None
    told = [line for line in paused.trace().narrative_lines or [] if line.startswith("Stage ")]
    checkpoint = Checkpoint.from_json(paused.checkpoint.to_json())
    assert checkpoint.recorder_states["narrative"]["stages"] == {"": len(told)}
    resumed = chart.resume(checkpoint, {"ok": True}, recorders=[narrative()])
    stages = [line for line in resumed.trace().narrative_lines or [] if line.startswith("Stage ")]
    assert stages and stages[0].startswith(f"Stage {len(told) + 1}: ")


def test_a_version_1_checkpoint_loads_without_recorder_states() -> None:
    """A checkpoint written before recorder states loads (as version 2, none carried) and resumes,
    its narrative starting over as before; a version-1 checkpoint that has them is refused."""
    chart = pause_charts.CHARTS["linear"]([])
    data = chart.run({}, recorders=[narrative()]).checkpoint.to_dict()  # type: ignore[union-attr]
    del data["recorder_states"]
    data["version"] = 1
    old = Checkpoint.from_dict(data)
    assert (old.version, old.recorder_states) == (2, {})
    lines = chart.resume(old, {"ok": True}, recorders=[narrative()]).trace().narrative_lines or []
    assert next(line for line in lines if line.startswith("Stage ")).startswith("Stage 1: ")
    data["recorder_states"] = {}
    with pytest.raises(
        CheckpointError, match=r"unknown key\(s\) recorder_states \(a version-1 checkpoint has none\) @ \$$"
    ):
        Checkpoint.from_dict(data)


@pytest.mark.parametrize(
    ("state", "message"),
    [
        ([], "expected an object with exactly the keys stages, started, visits"),
        ({"stages": {}, "started": []}, "expected an object with exactly the keys stages, started, visits"),
        (
            {"stages": {"": -1}, "started": [], "visits": {}},
            r"stages: expected an object of counts \(integers, 0 or more\)",
        ),
        ({"stages": {}, "started": [1], "visits": {}}, "started: expected a list of strings"),
        ({"stages": {}, "started": [], "visits": {"a": "1"}}, r"visits: expected an object of counts"),
    ],
)
def test_a_narrative_state_of_the_wrong_shape_is_refused_before_anything_runs(state: Any, message: str) -> None:
    """An edited checkpoint's narrative state is a ``CheckpointError`` naming the path; no stage ran."""
    calls: list[str] = []
    chart = pause_charts.CHARTS["linear"](calls)
    checkpoint = chart.run({}, recorders=[narrative()]).checkpoint
    assert checkpoint is not None
    data = checkpoint.to_dict()
    data["recorder_states"]["narrative"] = state
    ran = len(calls)
    with pytest.raises(CheckpointError, match=rf"^Invalid checkpoint: {message}.* @ \$\.recorder_states\.narrative$"):
        chart.resume(Checkpoint.from_dict(data), {"ok": True}, recorders=[narrative()])
    assert len(calls) == ran
