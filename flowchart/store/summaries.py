"""A run's list row (``store.summaries``): what a listing of many runs reads — never the run whole.

Laws:
- A summary is read from the run's ``runs`` row alone (``SUMMARY_COLUMNS``: its id, kind,
  status, question, input, rule, times, conversation turn), never from its commits, checkpoint,
  segments or answers: a page of 50 costs 50 rows, however long the runs and however many.
- Every column is read as untrusted input (``codec.column``: ``StoredRowError`` naming the run
  and the column); the question is typed through the run kind's reader (``questions``), as
  ``RunRecord.question`` is. A run whose row does not load is set aside
  (``SummaryList.unreadable``); the rest are listed.
- A store made with ``key=`` checks each column a summary returns against the run's seal (the
  seal's signature, then each column's digest: ``sealing.check_columns``) before reading any of
  it, and the input's own signature as ``get`` does: a question, input or status changed behind
  the store is refused by name. What a summary does NOT check: the run's commits, checkpoint,
  segments and answers (it does not read them). Deciding on a run goes through ``store.get``,
  which checks the whole run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from flowchart._core.redaction import Redaction
from flowchart.store import codec, sealing
from flowchart.store.protocol import STATUSES, RunRecord, Status, StoredRowError
from flowchart.store.questions import read_question

SUMMARY_COLUMNS = (
    "kind",
    "status",
    "question",
    "input",
    "redaction",
    "created_at",
    "updated_at",
    "conversation_id",
    "turn",
)
"""The ``runs`` columns a summary reads (with ``run_id``; a keyed store also reads ``seal``)."""


@attrs.frozen
class RunSummary:
    """One run as a listing shows it: ``question`` is the pending question while paused (typed
    by the run kind's reader), ``input`` the run's input (show it under ``rule``), ``redaction``
    the rule the run was recorded under."""

    run_id: str
    status: Status
    kind: str
    question: Any
    input: Any = attrs.field(repr=False)
    created_at: float
    updated_at: float
    conversation_id: str | None = None
    turn: int | None = None
    redaction: Redaction | None = attrs.field(default=None, repr=False)

    @property
    def rule(self) -> Redaction:
        """The rule the run's input is shown under (none hides nothing: a run recorded under a
        rule that hides something keeps it, ``SqlStore.create``)."""
        return self.redaction if self.redaction is not None else Redaction()

    @property
    def shown_input(self) -> dict[str, Any]:
        """The run's input as a reader may see it: under ``rule`` (what the run's shown record's
        ``input`` is, without reading or showing anything else of the run)."""
        return self.rule.scrub_state(self.input)


class SummaryList(list[RunSummary]):
    """What ``store.summaries`` returns: the summaries it could read, in order; ``unreadable`` —
    the ``StoredRowError`` of each run it could not; ``next``, the cursor of the page after this
    one (``summaries(..., after=page.next)``; the same cursors as ``RunList.next``), ``None`` when
    the page came back short of its ``limit``."""

    def __init__(
        self,
        summaries: Sequence[RunSummary] = (),
        unreadable: Sequence[StoredRowError] = (),
        next: str | None = None,
    ) -> None:
        super().__init__(summaries)
        self.unreadable: tuple[StoredRowError, ...] = tuple(unreadable)
        self.next = next


def read_summary(
    run_id: Any, cells: Mapping[str, Any], key: bytes | None = None, seal: str | None = None
) -> RunSummary:
    """The summary of one stored ``runs`` row (``cells``: ``SUMMARY_COLUMNS`` as the database holds
    them); with ``key``, once they match the run's ``seal`` — else ``StoredRowError`` naming the run
    and the column."""
    status, kind = cells["status"], cells["kind"]
    if not isinstance(run_id, str) or not isinstance(kind, str) or status not in STATUSES:
        raise StoredRowError(str(run_id), "run_id/kind/status", "not a run's identity and status")
    if key is not None:
        sealing.check_columns(run_id, cells, seal, key)
    read = codec.column
    turn_key = codec.decode_turn_key(cells["conversation_id"], cells["turn"], run_id)
    return RunSummary(
        run_id=run_id,
        status=status,
        kind=kind,
        question=read(run_id, "question", lambda: read_question(kind, codec.decode(cells["question"]))),
        input=read(
            run_id, "input", lambda: codec.decode_object(codec.unseal(cells["input"], key, run_id, "input"), level=2)
        ),
        created_at=read(run_id, "created_at", lambda: codec.decode_time(cells["created_at"])),
        updated_at=read(run_id, "updated_at", lambda: codec.decode_time(cells["updated_at"])),
        conversation_id=turn_key[0],
        turn=turn_key[1],
        redaction=codec.decode_redaction(cells["redaction"], run_id),
    )


def summary_of(record: RunRecord) -> RunSummary:
    """A whole run's summary (what a store without ``summaries`` lists)."""
    return RunSummary(
        run_id=record.run_id,
        status=record.status,
        kind=record.kind,
        question=record.question,
        input=record.input,
        created_at=record.created_at,
        updated_at=record.updated_at,
        conversation_id=record.conversation_id,
        turn=record.turn,
        redaction=record.redaction,
    )


def summaries(
    store: Any,
    status: str | None = None,
    *,
    limit: int | None = None,
    conversation: str | None = None,
    after: str | None = None,
) -> SummaryList:
    """``store.summaries(...)``; a store without that method answers from ``store.list`` (which
    reads each run whole)."""
    own = getattr(store, "summaries", None)
    if callable(own):
        page: SummaryList = own(status, limit=limit, conversation=conversation, after=after)
        return page
    listed = store.list(status, limit=limit, conversation=conversation, after=after)
    return SummaryList([summary_of(r) for r in listed], listed.unreadable, listed.next)


__all__ = ["SUMMARY_COLUMNS", "RunSummary", "SummaryList", "read_summary", "summaries", "summary_of"]
