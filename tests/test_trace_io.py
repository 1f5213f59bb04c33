"""Trace I/O at speed: saved in one pass without half-written files, loaded through a strict fast pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowchart import Trace, flow_chart, narrative
from flowchart._core.commits import Commit, Op
from flowchart._core.errors import CheckpointError


def _trace(passes: int = 8) -> Trace:
    def work(scope: Any, ctx: Any) -> str | None:
        n = getattr(scope, "n", 0) + 1
        scope.n = n
        scope.items = [*getattr(scope, "items", []), n]
        if n % 2:
            del scope.items
        if n >= passes:
            ctx.stop()
        return None

    chart = flow_chart("Work", work, "work").loop_to("work").build()
    return chart.run(recorders=[narrative()], max_iterations=passes + 1).trace()


def test_a_loaded_trace_equals_the_one_the_converter_builds_from_the_same_json() -> None:
    """``Trace.load`` (the fast pass over parsed commits) gives the same trace as
    ``Trace.from_dict`` (the converter, field by field), and saves back to the same bytes."""
    trace = _trace()
    text = trace.to_json()
    fast, slow = Trace.from_json(text), Trace.from_dict(json.loads(text))
    assert fast == slow
    assert fast.commit_log == trace.commit_log
    assert any(op.verb == "delete" for c in fast.commit_log for op in c.trace)
    assert fast.to_json() == text


@pytest.mark.parametrize(
    ("where", "bad", "match"),
    [
        ("verb", "sett", r"@ \$\.commit_log\[5\]\.trace\[0\]\.verb"),
        ("idx", True, r"@ \$\.commit_log\[5\]\.idx"),
        ("extra", 1, r"unknown key\(s\) extra @ \$\.commit_log\[5\]"),
        ("reads", ["n", 3], r"@ \$\.commit_log\[5\]\.reads\[1\]"),
    ],
)
def test_a_bad_commit_deep_in_a_log_is_refused_naming_its_field(where: str, bad: Any, match: str) -> None:
    """Anything the fast pass is not sure of goes through the converter, which names the field."""
    data = json.loads(_trace().to_json())
    commit = data["commit_log"][5]
    if where == "verb":
        commit["trace"][0]["verb"] = bad
    else:
        commit[where] = bad
    with pytest.raises(CheckpointError, match=match):
        Trace.from_json(json.dumps(data))


def test_a_save_that_fails_leaves_the_file_as_it_was(tmp_path: Path) -> None:
    """The text is streamed to a temporary file that replaces the target only when complete:
    a value JSON cannot hold fails the save, the old file stays whole, no temporary is left."""
    path = tmp_path / "run.json"
    trace = _trace()
    trace.save(path)
    before = path.read_bytes()
    broken = attrs.evolve(
        trace, commit_log=[*trace.commit_log, Commit(8, "W", "work", "work#8", (Op(("x",), "set", float("nan")),))]
    )
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        broken.save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
    assert Trace.load(path) == trace


def test_commit_data_writes_what_to_dict_writes_for_every_field() -> None:
    """``commit_data`` (saves, store rows) gives the same JSON as ``Commit.to_dict`` for a commit
    with every field set; a new ``Commit`` field fails here until ``commit_data`` writes it."""
    from flowchart._core.commits import Attempt, commit_data, commit_from_parsed
    from flowchart._core.serde import dumps

    fields = {f.name for f in attrs.fields(Commit)}
    known = {
        "idx",
        "stage",
        "stage_id",
        "runtime_stage_id",
        "trace",
        "reads",
        "redacted_paths",
        "decision",
        "attempts",
        "recovers",
    }
    assert fields == known, "commit_data and commit_from_parsed must learn the new field"
    commit = Commit(
        3,
        "Pick",
        "pick",
        "pick#3",
        (Op(("a",), "set", {"x": [1, 2]}), Op(("b",), "delete"), Op(("c",), "append", [4])),
        ("a", "b"),
        ("a/x",),
        {"chosen": "left"},
        (Attempt(1, "TimeoutError", "slow"),),
        "pick#2",
    )
    assert dumps(commit_data(commit)) == dumps(commit.to_dict())
    assert commit_from_parsed(json.loads(dumps(commit_data(commit)))) == commit
