"""The run-store contract: ``RunRecord`` (one durable run) and the ``RunStore`` protocol.

Laws:
- The store is the truth about a run. A run advances in SEGMENTS — from its start or
  an answered pause to its next pause or end — and a segment lands with ONE atomic
  ``commit``: its commits appended at ``start_seq, start_seq+1, …`` (rows keyed
  ``UNIQUE(run_id, seq)``), the run's new status, checkpoint, question, output or error.
  A second writer of the same segment (a redelivered task, a racing process) finds
  ``next_seq`` moved on and gets ``CommitConflictError``; nothing of its write lands.
- The commit log is append-only and stores each commit's diff (``Commit.to_dict``), so
  storage grows with what a stage wrote, never with the whole state per step.
- A pause is answered once: ``answer`` inserts ``(run_id, request_id)`` under a UNIQUE
  constraint, so a second answer from any process raises ``AlreadyAnsweredError``.
- A run may be a turn of a conversation (``conversation_id``, ``turn``): at most one run
  per ``(conversation_id, turn)``, whichever process asks first (``TurnTakenError`` for
  the other); ``list(conversation=...)`` reads one conversation's turns through its index.
- A failed run that left a checkpoint is retried once per failure: ``retry`` flips
  ``failed`` to ``running`` under the same row lock ``commit`` takes, so of two racing
  processes one wins and the other gets ``StoreError``.
- Status: ``running`` (queued, advancing, or answered and waiting to be advanced),
  ``paused`` (waiting for a person), ``done``, ``failed``. What to do next follows from
  the record alone (``RunRecord.next_step``), which is why a queue may redeliver freely.

Errors (one base, joined to ``flowchart._core.errors.FlowchartError``; each raised by the store
methods named here, in every store)::

    FlowchartError
    └── StoreError                     a run store refused (message: which run, why); also a stored
        │                              column that cannot be read (codec), a run that is waiting or
        │                              finished when asked to advance (runs.py), no stored spec (export)
        ├── RunNotFoundError (KeyError)    get / answer / commit: no run with this id
        ├── RunExistsError                 create: the run id is taken
        ├── CommitConflictError            commit: another writer landed this segment first
        ├── AlreadyAnsweredError           answer: this pause was answered before, by any process
        ├── SchemaVersionError             opening a database a newer pyfootprint wrote
        ├── NotARunStoreError              opening a file that is not a run store (another
        │                                  application's database, any other file), or an absent
        │                                  or empty path without ``create=True``
        └── StoredRowError (also a CheckpointError)   get / list / verify: a stored column of ONE
                                           run does not load (shape, limits, signature, seal); it
                                           names the run and the column, and fails only that run

``create`` refuses an id outside the one run-id rule (``flowchart._core.run_ids``) with
``flowchart._core.errors.RunIdError`` before anything is written; a read (``get``, ``answer``,
``commit``, ``retry``) of such an id is a ``RunNotFoundError`` that quotes the rule — no
database ever sees it (PostgreSQL would fail on a NUL with a raw ``DataError``).

A stored row is untrusted input: whatever a column holds, reading it either gives the value
or raises ``StoredRowError`` — never a ``KeyError``, ``TypeError`` or ``RecursionError`` from
inside a decoder — and ``list`` skips such a run (``RunList.unreadable``), so one edited row
never hides the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

import attrs

from flowchart._core.commits import Commit
from flowchart._core.errors import CheckpointError, FlowchartError
from flowchart._core.failure import RunFailure
from flowchart._core.narrative_columns import built_on_read, stored_slot
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.pause import Checkpoint
from flowchart._core.printable import printable
from flowchart._core.redaction import Redaction
from flowchart._core.run_ids import check_run_id
from flowchart._record.record import Lineage, Record, SubflowTrace

Status = Literal["running", "paused", "done", "failed"]
STATUSES: tuple[str, ...] = ("running", "paused", "done", "failed")
NextStep = Literal["start", "resume", "wait", "finished"]


class StoreError(FlowchartError):
    """A run store refused an operation (the message says which run and why)."""


class RunNotFoundError(StoreError, KeyError):
    """No run with this id is stored."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "run not found"


class RunExistsError(StoreError):
    """``create`` was given a run id that is already stored."""


class TurnTakenError(StoreError):
    """``create`` was asked for a conversation turn another run already holds (another
    process started that turn first: ``UNIQUE(conversation_id, turn)`` decided)."""


class CommitConflictError(StoreError):
    """Another writer committed this run's segment first; this write was discarded whole."""


class AlreadyAnsweredError(StoreError):
    """This pause (request id) of this run was answered before, by some process."""


class StoredRowError(StoreError, CheckpointError):
    """A column of one stored run cannot be read: ``run_id``, ``column`` and why (the JSON path
    inside the column when the loader named one)."""

    def __init__(self, run_id: str, column: str, problem: str, *, path: str = "$") -> None:
        super().__init__(f"Invalid stored run '{run_id}' ({column}): {problem}", path=path)
        self.run_id = run_id
        self.column = column


class RunList(list["RunRecord"]):
    """What ``RunStore.list`` returns: the runs it could read, in order; ``unreadable`` — the
    ``StoredRowError`` of each run it could not (one bad row never hides the rest); and ``next``,
    the cursor of the page after this one (``list(..., after=page.next)``): ``None`` when the page
    came back short of its ``limit`` (after a full last page, the next one is empty)."""

    def __init__(
        self,
        records: Sequence[RunRecord] = (),
        unreadable: Sequence[StoredRowError] = (),
        next: str | None = None,
    ) -> None:
        super().__init__(records)
        self.unreadable: tuple[StoredRowError, ...] = tuple(unreadable)
        self.next = next


def cursor_of(conversation: bool, run_id: str, updated_at: Any, turn: Any) -> str | None:
    """The cursor after a listed run: where it stands in the listing's order (newest update first,
    or a conversation's newest turn first); ``None`` when its row holds no such place."""
    if conversation:
        return f"t:{turn}:{run_id}" if type(turn) is int else None
    return f"u:{float(updated_at)!r}:{run_id}" if type(updated_at) in (int, float) else None


def read_cursor(after: Any, conversation: bool) -> tuple[float, str]:
    """``(place, run id)`` of a cursor ``cursor_of`` made for the same kind of listing, else
    ``ValueError`` saying what to pass."""
    parts = after.split(":", 2) if isinstance(after, str) else []
    kind = "t" if conversation else "u"
    try:
        if len(parts) != 3 or parts[0] != kind:
            raise ValueError(parts)
        place = float(int(parts[1]) if conversation else float(parts[1]))
    except ValueError:
        raise ValueError(
            f"list(after={after!r}): not a cursor of this listing — pass the `next` of the page before "
            f"(RunList.next), with the same conversation= as that page"
        ) from None
    return place, parts[2]


class SchemaVersionError(StoreError):
    """The database was written by a newer pyfootprint; this version refuses to touch it."""


class NotARunStoreError(StoreError):
    """The path names no run store: another application's SQLite database, a file that is not
    SQLite at all, or (without ``create=True``) an absent or empty file. Nothing was written."""


def holdable(conversation_id: str) -> bool:
    """True when a store could hold ``conversation_id`` (the run-id rule): a lookup of one it
    could not is answered "none" without asking the database (PostgreSQL fails on a NUL)."""
    from flowchart._core.errors import RunIdError

    try:
        check_run_id(conversation_id, "conversation id")
    except (RunIdError, TypeError):
        return False
    return True


def known_id(run_id: object, where: str) -> None:
    """Refuse to look up an id no store can hold (``RunNotFoundError`` quoting the run-id rule)."""
    from flowchart._core.errors import RunIdError

    try:
        check_run_id(run_id)
    except (RunIdError, TypeError) as exc:
        shown = printable(str(run_id)[:60])
        raise RunNotFoundError(f"no run '{shown}' in run store {where}: {exc}") from None


@attrs.frozen
class Segment:
    """What one advance of a run writes, atomically, through ``RunStore.commit``: a slice of the
    run's ``Record`` — what the segment's own record appends (``store/runs.appended``) — with the
    run's new status.

    ``start_seq`` must equal the run's ``next_seq`` when the write lands; ``commits``
    are appended from there (their ``idx`` renumbered to their ``seq``). ``status`` is
    the run's new status; ``checkpoint`` and ``question`` are set when it paused;
    ``output`` when done; ``error`` (one line) and ``failure`` (the error's class,
    message and the stage that raised) when failed — a failed segment still carries the
    commits made before the failure; ``narrative`` the segment's lines, ``records`` the same
    narrative as records with their stage ids (stored instead of the lines when given);
    ``subflows`` the subflow logs the segment ran (per mount runtime id).
    """

    start_seq: int
    status: Status
    commits: tuple[Commit, ...] = ()
    checkpoint: Checkpoint | None = None
    question: Any = None
    output: Any = None
    error: str | None = None
    narrative: tuple[str, ...] = ()
    failure: RunFailure | None = None
    records: tuple[NarrativeEntry, ...] = ()
    subflows: Mapping[str, SubflowTrace] = attrs.field(factory=dict)


@built_on_read("narrative_records", lambda columns: tuple(columns.records()))
@attrs.frozen
class RunRecord:
    """One stored run, as read back from a store (a snapshot; re-``get`` for news).

    ``commit_log`` is the whole log across segments (``idx`` == position, folding from
    ``{}``); ``checkpoint`` is set while paused and while an answer waits to be applied;
    ``question`` is the pending question while paused: the typed request when the run's
    kind has a question reader (an agent's ``CheckInRequest`` or ``MiddlewareAsk``; see
    ``questions``), else the pause data as stored;
    ``answer`` is the recorded answer not yet applied (``has_answer``); ``answered`` the
    request ids answered so far; ``narrative`` the lines of every segment so far and
    ``narrative_records`` the same as records (stage ids, type, depth; a run stored before
    records were kept has records of type ``line``); ``subflows`` every segment's subflow logs
    (none for a run stored before they were kept);
    ``failure`` why a ``failed`` run failed (``None`` for runs stored before it was
    recorded); ``redaction`` the rule the run was recorded under, which every reader of
    the record (the ``agent`` CLI, ``record_trace``, the viewer) applies to what the store
    keeps raw — the input above all (``None``: nothing hidden, or a run stored before
    rules were kept); ``parent_run_id`` and ``forked_at`` the run a fork continues and
    the commit it forked at (``None`` for a run that is not a fork).
    """

    run_id: str
    status: Status
    kind: str
    chart_fingerprint: str
    input: dict[str, Any]
    commit_log: tuple[Commit, ...]
    checkpoint: Checkpoint | None
    question: Any
    output: Any
    error: str | None
    answered: frozenset[str]
    narrative: tuple[str, ...]
    created_at: float
    updated_at: float
    has_answer: bool = False
    answer: Any = None
    chart_spec: dict[str, Any] | None = attrs.field(default=None, repr=False)
    failure: RunFailure | None = None
    redaction: Redaction | None = attrs.field(default=None, repr=False)
    narrative_records: tuple[NarrativeEntry, ...] = attrs.field(default=(), repr=False)
    subflows: Mapping[str, SubflowTrace] = attrs.field(factory=dict, repr=False)
    conversation_id: str | None = None
    turn: int | None = None
    parent_run_id: str | None = None
    forked_at: int | None = None

    @property
    def next_seq(self) -> int:
        """The seq the next commit of this run takes (the log's length)."""
        return len(self.commit_log)

    @property
    def next_step(self) -> NextStep:
        """What advancing this run means now: ``start`` it, ``resume`` it with the
        recorded answer, ``wait`` for a person, or nothing (``finished``)."""
        if self.status in ("done", "failed"):
            return "finished"
        if self.status == "paused":
            return "wait"
        return "start" if self.checkpoint is None else "resume"

    @property
    def record(self) -> Record:
        """The stored run as its record (``flowchart._record.record``): the whole log across segments, the
        stored narrative and subflow logs, the real input under the stored rule, the lineage (a run
        stored without its chart's spec has ``{}``)."""
        lineage = None
        if self.parent_run_id is not None and self.forked_at is not None:
            lineage = Lineage(self.parent_run_id, self.forked_at)
        return Record(
            run_id=self.run_id,
            chart_fingerprint=self.chart_fingerprint,
            chart_spec=self.chart_spec or {},
            input=self.input,
            initial_state={},
            commits=self.commit_log,
            subflows=self.subflows,
            narrative=self.narrative_records or None,
            checkpoint=self.checkpoint,
            failure=self.failure,
            redaction=self.redaction,
            redacted_paths=sorted({path for commit in self.commit_log for path in commit.redacted_paths}),
            status=self.status,
            lineage=lineage,
        )

    def pause_answer_id(self, request_id: str | None = None) -> str:
        """The id under which this pause's answer is recorded: the request id of a
        consent pause, else ``pause@<next_seq>.<execution count>`` (each pause of a run has its
        own: two pauses inside one subflow have no parent commit between them, but the run's
        execution counter moved)."""
        if request_id:
            return request_id
        count = self.checkpoint.execution_count if self.checkpoint is not None else 0
        return f"pause@{self.next_seq}.{count}"


_NARRATIVE_RECORDS = stored_slot(RunRecord, "narrative_records")
"""``RunRecord.narrative_records``'s slot: a store puts the run's checked columns there; the
records are built when first read (``RunRecord.narrative``, the lines, needs none of them)."""


@runtime_checkable
class RunStore(Protocol):
    """Where durable runs live. ``SqliteStore``, ``PostgresStore`` and ``MemoryStore``
    behave the same (one shared test suite)."""

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
        """Record a new ``running`` run (no commits yet); ``RunExistsError`` if the id is taken.
        ``redaction`` (kept with the run) is what its readers hide; ``conversation=(id, turn)``
        makes the run that turn (``TurnTakenError`` when another run holds it); a fork names
        its parent run and the commit it forked at."""
        ...

    def verify(self, run_id: str) -> str:
        """The run's head: one digest of every row stored for it (``sealing``), to anchor
        elsewhere; a store made with ``key=`` first checks the rows against the run's seal and
        raises ``StoredRowError`` naming the part that differs."""
        ...

    def forks(self, run_id: str) -> RunList:
        """The runs forked from ``run_id``, oldest first (``[]`` when none)."""
        ...

    def get(self, run_id: str) -> RunRecord:
        """The run, or ``RunNotFoundError``."""
        ...

    def list(
        self,
        status: str | None = None,
        *,
        limit: int | None = None,
        conversation: str | None = None,
        after: str | None = None,
    ) -> RunList:
        """Runs (with ``status`` when given), most recently updated first (a run whose row does not
        load is left out, in ``RunList.unreadable``); with ``conversation``, that conversation's
        turns, newest turn first. With ``limit``, a page: ``after=page.next`` gives the next one
        (read through the index, never the whole store)."""
        ...

    def commit(self, run_id: str, segment: Segment) -> RunRecord:
        """Land ``segment`` atomically; ``CommitConflictError`` when another writer won."""
        ...

    def answer(self, run_id: str, request_id: str, answer: Any, *, by: str | None = None) -> RunRecord:
        """Record the answer to the paused run's pending pause (once) and mark it running."""
        ...

    def retry(self, run_id: str) -> RunRecord:
        """Mark the ``failed`` run ``running`` again so the next advance resumes it at the stage
        that failed (its stored checkpoint); ``StoreError`` when it is not failed (another
        process retried it first) or failed without a resume point."""
        ...

    def close(self) -> None:
        """Release connections (the store is unusable afterwards)."""
        ...


@attrs.frozen
class TurnHead:
    """The newest turn of a conversation as the store's index holds it (``latest_turn``): its
    number, its run's id and status — what a new turn checks before it loads anything."""

    turn: int
    run_id: str
    status: Status

    @staticmethod
    def of(row: Sequence[Any], where: str) -> TurnHead:
        """The head of a stored ``(turn, run_id, status)`` row (untrusted: ``StoredRowError``)."""
        turn, run_id, status = row
        if type(turn) is not int or turn < 1 or not isinstance(run_id, str) or status not in STATUSES:
            raise StoredRowError(str(run_id), "turn/run_id/status", f"not a conversation turn's index row in {where}")
        return TurnHead(turn, run_id, status)


def latest_turn(store: Any, conversation: str) -> TurnHead | None:
    """``store.latest_turn(conversation)``; a store without that method answers from its newest
    turn's record (``list(conversation=..., limit=1)``, which reads the whole record)."""
    own = getattr(store, "latest_turn", None)
    if callable(own):
        head: TurnHead | None = own(conversation)
        return head
    records = store.list(conversation=conversation, limit=1)
    for error in getattr(records, "unreadable", ()):
        raise error
    if not records:
        return None
    return TurnHead(int(records[0].turn), records[0].run_id, records[0].status)


def append_segment(store: Any, run_id: str, segment: Segment) -> None:
    """``store.append(run_id, segment)`` — ``commit`` without reading the run back — on a store
    that has it; ``store.commit`` on one that has not."""
    own = getattr(store, "append", None)
    if callable(own):
        own(run_id, segment)
    else:
        store.commit(run_id, segment)


def created_record(
    run_id: str,
    kind: str,
    chart_fingerprint: str,
    input: dict[str, Any],
    now: float,
    chart_spec: dict[str, Any] | None,
    redaction: Redaction | None,
    conversation_id: str | None,
    turn: int | None,
    parent_run_id: str | None,
    forked_at: int | None,
) -> RunRecord:
    """The record of a run ``create`` just wrote, from what it was given (nothing read back):
    ``running``, no commits, no checkpoint; ``input`` is the caller's own dict."""
    return RunRecord(
        run_id=run_id,
        status="running",
        kind=kind,
        chart_fingerprint=chart_fingerprint,
        input=input,
        commit_log=(),
        checkpoint=None,
        question=None,
        output=None,
        error=None,
        answered=frozenset(),
        narrative=(),
        created_at=now,
        updated_at=now,
        chart_spec=chart_spec,
        redaction=redaction if redaction is not None and redaction.active else None,
        conversation_id=conversation_id,
        turn=turn,
        parent_run_id=parent_run_id,
        forked_at=forked_at,
    )


def check_retry(run_id: str, status: str, resumable: bool) -> None:
    """Refuse to retry a run that is not failed, or that failed without a resume point."""
    if status != "failed":
        raise StoreError(f"run '{run_id}' is {status}, not failed: only a failed run can be retried")
    if not resumable:
        raise StoreError(
            f"run '{run_id}' failed without a resume point (a failure between stages, two fork children "
            "failing, or a run stored before failures kept one): start a new run"
        )


def check_status(status: str | None) -> None:
    """Refuse an unknown status filter, naming the allowed ones."""
    if status is not None and status not in STATUSES:
        raise ValueError(f"unknown run status {status!r}: expected one of {', '.join(STATUSES)}")


def check_conversation(conversation: Any) -> tuple[str, int] | None:
    """Refuse a malformed ``conversation=(id, turn)`` before anything is written."""
    if conversation is None:
        return None
    ok = isinstance(conversation, tuple) and len(conversation) == 2
    cid, turn = conversation if ok else (None, None)
    if not (isinstance(cid, str) and cid and isinstance(turn, int) and not isinstance(turn, bool) and turn >= 1):
        raise ValueError(
            f"conversation={conversation!r}: expected (conversation_id, turn), a non-empty string and a turn >= 1"
        )
    check_run_id(cid, "conversation id")
    return cid, turn


def renumber(commits: Sequence[Commit], start_seq: int) -> tuple[Commit, ...]:
    """``commits`` with ``idx`` set to their position in the whole run's log."""
    return tuple(attrs.evolve(c, idx=start_seq + i) for i, c in enumerate(commits))
