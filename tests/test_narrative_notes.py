"""``narrative(notes=...)``: a caller's sentence told right after the write of a noted key."""

from __future__ import annotations

from typing import Any

from flowchart import Redaction, flow_chart, narrative


def decide(scope: Any) -> None:
    scope.count = 1
    scope.decisions = [{"by": "alice", "what": "refund"}]
    scope.after = True


def tell(rows: Any) -> str | None:
    return f"{rows[-1]['by']} approved {rows[-1]['what']}" if isinstance(rows, list) else None


def test_a_noted_write_is_followed_by_its_sentence_without_taking_a_step_number() -> None:
    """The note comes right after its write; the steps around it keep consecutive numbers."""
    rec = narrative(notes={"decisions": tell})
    flow_chart("Decide", decide, "decide").build().run(recorders=[rec])
    assert rec.entries() == [
        ("stage", 0, "Stage 1: The process began with Decide."),
        ("step", 1, "Step 1: Write count = 1"),
        ("step", 1, "Step 2: Write decisions = (1 item)"),
        ("note", 1, "alice approved refund"),
        ("step", 1, "Step 3: Write after = true"),
    ]


def test_a_redacted_key_hands_its_teller_the_placeholder() -> None:
    """The teller sees what the write event carries: a hidden key's value never reaches it."""
    rec = narrative(notes={"decisions": tell})
    chart = flow_chart("Decide", decide, "decide").build()
    chart.run(recorders=[rec], redaction=Redaction(keys={"decisions"}))
    assert [text for kind, _depth, text in rec.entries() if kind == "note"] == []
    assert "alice" not in "\n".join(rec.lines())


def test_a_teller_that_raises_tells_nothing_and_breaks_nothing() -> None:
    """A failing teller is skipped: the run and the rest of the narrative are unchanged."""

    def broken(_value: Any) -> str:
        raise RuntimeError("boom")

    plain, noted = narrative(), narrative(notes={"decisions": broken})
    flow_chart("Decide", decide, "decide").build().run(recorders=[plain, noted])
    assert noted.lines() == plain.lines()
