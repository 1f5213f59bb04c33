"""The run-store schema and its migrations, shared by SQLite and PostgreSQL.

Laws:
- The library creates and migrates the schema itself; ``schema_version`` lists every
  migration applied. Migrations only ever add (a version's statements never change
  once released); each runs in one transaction with its version row.
- A database whose newest version is above ``SCHEMA_VERSION`` was written by a newer
  pyfootprint and is refused with ``SchemaVersionError`` before anything is read.
- Uniqueness is the database's job: ``commits`` is keyed ``(run_id, seq)``,
  ``answers`` ``(run_id, request_id)`` and a conversation's turns ``(conversation_id,
  turn)``, so double commits, double answers and two processes starting the same turn
  fail in the database, whichever process tries them.
- The SQL is portable between SQLite and PostgreSQL (``?`` placeholders are rewritten
  for psycopg); JSON lives in TEXT columns.
"""

from __future__ import annotations

SCHEMA_VERSION = 9

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE charts (
            fingerprint TEXT PRIMARY KEY,
            spec TEXT NOT NULL
        )""",
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            chart_fingerprint TEXT NOT NULL,
            status TEXT NOT NULL,
            input TEXT NOT NULL,
            next_seq INTEGER NOT NULL DEFAULT 0,
            checkpoint TEXT,
            question TEXT,
            has_answer INTEGER NOT NULL DEFAULT 0,
            answer TEXT,
            output TEXT,
            error TEXT,
            created_at DOUBLE PRECISION NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL
        )""",
        "CREATE INDEX runs_by_status ON runs (status, updated_at)",
        """CREATE TABLE commits (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            seq INTEGER NOT NULL,
            body TEXT NOT NULL,
            UNIQUE (run_id, seq)
        )""",
        """CREATE TABLE segments (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            n INTEGER NOT NULL,
            start_seq INTEGER NOT NULL,
            status TEXT NOT NULL,
            narrative TEXT NOT NULL,
            created_at DOUBLE PRECISION NOT NULL,
            UNIQUE (run_id, n)
        )""",
        """CREATE TABLE answers (
            run_id TEXT NOT NULL REFERENCES runs (run_id),
            request_id TEXT NOT NULL,
            answer TEXT NOT NULL,
            answered_by TEXT,
            answered_at DOUBLE PRECISION NOT NULL,
            UNIQUE (run_id, request_id)
        )""",
    ),
    # 2: the rule a run is recorded under, and why a failed run failed (old rows: NULL)
    2: (
        "ALTER TABLE runs ADD COLUMN redaction TEXT",
        "ALTER TABLE runs ADD COLUMN failure TEXT",
    ),
    # 3: the conversation a run is a turn of, and which turn (old rows: NULL, no conversation);
    # the unique index decides which of two racing writers gets a turn, and serves the
    # conversation's reads, so a turn costs what it loads, never the size of the store
    3: (
        "ALTER TABLE runs ADD COLUMN conversation_id TEXT",
        "ALTER TABLE runs ADD COLUMN turn INTEGER",
        "CREATE UNIQUE INDEX runs_by_conversation ON runs (conversation_id, turn)",
    ),
    # 4: each segment's subflow logs (old rows: NULL, no subflow logs); the narrative column
    # holds records (objects with stage ids) from here on, old rows keep their bare lines
    4: ("ALTER TABLE segments ADD COLUMN subflows TEXT",),
    # 5: a fork's lineage — the run it was forked from and the commit it forked at (others: NULL)
    5: (
        "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
        "ALTER TABLE runs ADD COLUMN forked_at INTEGER",
        "CREATE INDEX runs_by_parent ON runs (parent_run_id, created_at)",
    ),
    # 6: no new column: a segment's narrative records are stored as columns (one list per field,
    # as a version-3 trace file keeps them) from here on; rows written before keep their lists.
    # A library that reads only lists refuses this database with the upgrade hint, not the rows.
    6: (),
    # 7: a store made with key= seals each run whole (``sealing``): the digest of every row of
    # the run, its head and the head's HMAC (others: NULL). Opening an older database with a key
    # seals its runs as they are then (``SqlStore._migrate``).
    7: ("ALTER TABLE runs ADD COLUMN seal TEXT",),
    # 8: the newest-first listing (``list``, ``summaries``) in its own order — updated_at
    # descending, run id ascending — with and without a status, so a page is read from the index
    # in order (no sort of every run of a status): the first page costs the same at 1k and 100k runs
    8: (
        "CREATE INDEX runs_by_status_update ON runs (status, updated_at DESC, run_id)",
        "CREATE INDEX runs_by_update ON runs (updated_at DESC, run_id)",
    ),
    # 9: the effect ledger (``effects``: an intent before a tool's effect, a receipt after) and the
    # run leases (``leases``: the worker advancing a run, its fencing token, its expiry). Version-8
    # libraries created both on first use, so a version-8 database may hold them already: IF NOT
    # EXISTS keeps their rows; a database from before has them created empty
    9: (
        """CREATE TABLE IF NOT EXISTS effects (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            body TEXT NOT NULL,
            receipt TEXT,
            intended_at DOUBLE PRECISION NOT NULL,
            settled_at DOUBLE PRECISION,
            PRIMARY KEY (run_id, key)
        )""",
        """CREATE TABLE IF NOT EXISTS leases (
            run_id TEXT PRIMARY KEY,
            holder TEXT NOT NULL,
            token INTEGER NOT NULL,
            expires_at DOUBLE PRECISION NOT NULL
        )""",
    ),
}

VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY,
    applied_at DOUBLE PRECISION NOT NULL
)"""


def newer_message(where: str, found: int) -> str:
    """The refusal for a database from a newer library version."""
    return (
        f"run store {where} has schema version {found}, but this pyfootprint knows versions up to "
        f"{SCHEMA_VERSION}: it was written by a newer pyfootprint. Upgrade pyfootprint to use it "
        "(it is never downgraded or modified by an older version)"
    )
