"""Recording a person's answer: the ``answer`` half of the ``tool-calls`` stage.

Law: on resume, the answer to the pause — a decision, or an ``ask_human`` reply — is
committed to ``human_decisions`` as one row (``governance.human``) BEFORE anything acts on
it, in a commit of its own that the resumed stage then reads, so every result of the
resumed call traces back to who decided. Without a store the request is also marked
answered in this process (``AnswerBook``) at that moment — before the tool can run — so a
retry of the same checkpoint cannot run the call twice; with a store the database has
already recorded the answer, once.
"""

from __future__ import annotations

from typing import Any

from agent._chart.config import STORE_RUN_ENV
from agent._chart.paused import PAUSED_KEY, AnswerBook
from flowchart import Scope, StageContext
from governance import HUMAN_DECISIONS, CheckInDecision
from governance.human import human_decision_row, human_reply_row


def answer_row(paused: dict[str, Any], answer: Any) -> dict[str, Any]:
    """The ``human_decisions`` row of ``answer`` to the pause ``paused`` describes."""
    if paused["kind"] == "ask_human":
        return human_reply_row(
            answer,
            request_id=str(paused.get("request_id", "")),
            tool=paused["tool_name"],
            tool_call_id=paused["tool_call_id"],
            args=paused["args"],
        )
    return human_decision_row(
        CheckInDecision.from_dict(answer, "$.answer"),
        gate=paused["kind"],
        tool=paused["tool_name"],
        tool_call_id=paused["tool_call_id"],
        args=paused["args"],
        middleware=paused.get("middleware"),
    )


def make_record_answer(book: AnswerBook | None) -> Any:
    """The ``answer`` half of ``tool-calls``: commit the person's answer to ``human_decisions``.

    Without a store the request is marked answered in ``book`` here — before the tool can
    run — so retrying the same checkpoint with the same decision is refused even when the
    resume fails later. With a store the database has already recorded it once.
    """

    async def record_answer(scope: Scope, answer: Any, ctx: StageContext) -> None:
        row = answer_row(dict(scope[PAUSED_KEY]), answer)
        if book is not None and not ctx.env.get(STORE_RUN_ENV):
            book.spend(row["request_id"])
        rows = scope[HUMAN_DECISIONS] if HUMAN_DECISIONS in scope else None
        if rows is None:
            scope[HUMAN_DECISIONS] = [row]
        else:
            rows.append(row)

    return record_answer
