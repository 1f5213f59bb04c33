"""The support-agent demo, snapshot-tested: the same conversation gives the same trace text.

Both halves of the governed run are pinned — the run up to the refund check-in (its pause
data carries the evidence pack) and the resumed run after Alice's approval — through the
``trace_snapshot`` fixture, under ``snapshots/test_agent_demo_snapshot/``.
"""

from __future__ import annotations

from typing import Any

from syrupy.assertion import SnapshotAssertion

from agent import Paused, explain_answer
from examples import support_agent as demo
from flowchart import Checkpoint
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace
from governance import check_in_approved


def test_the_demo_run_up_to_the_refund_check_in_matches_its_snapshot(trace_snapshot: SnapshotAssertion) -> None:
    """The paused half: seed (card masked), lookup, the refund call pausing with its evidence."""
    agent = demo.build_agent()
    first = agent.run(demo.QUESTION)
    assert isinstance(first, Paused) and first.kind == "check_in"
    assert agent.last_snapshot().result.trace() == trace_snapshot


def test_the_demo_run_after_the_approval_matches_its_snapshot(trace_snapshot: SnapshotAssertion) -> None:
    """The resumed half on a freshly built agent: the refund runs, the answer is final."""
    first = demo.build_agent().run(demo.QUESTION)
    assert isinstance(first, Paused) and first.check_in is not None
    resumed = demo.build_agent()
    decision = check_in_approved(request=first.check_in, by="alice", note="duplicate charge", at="2026-12-01T00:00:00Z")
    answer = resumed.resume(Checkpoint.from_json(first.checkpoint.to_json()), decision)
    assert answer.startswith("I've refunded the duplicate charge")
    assert resumed.last_snapshot().result.trace() == trace_snapshot


def test_the_demos_explanation_matches_its_snapshot(tmp_path: Any, text_snapshot: SnapshotAssertion) -> None:
    """``agent why`` on the demo's stored run: the customer's message, the lookup, the refund
    approved by alice, the model call that wrote the answer — within 25 lines, no token counter."""
    store = SqliteStore(tmp_path / "runs.db")
    first = demo.build_agent(store).run(demo.QUESTION)
    assert isinstance(first, Paused) and first.check_in is not None
    decision = check_in_approved(request=first.check_in, by="alice", note="duplicate charge", at="2026-12-01T00:00:00Z")
    demo.build_agent(SqliteStore(tmp_path / "runs.db")).resume_run(first.run_id, decision)
    text = explain_answer(record_trace(store.get(first.run_id))).format()
    lines = text.splitlines()
    assert len(lines) <= 25
    assert "total_input_tokens" not in text and "iteration" not in text.split("written by")[0]
    assert any("approved by alice" in line for line in lines)
    assert text == text_snapshot
