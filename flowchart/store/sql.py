"""``SqlStore``: the run-store behaviour on any SQL database (SQLite and PostgreSQL).

Laws:
- Every write is ONE transaction that first locks the run's row (``BEGIN IMMEDIATE``
  on SQLite, ``SELECT … FOR UPDATE`` on PostgreSQL), checks the row, then writes. A
  segment commit lands only when the run is ``running`` with ``next_seq ==
  start_seq``; commit rows are also ``UNIQUE(run_id, seq)``, so even a writer that
  skipped the check could not duplicate a step.
- A connection belongs to one process: after a fork (Celery prefork workers) the store
  opens a fresh one on first use and never touches the parent's.
- A backend supplies only the connection, the transaction and how it spells a unique
  violation; the SQL and the checks live here, so both behave identically.
"""

from __future__ import annotations

import builtins
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import attrs

from flowchart._core.narrative_columns import NarrativeColumns
from flowchart._core.redaction import Redaction
from flowchart._core.run_ids import check_run_id
from flowchart._core.signing import check_key
from flowchart._record.record import SubflowTrace
from flowchart._record.trace_codec import no_gc_pauses
from flowchart.store import codec, extends, sealing
from flowchart.store.leases import check_fence
from flowchart.store.protocol import (
    STATUSES,
    AlreadyAnsweredError,
    CommitConflictError,
    RunExistsError,
    RunList,
    RunNotFoundError,
    RunRecord,
    SchemaVersionError,
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
    holdable,
    known_id,
    read_cursor,
    renumber,
)
from flowchart.store.questions import read_question
from flowchart.store.schema import MIGRATIONS, SCHEMA_VERSION, VERSION_TABLE, newer_message
from flowchart.store.summaries import SUMMARY_COLUMNS, RunSummary, SummaryList, read_summary

_RUN_COLUMNS = (
    "run_id, kind, chart_fingerprint, status, input, checkpoint, question, has_answer, answer, "
    "output, error, created_at, updated_at, redaction, failure, conversation_id, turn, parent_run_id, forked_at"
)

_SUMMARY_COLUMNS = ", ".join(("run_id", *SUMMARY_COLUMNS))

#: conversations whose last lists a store object remembers (the oldest written is forgotten
#: first): each list's image is about its JSON's size, as the agent's own memory of its turns
_REMEMBERED = 64


class SqlStore:
    """The shared implementation; use ``SqliteStore`` or ``PostgresStore``."""

    placeholder = "?"
    for_update = ""

    def __init__(self, where: str, key: bytes | None = None) -> None:
        self._where = where
        #: with a key, the input, checkpoint, answer and commit columns are signed (``codec.seal``)
        self._key = None if key is None else check_key(key)
        self._lock = threading.RLock()
        self._db: Any = None
        self._pid = -1
        self._specs: dict[str, dict[str, Any] | None] = {}
        #: per conversation, the list this store object last wrote to each key (``extends``)
        self._lists: dict[str, dict[tuple[str, ...], extends.Written]] = {}
        self._migrate()

    # -- backend hooks ------------------------------------------------------------------------
    def _open(self) -> Any:
        raise NotImplementedError

    @contextmanager
    def _begin(self, db: Any, write: bool) -> Iterator[Any]:
        raise NotImplementedError
        yield

    def _is_unique_violation(self, exc: BaseException) -> bool:
        raise NotImplementedError

    def _lock_schema(self, cur: Any) -> None:
        """Serialise concurrent migrations (SQLite's write transaction already does)."""

    def _alive(self, db: Any) -> bool:
        """False when the connection is known dead (the next call opens a new one)."""
        return True

    def _close(self, db: Any) -> None:
        db.close()

    # -- plumbing -----------------------------------------------------------------------------
    def _connection(self) -> Any:
        """This process's open connection (opened when there is none, or it died); under ``_lock``."""
        if self._db is None or self._pid != os.getpid() or not self._alive(self._db):
            self._db, self._pid = self._open(), os.getpid()
        return self._db

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[Any]:
        with self._lock, self._begin(self._connection(), write) as cur:
            yield cur

    def _statement(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        """One statement as its own transaction, in one round trip (both backends' connections are in
        autocommit mode; SQLite takes its write lock as ``BEGIN IMMEDIATE`` would): its rows when it
        returns rows, else how many rows it changed. For a write that is whole in one statement
        (``flowchart.store.leases``); anything that reads and then writes takes ``_tx``."""
        with self._lock:
            cur = self._connection().cursor()
            try:
                self._run(cur, sql, params)
                return cur.fetchall() if cur.description is not None else cur.rowcount
            finally:
                cur.close()

    def _run(self, cur: Any, sql: str, params: tuple[Any, ...] = ()) -> Any:
        if self.placeholder != "?":
            sql = sql.replace("?", self.placeholder)
        cur.execute(sql, params)
        return cur

    def _migrate(self) -> None:
        with self._tx() as cur:
            self._lock_schema(cur)
            self._run(cur, VERSION_TABLE)
            found = self._run(cur, "SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
            if found > SCHEMA_VERSION:
                raise SchemaVersionError(newer_message(self._where, found))
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    self._run(cur, statement)
                self._run(cur, "INSERT INTO schema_version VALUES (?, ?)", (version, time.time()))
            if self._key is not None and 0 < found < 7:  # runs from before seals: sealed as they are now
                for (run_id,) in self._run(cur, "SELECT run_id FROM runs").fetchall():
                    self._reseal(cur, run_id)

    def schema_version(self) -> int:
        """The newest schema version applied to this database."""
        with self._tx(write=False) as cur:
            return int(self._run(cur, "SELECT MAX(version) FROM schema_version").fetchone()[0])

    def close(self) -> None:
        """Close this process's connection (a later call reopens one)."""
        with self._lock:
            if self._db is not None and self._pid == os.getpid():
                self._close(self._db)
            self._db = None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._where}>"

    # -- reading ------------------------------------------------------------------------------
    def get(self, run_id: str) -> RunRecord:
        """The run, or ``RunNotFoundError``."""
        known_id(run_id, self._where)
        with self._tx(write=False) as cur:
            row = self._run(cur, f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFoundError(f"no run '{run_id}' in run store {self._where}")
            with no_gc_pauses():  # a big run's record is hundreds of thousands of objects and no cycle
                return self._record(cur, row)

    def list(
        self,
        status: str | None = None,
        *,
        limit: int | None = None,
        conversation: str | None = None,
        after: str | None = None,
    ) -> RunList:
        """Runs (with ``status`` when given), most recently updated first; with
        ``conversation``, that conversation's turns, newest turn first (read through its index);
        with ``limit``, a page, and ``after=page.next`` the page after it."""
        found = self._listing(status, conversation, after)
        if found is None:
            return RunList()
        where, order, params = found
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        with self._tx(write=False) as cur:
            sql = f"SELECT {_RUN_COLUMNS} FROM runs {where} ORDER BY {order}{tail}"
            rows = self._run(cur, sql, params).fetchall()
            listed = self._records(cur, rows)
        if limit is not None and rows and len(rows) == limit:
            last = rows[-1]
            listed.next = cursor_of(conversation is not None, last[0], last[12], last[16])
        return listed

    def summaries(
        self,
        status: str | None = None,
        *,
        limit: int | None = None,
        conversation: str | None = None,
        after: str | None = None,
    ) -> SummaryList:
        """``list`` as summaries (``summaries``): the same runs in the same order with the same
        cursors, each read from its ``runs`` row alone (no commit, checkpoint or segment is read)."""
        found = self._listing(status, conversation, after)
        if found is None:
            return SummaryList()
        where, order, params = found
        tail = f" LIMIT {int(limit)}" if limit is not None else ""
        names = _SUMMARY_COLUMNS + (", seal" if self._key is not None else "")
        with self._tx(write=False) as cur:
            rows = self._run(cur, f"SELECT {names} FROM runs {where} ORDER BY {order}{tail}", params).fetchall()
        kept: builtins.list[RunSummary] = []
        unreadable: builtins.list[StoredRowError] = []
        width = len(SUMMARY_COLUMNS) + 1
        for row in rows:
            cells = dict(zip(SUMMARY_COLUMNS, row[1:width], strict=True))
            try:
                kept.append(read_summary(row[0], cells, self._key, row[width] if self._key is not None else None))
            except StoredRowError as exc:
                unreadable.append(exc)
        listed = SummaryList(kept, unreadable)
        if limit is not None and rows and len(rows) == limit:
            last = dict(zip(("run_id", *SUMMARY_COLUMNS), rows[-1], strict=False))
            listed.next = cursor_of(conversation is not None, last["run_id"], last["updated_at"], last["turn"])
        return listed

    def _listing(
        self, status: str | None, conversation: str | None, after: str | None
    ) -> tuple[str, str, tuple[Any, ...]] | None:
        """A listing's ``WHERE``, ``ORDER BY`` and parameters (``None``: a conversation no store
        holds, so nothing) — index-backed: ``runs_by_status_update`` / ``runs_by_update`` for the
        newest-first listing, ``runs_by_conversation`` for a conversation's turns."""
        check_status(status)
        place = None if after is None else read_cursor(after, conversation is not None)
        if conversation is not None and not holdable(conversation):
            return None
        clauses: builtins.list[str] = ["status = ?"] if status else []
        params: builtins.list[Any] = [status] if status else []
        order = "updated_at DESC, run_id"
        if conversation is not None:
            clauses.append("conversation_id = ?")
            params.append(conversation)
            order = "turn DESC"
        if place is not None and conversation is not None:
            clauses.append("turn < ?")
            params.append(int(place[0]))
        elif place is not None:
            clauses.append("(updated_at < ? OR (updated_at = ? AND run_id > ?))")
            params.extend((place[0], place[0], place[1]))
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return where, order, tuple(params)

    def latest_turn(self, conversation: str) -> TurnHead | None:
        """The newest turn of ``conversation`` — its number, run id and status — read from the
        index alone (no record decoded), or ``None`` when it has none."""
        if not holdable(conversation):
            return None
        with self._tx(write=False) as cur:
            sql = "SELECT turn, run_id, status FROM runs WHERE conversation_id = ? ORDER BY turn DESC LIMIT 1"
            row = self._run(cur, sql, (conversation,)).fetchone()
        return None if row is None else TurnHead.of(row, self._where)

    def forks(self, run_id: str) -> RunList:
        """The runs forked from ``run_id``, oldest first."""
        known_id(run_id, self._where)
        with self._tx(write=False) as cur:
            sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE parent_run_id = ? ORDER BY created_at, run_id"
            rows = self._run(cur, sql, (run_id,)).fetchall()
            return self._records(cur, rows)

    def _records(self, cur: Any, rows: Any) -> RunList:
        """The runs of ``rows``; a run whose row does not load is set aside (``RunList.unreadable``)."""
        found: builtins.list[RunRecord] = []
        unreadable: builtins.list[StoredRowError] = []
        with no_gc_pauses():
            for row in rows:
                try:
                    found.append(self._record(cur, row))
                except StoredRowError as exc:
                    unreadable.append(exc)
        return RunList(found, unreadable)

    def _record(self, cur: Any, row: Any) -> RunRecord:
        """The run of ``row``, every column read as untrusted input: a column that does not load is
        a ``StoredRowError`` naming this run and that column (``codec.column``), nothing rawer."""
        run_id, fingerprint = row[0], row[2]
        key = self._key
        read = codec.column
        if not isinstance(run_id, str) or not isinstance(fingerprint, str) or row[3] not in STATUSES:
            raise StoredRowError(str(run_id), "run_id/chart_fingerprint/status", "not a run's identity and status")
        sealed = None
        if key is not None:  # the whole run matches its seal before any of it is read
            sealed = self._sealed_rows(cur, run_id)[0]  # and its rows, as checked, are the ones read
        turn_key = codec.decode_turn_key(row[15], row[16], run_id)
        if sealed is not None:
            rows = sealed.commits
        else:
            rows = self._run(cur, "SELECT seq, body FROM commits WHERE run_id = ? ORDER BY seq", (run_id,)).fetchall()
        bodies = [
            str(read(run_id, f"commit {seq}", partial(codec.unseal, body, key, run_id, f"commit {seq}")))
            for seq, body in rows
        ]
        seqs = [seq for seq, _ in rows]
        if any(map(extends.is_reference, bodies)):  # a row that stores a list once (``extends``)
            fetch = partial(self._commit_text, cur, {})
            log = tuple(
                read(run_id, f"commit {seq}", partial(extends.decode_row, body, run_id, seq, fetch))
                if extends.is_reference(body)
                else read(run_id, f"commit {seq}", partial(codec.decode_commit, body))
                for seq, body in zip(seqs, bodies, strict=True)
            )
            codec.check_commit_log(log, run_id, seqs)
        else:
            log = codec.decode_commits(bodies, run_id=run_id, seqs=seqs)
        answered = self._run(cur, "SELECT request_id FROM answers WHERE run_id = ?", (run_id,))
        ids = read(run_id, "answers", partial(codec.decode_answered, [rid for (rid,) in answered.fetchall()]))
        if sealed is not None:
            notes = [(segment[3], segment[4]) for segment in sealed.segments]
        else:
            sql = "SELECT narrative, subflows FROM segments WHERE run_id = ? ORDER BY n"
            notes = self._run(cur, sql, (run_id,)).fetchall()
        told: list[NarrativeColumns] = []
        subflows: dict[str, SubflowTrace] = {}
        for text, subs in notes:
            told.append(read(run_id, "narrative", partial(codec.decode_narrative_columns, text, run_id)))
            # runtime ids never repeat across segments
            subflows.update(read(run_id, "subflows", partial(codec.decode_subflows, subs, run_id)))
        records = NarrativeColumns.joined(told) if told else NarrativeColumns.of_records(())  # built when read
        if fingerprint not in self._specs:
            spec = self._run(cur, "SELECT spec FROM charts WHERE fingerprint = ?", (fingerprint,)).fetchone()
            self._specs[fingerprint] = (
                None if spec is None else read(run_id, "chart spec", partial(codec.decode_spec, spec[0], fingerprint))
            )
        forked_at = row[18]
        if forked_at is not None and (type(forked_at) is not int or forked_at < -1):
            raise StoredRowError(run_id, "forked_at", f"expected a commit index, got {forked_at!r}")
        return RunRecord(
            run_id=run_id,
            status=row[3],
            kind=str(row[1]),
            chart_fingerprint=fingerprint,
            input=read(
                run_id, "input", lambda: codec.decode_object(codec.unseal(row[4], key, run_id, "input"), level=2)
            ),
            commit_log=log,
            checkpoint=read(
                run_id,
                "checkpoint",
                lambda: codec.decode_checkpoint(codec.unseal(row[5], key, run_id, "checkpoint"), fingerprint),
            ),
            question=read(run_id, "question", lambda: read_question(row[1], codec.decode(row[6]))),
            output=read(run_id, "output", lambda: codec.decode(row[9])),
            error=read(run_id, "error", lambda: codec.decode_text(row[10])),
            answered=ids,
            narrative=tuple(records.texts()),
            narrative_records=records,  # type: ignore[arg-type]
            subflows=subflows,
            created_at=read(run_id, "created_at", lambda: codec.decode_time(row[11])),
            updated_at=read(run_id, "updated_at", lambda: codec.decode_time(row[12])),
            has_answer=bool(row[7]),
            answer=read(run_id, "answer", lambda: codec.decode(codec.unseal(row[8], key, run_id, "answer"))),
            chart_spec=self._specs[fingerprint],
            failure=codec.decode_failure(row[14], run_id),
            redaction=codec.decode_redaction(row[13], run_id),
            conversation_id=turn_key[0],
            turn=turn_key[1],
            parent_run_id=read(run_id, "parent_run_id", lambda: codec.decode_text(row[17])),
            forked_at=forked_at,
        )

    # -- the whole run: its head and, with a key, its seal (``sealing``) ----------------------
    def _rows(self, cur: Any, run_id: str, *, tables: bool = True) -> tuple[sealing.RunRows, str | None]:
        """Every stored row of ``run_id`` as the database holds it, and its seal (``tables=False``:
        its ``runs`` row, chart and answers, no commits and no segments)."""
        names = ", ".join(sealing.RUN_COLUMNS)
        row = self._run(cur, f"SELECT {names}, seal FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunNotFoundError(f"no run '{run_id}' in run store {self._where}")
        columns = dict(zip(sealing.RUN_COLUMNS, row, strict=False))
        spec = self._run(cur, "SELECT spec FROM charts WHERE fingerprint = ?", (columns["chart_fingerprint"],))
        found = spec.fetchone()
        rows = sealing.RunRows(
            run_id=run_id,
            columns=columns,
            chart_spec=None if found is None else found[0],
            commits=self._commit_rows(cur, run_id, 0) if tables else (),
            segments=self._segment_rows(cur, run_id, 0) if tables else (),
            answers=self._run(
                cur,
                "SELECT request_id, answer, answered_by, answered_at FROM answers WHERE run_id = ? ORDER BY request_id",
                (run_id,),
            ).fetchall(),
            # a signed store seals the run's effect ledger too (``sealing``; ``effects.EffectLedger``)
            effects=sorted(self._run(cur, "SELECT key, body, receipt FROM effects WHERE run_id = ?", (run_id,)))
            if tables and self._key is not None
            else None,
        )
        return rows, row[-1]

    def _commit_text(self, cur: Any, read: dict[tuple[str, int], Any], run_id: str, seq: int) -> str | None:
        """The text of ``run_id``'s commit ``seq`` (with a key, once its signature verifies), or
        ``None`` when no such row is stored: what a referencing row extends (``extends``).

        A chain runs back through a conversation's earlier turns, so a miss reads, in one query
        (the conversation's index), commit ``seq`` of every turn up to that run's into ``read``
        (this read's rows): a chain of ``n`` turns costs a query per distinct ``seq``, not ``n``."""
        if (run_id, seq) not in read:
            sql = (
                "SELECT c.run_id, c.body FROM runs r JOIN runs t ON t.conversation_id = r.conversation_id "
                "AND t.turn <= r.turn JOIN commits c ON c.run_id = t.run_id AND c.seq = ? WHERE r.run_id = ?"
            )
            for found_run, body in self._run(cur, sql, (seq, run_id)).fetchall():
                read[found_run, seq] = body
            if (run_id, seq) not in read:  # not a conversation's turn, or no such row
                found = self._run(cur, "SELECT body FROM commits WHERE run_id = ? AND seq = ?", (run_id, seq))
                row = found.fetchone()
                read[run_id, seq] = None if row is None else row[0]
        body = read[run_id, seq]
        if body is None:
            return None
        column = f"commit {seq}"
        return codec.column(run_id, column, partial(codec.unseal, body, self._key, run_id, column))

    def _still_stored(self, cur: Any, written: extends.Written) -> bool:
        """Whether the row a reference would name is stored (counted in the write's transaction)."""
        sql = "SELECT COUNT(*) FROM commits WHERE run_id = ? AND seq = ?"
        return bool(self._run(cur, sql, (written.run_id, written.seq)).fetchone()[0])

    def _commit_rows(self, cur: Any, run_id: str, start: int) -> Any:
        sql = "SELECT seq, body FROM commits WHERE run_id = ? AND seq >= ? ORDER BY seq"
        return self._run(cur, sql, (run_id, start)).fetchall()

    def _segment_rows(self, cur: Any, run_id: str, start: int) -> Any:
        sql = (
            "SELECT n, start_seq, status, narrative, subflows, created_at FROM segments "
            "WHERE run_id = ? AND n >= ? ORDER BY n"
        )
        return self._run(cur, sql, (run_id, start)).fetchall()

    def _head(self, cur: Any, run_id: str) -> str:
        """The run's head; with a key, once its rows match its seal (else ``StoredRowError``)."""
        if self._key is None:
            return sealing.head(self._rows(cur, run_id)[0])
        return self._sealed_rows(cur, run_id)[1]

    def _sealed_rows(self, cur: Any, run_id: str) -> tuple[sealing.RunRows, str]:
        """Every stored row of ``run_id`` (with a key) and the run's head, once they match the
        run's seal (else ``StoredRowError``): a reader reads these rows, not the tables again."""
        assert self._key is not None
        rows, sealed = self._rows(cur, run_id)
        try:
            return rows, sealing.check(rows, sealed, self._key)
        except StoredRowError:
            self._explain(rows)
            raise

    def _explain(self, rows: sealing.RunRows) -> None:
        """A run that does not match its seal: when a row's own signature fails too, that names the
        row more exactly (which commit, a row without a signature) — raise that instead."""
        run_id, key, read = rows.run_id, self._key, codec.column
        for seq, body in rows.commits:
            read(run_id, f"commit {seq}", partial(codec.unseal, body, key, run_id, f"commit {seq}"))
        for name in ("input", "checkpoint", "answer"):
            read(run_id, name, partial(codec.unseal, rows.columns[name], key, run_id, name))

    def _reseal(self, cur: Any, run_id: str) -> None:
        """Seal the run whole, as it now stands (with a key; a store without one keeps no seal): a
        new run, or a run from before seals."""
        if self._key is not None:
            rows, _ = self._rows(cur, run_id)
            self._run(cur, "UPDATE runs SET seal = ? WHERE run_id = ?", (sealing.seal(rows, self._key), run_id))

    def _checked(self, cur: Any, run_id: str) -> dict[str, Any] | None:
        """Before a write (with a key): the run's row, chart and answers match its seal and its
        tables hold the rows it counts (``sealing.opened``; the commits are not read) — the sealed
        parts, which ``_extended`` extends after the write."""
        if self._key is None:
            return None
        rows, sealed = self._rows(cur, run_id, tables=False)
        counts = self._run(
            cur,
            "SELECT (SELECT COUNT(*) FROM commits WHERE run_id = ?), (SELECT COUNT(*) FROM segments WHERE run_id = ?)",
            (run_id, run_id),
        ).fetchone()
        try:
            return sealing.opened(rows, {"commits": counts[0], "segments": counts[1]}, sealed, self._key)
        except StoredRowError:
            self._explain(rows)
            raise

    def _extended(self, cur: Any, run_id: str, kept: dict[str, Any] | None) -> None:
        """After a write (with a key): the seal ``_checked`` opened, extended by the commits and
        segments the write added (read back as the database holds them) — not the whole run again."""
        if self._key is None or kept is None:
            return
        rows, _ = self._rows(cur, run_id, tables=False)
        added = attrs.evolve(
            rows,
            commits=self._commit_rows(cur, run_id, int(kept["commits"][0])),
            segments=self._segment_rows(cur, run_id, int(kept["segments"][0])),
        )
        self._run(cur, "UPDATE runs SET seal = ? WHERE run_id = ?", (sealing.resealed(added, kept, self._key), run_id))

    def verify(self, run_id: str) -> str:
        """The run's head — a digest of every row of the run, to anchor elsewhere; with a key, only
        once the rows match the run's seal (``StoredRowError`` names the part that differs)."""
        with self._tx(write=False) as cur:
            return self._head(cur, run_id)

    def _exists(self, run_id: str) -> bool:
        with self._tx(write=False) as cur:
            return self._run(cur, "SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is not None

    def _locked_row(self, cur: Any, run_id: str) -> tuple[str, int]:
        known_id(run_id, self._where)
        row = self._run(cur, f"SELECT status, next_seq FROM runs WHERE run_id = ?{self.for_update}", (run_id,))
        found = row.fetchone()
        if found is None:
            raise RunNotFoundError(f"no run '{run_id}' in run store {self._where}")
        if type(found[1]) is not int or found[1] < 0:  # a row edited behind the store: refused by name
            raise StoredRowError(run_id, "next_seq", f"expected a commit count, got {found[1]!r}")
        return str(found[0]), found[1]

    # -- writing ------------------------------------------------------------------------------
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
        conversation_id, turn = check_conversation(conversation) or (None, None)
        now = time.time()
        try:
            with self._tx() as cur:
                if chart_spec is not None:
                    self._run(
                        cur,
                        "INSERT INTO charts VALUES (?, ?) ON CONFLICT (fingerprint) DO NOTHING",
                        (chart_fingerprint, codec.encode(chart_spec)),
                    )
                self._run(
                    cur,
                    "INSERT INTO runs (run_id, kind, chart_fingerprint, status, input, created_at, updated_at, "
                    "redaction, conversation_id, turn, parent_run_id, forked_at) "
                    "VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        run_id,
                        kind,
                        chart_fingerprint,
                        codec.seal(codec.encode(input), self._key, run_id, "input"),
                        now,
                        now,
                        codec.encode_redaction(redaction),
                        conversation_id,
                        turn,
                        parent_run_id,
                        forked_at,
                    ),
                )
                self._reseal(cur, run_id)
        except Exception as exc:
            if self._is_unique_violation(exc):
                if conversation_id is not None and not self._exists(run_id):
                    raise TurnTakenError(
                        f"conversation '{conversation_id}' turn {turn} was started by another run first "
                        f"(run store {self._where}): load the conversation again and send the message as the next turn"
                    ) from None
                raise RunExistsError(f"run '{run_id}' already exists in run store {self._where}") from None
            raise
        # the run as just written (no read back: a new run is what its caller gave, and nothing else)
        return created_record(
            run_id,
            kind,
            chart_fingerprint,
            input,
            now,
            chart_spec,
            redaction,
            conversation_id,
            turn,
            parent_run_id,
            forked_at,
        )

    def commit(self, run_id: str, segment: Segment) -> RunRecord:
        """Land ``segment`` atomically; ``CommitConflictError`` when another writer won."""
        self.append(run_id, segment)
        return self.get(run_id)

    def append(self, run_id: str, segment: Segment) -> None:
        """``commit`` without reading the run back: the write path of a run that goes on (its
        record is read when somebody asks, not after every segment)."""
        try:
            with self._tx() as cur:
                status, next_seq = self._locked_row(cur, run_id)
                if status != "running" or next_seq != segment.start_seq:
                    raise CommitConflictError(
                        f"run '{run_id}' moved on (status {status}, next seq {next_seq}) before this "
                        f"segment (from seq {segment.start_seq}) could commit: another writer advanced it"
                    )
                check_fence(self, cur, run_id)  # a worker whose lease was taken over lands nothing
                kept = self._checked(cur, run_id)
                learned = self._write_segment(cur, run_id, segment)
                self._extended(cur, run_id, kept)
            if learned is not None:  # landed: later turns may reference what it stored
                with self._lock:
                    self._lists.pop(learned[0], None)
                    self._lists[learned[0]] = learned[1]
                    while len(self._lists) > _REMEMBERED:
                        del self._lists[next(iter(self._lists))]
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise CommitConflictError(
                    f"run '{run_id}': seq {segment.start_seq}… was already committed by another writer"
                ) from None
            raise

    def _write_segment(
        self, cur: Any, run_id: str, segment: Segment
    ) -> tuple[str, dict[tuple[str, ...], extends.Written]] | None:
        """Write the segment's rows; for a conversation's turn without a redaction rule, each list
        that extends one this store wrote to the same key is stored once (``extends``), and what
        the conversation's lists now are is returned, to remember once the write lands."""
        now = time.time()
        commits = renumber(segment.commits, segment.start_seq)
        sql = "SELECT conversation_id, redaction FROM runs WHERE run_id = ?"
        conversation, rule = self._run(cur, sql, (run_id,)).fetchone()
        known = None
        if isinstance(conversation, str) and rule is None:
            known = dict(self._lists.get(conversation, {}))
        stored = partial(self._still_stored, cur)
        for commit in commits:
            if known is None:
                text = codec.encode_commit(commit)
            else:
                text, learned = extends.encode_row(commit, run_id, known, stored)
                for name, written in learned.items():
                    if written is None:
                        known.pop(name, None)
                    else:
                        known[name] = written
            body = codec.seal(text, self._key, run_id, f"commit {commit.idx}")
            self._run(cur, "INSERT INTO commits (run_id, seq, body) VALUES (?, ?, ?)", (run_id, commit.idx, body))
        n = self._run(cur, "SELECT COUNT(*) FROM segments WHERE run_id = ?", (run_id,)).fetchone()[0]
        self._run(
            cur,
            "INSERT INTO segments (run_id, n, start_seq, status, narrative, created_at, subflows) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                n,
                segment.start_seq,
                segment.status,
                codec.encode_narrative(segment.narrative, segment.records),
                now,
                codec.encode_subflows(segment.subflows),
            ),
        )
        output = None if segment.status != "done" else codec.encode(segment.output)
        self._run(
            cur,
            "UPDATE runs SET status = ?, next_seq = ?, checkpoint = ?, question = ?, has_answer = 0, "
            "answer = NULL, output = ?, error = ?, failure = ?, updated_at = ? WHERE run_id = ?",
            (
                segment.status,
                segment.start_seq + len(commits),
                codec.seal(codec.encode_checkpoint(segment.checkpoint), self._key, run_id, "checkpoint"),
                None if segment.status != "paused" else codec.encode(segment.question),
                output,
                codec.text(segment.error),
                codec.encode_failure(segment.failure),
                now,
                run_id,
            ),
        )
        return None if known is None else (conversation, known)

    def retry(self, run_id: str) -> RunRecord:
        """Mark the failed run ``running`` again (once per failure), to resume where it failed."""
        with self._tx() as cur:
            status, _ = self._locked_row(cur, run_id)
            row = self._run(cur, "SELECT checkpoint FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            check_retry(run_id, status, row[0] is not None)
            kept = self._checked(cur, run_id)
            self._run(
                cur,
                "UPDATE runs SET status = 'running', updated_at = ? WHERE run_id = ? AND status = 'failed'",
                (time.time(), run_id),
            )
            self._extended(cur, run_id, kept)
        return self.get(run_id)

    def answer(self, run_id: str, request_id: str, answer: Any, *, by: str | None = None) -> RunRecord:
        """Record the answer to the run's pending pause (once) and mark it ``running``."""
        try:
            with self._tx() as cur:
                status, _ = self._locked_row(cur, run_id)
                kept = self._checked(cur, run_id)
                self._run(
                    cur,
                    "INSERT INTO answers VALUES (?, ?, ?, ?, ?)",
                    (run_id, request_id, codec.encode(answer), codec.text(by), time.time()),
                )
                if status != "paused":
                    raise StoreError(f"run '{run_id}' is {status}, not paused: there is no pause to answer")
                self._run(
                    cur,
                    "UPDATE runs SET status = 'running', question = NULL, has_answer = 1, answer = ?, "
                    "updated_at = ? WHERE run_id = ?",
                    (codec.seal(codec.encode(answer), self._key, run_id, "answer"), time.time(), run_id),
                )
                self._extended(cur, run_id, kept)
        except Exception as exc:
            if self._is_unique_violation(exc):
                raise AlreadyAnsweredError(
                    f"run '{run_id}': request '{request_id}' has already been answered (a pause is answered once)"
                ) from None
            raise
        return self.get(run_id)
