"""``TraceError``: a bad trace file is its own error, still a ``CheckpointError``; store errors join the tree."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowchart import CheckpointError, FlowchartError, Trace, TraceError, flow_chart
from flowchart.cli import main
from flowchart.store import RunNotFoundError, StoreError


def good_trace() -> Trace:
    """A one-stage run's trace."""

    def seed(scope):
        scope.n = 1

    return flow_chart("Seed", seed, "seed").build().run().trace()


def test_a_malformed_trace_file_raises_trace_error_naming_the_field(tmp_path: Path) -> None:
    """Trace.load of a trace with a wrong-typed field: TraceError, the message and path of the loader."""
    text = good_trace().to_json().replace('"run_id":', '"run_id":1,"x":', 1)
    path = tmp_path / "bad.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceError, match=r"^Invalid trace: ") as caught:
        Trace.load(path)
    assert isinstance(caught.value, CheckpointError) and caught.value.path is not None


def test_a_trace_of_another_version_is_a_trace_error() -> None:
    """An unknown version is refused with the version it had and the one this library reads."""
    data = good_trace().to_dict()
    data["version"] = 99
    with pytest.raises(
        TraceError,
        match=r"^Invalid trace: unsupported version 99 @ \$\.version \(this library reads versions 1, 2 and 3\)$",
    ):
        Trace.from_dict(data)


def test_text_that_is_not_json_is_a_trace_error() -> None:
    """from_json of non-JSON text is a TraceError too, so one except clause covers a trace file."""
    with pytest.raises(TraceError, match=r"^Invalid trace: "):
        Trace.from_json("{not json")


def test_except_checkpoint_error_still_catches_a_bad_trace() -> None:
    """Existing ``except CheckpointError`` code keeps working."""
    with pytest.raises(CheckpointError, match=r"^Invalid trace: expected an object, got list @ \$$"):
        Trace.from_dict([])


def test_the_cli_reports_a_bad_trace_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``flowchart replay`` on a bad trace: one line naming the file and the TraceError's message, exit 2."""
    path = tmp_path / "bad.json"
    path.write_text("[]", encoding="utf-8")
    assert main(["replay", str(path)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{path}: Invalid trace: expected an object, got list @ $")


def test_store_errors_are_flowchart_errors() -> None:
    """One tree: a store's refusal is a FlowchartError (and a RunNotFoundError still a KeyError)."""
    assert issubclass(StoreError, FlowchartError) and issubclass(RunNotFoundError, KeyError)
