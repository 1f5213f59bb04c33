"""``Pausable(answer=...)``: the answer is committed first, so what ``resume`` writes is traced to it."""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import Pausable, causal_chain, flow_chart, narrative


def record(scope: Any, reply: Any) -> None:
    """The answer half: commit the reply."""
    scope.reply = reply


def chart(answer: Any = record) -> Any:
    """Ask pauses; on resume ``answer`` records ``reply``, then resume writes ``paid`` from it."""

    def resume(scope: Any, reply: Any) -> None:
        scope.paid = scope.reply["ok"]

    stage = Pausable(execute=lambda s: {"q": "pay?"}, resume=resume, answer=answer)
    return flow_chart("Ask", stage, "ask").add_function("Done", lambda s: setattr(s, "done", s.paid), "done").build()


def test_the_answer_is_its_own_commit_and_a_causal_input_of_the_resume() -> None:
    """On resume: the answer commit (own runtime id), then the resume commit, which read it."""
    built = chart()
    paused = built.run()
    result = built.resume(paused.checkpoint, {"ok": True})
    assert [(c.stage_id, c.written_keys) for c in result.commit_log] == [
        ("ask", ("reply",)),
        ("ask", ("paid",)),
        ("done", ("done",)),
    ]
    assert result.commit_log[0].runtime_stage_id != result.commit_log[1].runtime_stage_id
    chain = causal_chain(result.commit_log, "done")
    paid = chain.node(result.commit_log[1].runtime_stage_id)
    assert [(e.key, e.runtime_stage_id) for e in paid.parents] == [("reply", result.commit_log[0].runtime_stage_id)]


def test_an_answer_that_raises_fails_the_resume_before_resume_runs() -> None:
    """A failing answer half is the stage's error: resume never runs, nothing after it either."""

    def refuse(scope: Any, reply: Any) -> None:
        raise ValueError("no such answer")

    built = chart(answer=refuse)
    paused = built.run()
    with pytest.raises(ValueError, match=r"^no such answer$"):
        built.resume(paused.checkpoint, {"ok": True})


def test_the_narrative_tells_the_recorded_answer_before_the_resumed_stage() -> None:
    """``Recorded the answer at Ask.`` and its steps, then the resumed stage with its usual line."""
    built = chart()
    paused = built.run()
    rec = narrative()
    built.resume(paused.checkpoint, {"ok": True}, recorders=[rec])
    assert rec.lines()[:5] == [
        "Execution resumed at Ask with input.",
        "Recorded the answer at Ask.",
        "Step 1: Write reply = {ok}",
        "Stage 1: The process began with Ask.",
        "Step 1: Read reply = {ok}",
    ]
