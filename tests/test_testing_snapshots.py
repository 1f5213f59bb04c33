"""``flowchart.testing``: runs snapshot-tested as stable text under the top-level ``snapshots/``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion

from flowchart import FlowChart, Pausable, Redaction, Trace, flow_chart, narrative
from flowchart.testing import TraceSnapshotExtension, render_trace

REJECTED = {"applicant": {"income": 5000, "debt": 2500, "credit_score": 720}}
APPROVED = {"applicant": {"income": 8000, "debt": 1000, "credit_score": 760}}


def paused_chart() -> FlowChart:
    """Intake writes a secret, a subflow scores it, then Review pauses for a human."""

    def intake(scope: Any) -> None:
        scope.ssn = "123-45-6789"
        scope.amount = 10

    def score(scope: Any) -> None:
        scope.score = scope.amount * 2

    scorer = flow_chart("Score", score, "score").build()
    review = Pausable(execute=lambda s: {"question": "approve?"}, resume=lambda s, i: setattr(s, "ok", i))
    return (
        flow_chart("Intake", intake, "intake")
        .add_subflow_chart_next(
            "scoring",
            scorer,
            mount_name="Scoring",
            input_mapper=lambda parent: {"amount": parent["amount"]},
            output_mapper=lambda out, parent: {"score": out["score"]},
        )
        .add_pausable_function("Review", review, "review")
        .build()
    )


def test_a_rejected_loan_run_matches_its_snapshot(loan_chart: FlowChart, trace_snapshot: SnapshotAssertion) -> None:
    """The one-line usage: ``assert result == trace_snapshot``."""
    assert loan_chart.run(REJECTED, recorders=[narrative()]) == trace_snapshot


def test_a_loaded_trace_matches_its_snapshot(loan_chart: FlowChart, trace_snapshot: SnapshotAssertion) -> None:
    """A ``Trace`` (here: saved and loaded back) snapshots like a result."""
    trace = loan_chart.run(APPROVED, recorders=[narrative()]).trace()
    assert Trace.from_json(trace.to_json()) == trace_snapshot


def test_a_paused_redacted_run_matches_its_snapshot(trace_snapshot: SnapshotAssertion) -> None:
    """Pause data, the subflow's log and redaction all appear in the snapshot text."""
    result = paused_chart().run(recorders=[narrative()], redaction=Redaction(keys={"ssn"}))
    assert result == trace_snapshot


def test_the_text_has_no_run_ids_or_times_and_is_stable() -> None:
    """Two runs render byte-identically; run id and ``paused_at`` never appear."""
    chart = paused_chart()
    one, two = chart.run(recorders=[narrative()]), chart.run(recorders=[narrative()])
    text = render_trace(one.trace())
    assert text == render_trace(two.trace())
    assert one.run_id not in text
    assert one.checkpoint is not None and str(one.checkpoint.paused_at) not in text


def test_the_rendering_shows_commits_with_reads_and_ops(loan_chart: FlowChart) -> None:
    """Each commit is a header with its reads, then one line per op."""
    text = render_trace(loan_chart.run(REJECTED).trace())
    assert "  #1 Dti (dti#1) reads: debt, income\n      set dti = 0.5\n" in text
    assert "narrative:" not in text
    assert text.endswith(
        'final state: {"approved": false, "credit_score": 720, "debt": 2500, "dti": 0.5, '
        '"income": 5000, "reason": "risk tier high", "risk_tier": "high"}\n'
    )


def test_snapshots_land_in_the_top_level_snapshots_folder(request: pytest.FixtureRequest) -> None:
    """The files live in ``<rootdir>/snapshots/<test module>/``, not next to the tests."""
    root = Path(request.config.rootpath)
    folder = root / "snapshots" / "test_testing_snapshots"
    assert (folder / "test_a_rejected_loan_run_matches_its_snapshot.trace.txt").is_file()
    assert not (Path(__file__).parent / "__snapshots__" / "test_testing_snapshots").exists()


def test_the_extension_refuses_what_is_not_a_run() -> None:
    """Only a ``RunResult``, a ``Trace``, a record or what carries one can be snapshotted."""
    with pytest.raises(
        TypeError, match=r"^trace_snapshot compares a RunResult, a Trace, a Record or what carries one, got dict$"
    ):
        TraceSnapshotExtension().serialize({})


def test_run_bound_opaque_ids_are_numbered_by_first_appearance() -> None:
    """Ids like ``cki_<32 hex>`` vary with the run: the snapshot text numbers them, keeping equality."""
    rid_a, rid_b = "cki_" + "a" * 32, "ask_" + "0123456789abcdef" * 2

    def stage(scope: Any) -> None:
        scope.ids = [rid_a, rid_b, rid_a]

    text = render_trace(flow_chart("S", stage, "s").build().run().trace())
    assert '"ids": ["<cki#1>", "<ask#2>", "<cki#1>"]' in text and rid_a not in text and rid_b not in text
