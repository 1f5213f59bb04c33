"""``MemoryStore``: the run store in a dict, for tests and one-process programs.

Law: it behaves exactly like ``SqliteStore`` (the shared suite in ``tests/store`` runs
on both) — same checks, same errors, same order of checks — except that nothing
survives the process. Records are stored encoded (JSON text, as a database would), so
a caller can never reach in and mutate a stored run.
"""

from __future__ import annotations

import builtins
import threading
import time
from typing import Any

import attrs

from flowchart._core.narrative_columns import NarrativeColumns
from flowchart._core.redaction import Redaction
from flowchart._core.run_ids import check_run_id
from flowchart.store import codec, sealing
from flowchart.store.protocol import (
    AlreadyAnsweredError,
    CommitConflictError,
    RunExistsError,
    RunList,
    RunNotFoundError,
    RunRecord,
    Segment,
    StoredRowError,
    StoreError,
    TurnHead,
    TurnTakenError,
    check_conversation,
    check_retry,
    check_status,
    created_record,
    cursor_of,
    known_id,
    read_cursor,
    renumber,
)
from flowchart.store.questions import read_question
from flowchart.store.summaries import SUMMARY_COLUMNS, RunSummary, SummaryList, read_summary


@attrs.define
class _Row:
    kind: str
    fingerprint: str
    input: str
    created_at: float
    updated_at: float
    status: str = "running"
    commits: list[str] = attrs.Factory(list)
    checkpoint: str | None = None
    question: str | None = None
    has_answer: bool = False
    answer: str | None = None
    output: str | None = None
    error: str | None = None
    answered: dict[str, str] = attrs.Factory(dict)
    narrative: list[str] = attrs.Factory(list)
    subflows: list[str | None] = attrs.Factory(list)
    redaction: str | None = None
    failure: str | None = None
    conversation_id: str | None = None
    turn: int | None = None
    parent_run_id: str | None = None
    forked_at: int | None = None


class MemoryStore:
    """A run store that lives in this process only."""

    def __init__(self) -> None:
        self._runs: dict[str, _Row] = {}
        self._specs: dict[str, str] = {}
        self._turns: dict[str, dict[int, str]] = {}  # conversation id -> turn -> run id (its index)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<MemoryStore runs={len(self._runs)}>"

    def _row(self, run_id: str) -> _Row:
        known_id(run_id, "memory")
        row = self._runs.get(run_id)
        if row is None:
            raise RunNotFoundError(f"no run '{run_id}' in run store memory")
        return row

    def verify(self, run_id: str) -> str:
        """The run's head (``sealing``): a digest of everything stored for it, to anchor elsewhere
        (a memory store lives in one process: there is nothing to tamper with, nor a seal)."""
        with self._lock:
            row = self._row(run_id)
            columns = {
                name: getattr(row, {"chart_fingerprint": "fingerprint", "next_seq": "commits"}.get(name, name))
                for name in sealing.RUN_COLUMNS
            }
            columns["next_seq"] = len(row.commits)
            rows = sealing.RunRows(
                run_id=run_id,
                columns=columns,
                chart_spec=self._specs.get(row.fingerprint),
                commits=list(enumerate(row.commits)),
                segments=list(zip(row.narrative, row.subflows, strict=False)),
                answers=sorted(row.answered.items()),
            )
            return sealing.head(rows)

    def _record(self, run_id: str, row: _Row) -> RunRecord:
        spec = self._specs.get(row.fingerprint)
        told = [codec.decode_narrative_columns(text, run_id) for text in row.narrative]
        records = NarrativeColumns.joined(told) if told else NarrativeColumns.of_records(())  # built when read
        subflows: dict[str, Any] = {}
        for text in row.subflows:
            subflows.update(codec.decode_subflows(text, run_id))
        return RunRecord(
            run_id=run_id,
            status=row.status,  # type: ignore[arg-type]
            kind=row.kind,
            chart_fingerprint=row.fingerprint,
            input=codec.decode(row.input),
            commit_log=codec.decode_commits(row.commits),
            checkpoint=codec.decode_checkpoint(row.checkpoint),
            question=read_question(row.kind, codec.decode(row.question)),
            output=codec.decode(row.output),
            error=row.error,
            answered=frozenset(row.answered),
            narrative=tuple(records.texts()),
            narrative_records=records,  # type: ignore[arg-type]
            subflows=subflows,
            created_at=row.created_at,
            updated_at=row.updated_at,
            has_answer=row.has_answer,
            answer=codec.decode(row.answer),
            chart_spec=None if spec is None else codec.decode(spec),
            failure=codec.decode_failure(row.failure, run_id),
            redaction=codec.decode_redaction(row.redaction, run_id),
            conversation_id=row.conversation_id,
            turn=row.turn,
            parent_run_id=row.parent_run_id,
            forked_at=row.forked_at,
        )

    def get(self, run_id: str) -> RunRecord:
        """The run, or ``RunNotFoundError``."""
        with self._lock:
            return self._record(run_id, self._row(run_id))

    def list(
        self,
        status: str | None = None,
        *,
        limit: int | None = None,
        conversation: str | None = None,
        after: str | None = None,
    ) -> RunList:
        """Runs (with ``status`` when given), most recently updated first; with
        ``conversation``, that conversation's turns, newest turn first; with ``limit``, a page,
        and ``after=page.next`` the page after it."""
        with self._lock:
            rows = self._listed(status, limit, conversation, after)
            listed = RunList([self._record(rid, row) for rid, row in rows])
        listed.next = self._next(rows, limit, conversation)
        return listed

    def summaries(
        self,
        status: str | None = None,
        *,
        limit: int | None = None,
        conversation: str | None = None,
        after: str | None = None,
    ) -> SummaryList:
        """``list`` as summaries: the same runs, order and cursors, each read from its row's
        listing columns alone (``summaries``)."""
        with self._lock:
            rows = self._listed(status, limit, conversation, after)
            found: builtins.list[RunSummary] = []
            unreadable: builtins.list[StoredRowError] = []
            for rid, row in rows:
                cells = {name: getattr(row, name) for name in SUMMARY_COLUMNS}
                try:
                    found.append(read_summary(rid, cells))
                except StoredRowError as exc:
                    unreadable.append(exc)
        return SummaryList(found, unreadable, self._next(rows, limit, conversation))

    def _listed(
        self, status: str | None, limit: int | None, conversation: str | None, after: str | None
    ) -> builtins.list[tuple[str, _Row]]:
        """The rows a listing holds, in its order (newest update first, or newest turn first)."""
        check_status(status)
        place = None if after is None else read_cursor(after, conversation is not None)
        if conversation is not None:
            turns = self._turns.get(conversation, {})
            rows = [(rid, self._runs[rid]) for _, rid in sorted(turns.items(), reverse=True)]
            if place is not None:
                rows = [(rid, row) for rid, row in rows if row.turn is not None and row.turn < place[0]]
        else:
            rows = list(self._runs.items())
            rows.sort(key=lambda item: (-item[1].updated_at, item[0]))
            if place is not None:
                at, last = place
                rows = [(r, w) for r, w in rows if w.updated_at < at or (w.updated_at == at and r > last)]
        return [(rid, row) for rid, row in rows if status is None or row.status == status][:limit]

    @staticmethod
    def _next(rows: builtins.list[tuple[str, _Row]], limit: int | None, conversation: str | None) -> str | None:
        if limit is not None and rows and len(rows) == limit:
            rid, row = rows[-1]
            return cursor_of(conversation is not None, rid, row.updated_at, row.turn)
        return None

    def forks(self, run_id: str) -> RunList:
        """The runs forked from ``run_id``, oldest first."""
        known_id(run_id, "memory")
        with self._lock:
            rows = [(rid, row) for rid, row in self._runs.items() if row.parent_run_id == run_id]
            rows.sort(key=lambda item: (item[1].created_at, item[0]))
            return RunList([self._record(rid, row) for rid, row in rows])

    def create(
        self,
        run_id: str,
        *,
        kind: str,
        chart_fingerprint: str,
        input: dict[str, Any],
        chart_spec: dict[str, Any] | None = None,
        redaction: Redaction | None = None,
        conversation: tuple[str, int] | None = None,
        parent_run_id: str | None = None,
        forked_at: int | None = None,
    ) -> RunRecord:
        """Record a new ``running`` run (with the rule its readers apply, and a fork's lineage);
        ``RunExistsError`` if the id is taken, ``TurnTakenError`` if ``conversation=(id, turn)``
        is held by another run."""
        check_run_id(run_id)
        turn_key = check_conversation(conversation)
        with self._lock:
            if run_id in self._runs:
                raise RunExistsError(f"run '{run_id}' already exists in run store memory")
            if turn_key is not None and turn_key[1] in self._turns.get(turn_key[0], {}):
                raise TurnTakenError(
                    f"conversation '{turn_key[0]}' turn {turn_key[1]} was started by another run first "
                    "(run store memory): load the conversation again and send the message as the next turn"
                )
            if chart_spec is not None:
                self._specs.setdefault(chart_fingerprint, codec.encode(chart_spec))
            now = time.time()
            row = _Row(kind, chart_fingerprint, codec.encode(input), now, now)
            row.redaction = codec.encode_redaction(redaction)
            if turn_key is not None:
                row.conversation_id, row.turn = turn_key
                self._turns.setdefault(turn_key[0], {})[turn_key[1]] = run_id
            row.parent_run_id, row.forked_at = parent_run_id, forked_at
            self._runs[run_id] = row
        cid, turn = turn_key or (None, None)
        return created_record(
            run_id, kind, chart_fingerprint, input, now, chart_spec, redaction, cid, turn, parent_run_id, forked_at
        )

    def latest_turn(self, conversation: str) -> TurnHead | None:
        """The newest turn of ``conversation`` (number, run id, status), or ``None``."""
        with self._lock:
            turns = self._turns.get(conversation)
            if not turns:
                return None
            turn = max(turns)
            run_id = turns[turn]
            return TurnHead(turn, run_id, self._runs[run_id].status)  # type: ignore[arg-type]

    def commit(self, run_id: str, segment: Segment) -> RunRecord:
        """Land ``segment`` atomically; ``CommitConflictError`` when another writer won."""
        self.append(run_id, segment)
        return self.get(run_id)

    def append(self, run_id: str, segment: Segment) -> None:
        """``commit`` without reading the run back."""
        with self._lock:
            row = self._row(run_id)
            if row.status != "running" or len(row.commits) != segment.start_seq:
                raise CommitConflictError(
                    f"run '{run_id}' moved on (status {row.status}, next seq {len(row.commits)}) before this "
                    f"segment (from seq {segment.start_seq}) could commit: another writer advanced it"
                )
            row.commits.extend(codec.encode_commit(c) for c in renumber(segment.commits, segment.start_seq))
            row.narrative.append(codec.encode_narrative(segment.narrative, segment.records))
            row.subflows.append(codec.encode_subflows(segment.subflows))
            row.status = segment.status
            row.checkpoint = codec.encode_checkpoint(segment.checkpoint)
            row.question = codec.encode(segment.question) if segment.status == "paused" else None
            row.has_answer, row.answer = False, None
            row.output = codec.encode(segment.output) if segment.status == "done" else None
            row.error = codec.text(segment.error)
            row.failure = codec.encode_failure(segment.failure)
            row.updated_at = time.time()

    def answer(self, run_id: str, request_id: str, answer: Any, *, by: str | None = None) -> RunRecord:
        """Record the answer to the run's pending pause (once) and mark it ``running``."""
        with self._lock:
            row = self._row(run_id)
            if request_id in row.answered:
                raise AlreadyAnsweredError(
                    f"run '{run_id}': request '{request_id}' has already been answered (a pause is answered once)"
                )
            if row.status != "paused":
                raise StoreError(f"run '{run_id}' is {row.status}, not paused: there is no pause to answer")
            row.answered[request_id] = by or ""
            row.status, row.question = "running", None
            row.has_answer, row.answer = True, codec.encode(answer)
            row.updated_at = time.time()
        return self.get(run_id)

    def retry(self, run_id: str) -> RunRecord:
        """Mark the failed run ``running`` again (once per failure), to resume where it failed."""
        with self._lock:
            row = self._row(run_id)
            check_retry(run_id, row.status, row.checkpoint is not None)
            row.status = "running"
            row.updated_at = time.time()
        return self.get(run_id)

    def close(self) -> None:
        """Nothing to release."""
