"""``PostgresStore(dsn)``: the run store for many processes on many machines (psycopg 3).

Laws:
- psycopg is imported when a store is made, not when this module is: without the
  ``[postgres]`` extra, ``PostgresStore(...)`` raises ``ImportError`` saying what to install.
- Every write locks the run's row (``SELECT … FOR UPDATE``) inside its transaction, so
  concurrent writers of one run are serialised by PostgreSQL and the loser sees the
  row as the winner left it; ``UNIQUE(run_id, seq)`` backs this up in the index.
  Migrations take a transaction-scoped advisory lock, so workers starting together
  migrate once.
- No server-side prepared statements are forced, so PgBouncer in transaction mode works.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flowchart.store.sql import SqlStore

_MIGRATION_LOCK = 0x70F7_5702  # an arbitrary advisory-lock key owned by pyfootprint


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "PostgresStore needs psycopg 3: pip install 'psycopg[binary]' (in a pyfootprint checkout: "
            "pip install -e '.[postgres]')"
        ) from None
    return psycopg


class PostgresStore(SqlStore):
    """A run store in a PostgreSQL database (``dsn`` as psycopg takes it)."""

    placeholder = "%s"
    for_update = " FOR UPDATE"

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0, key: bytes | None = None) -> None:
        self._psycopg = _psycopg()
        self.dsn = dsn
        self._connect_timeout = connect_timeout
        super().__init__(_safe(dsn), key)

    def _open(self) -> Any:
        return self._psycopg.connect(self.dsn, autocommit=True, connect_timeout=int(self._connect_timeout))

    @contextmanager
    def _begin(self, db: Any, write: bool) -> Iterator[Any]:
        with db.transaction(), db.cursor() as cur:
            yield cur

    def _alive(self, db: Any) -> bool:
        return not (db.closed or db.broken)

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, self._psycopg.errors.UniqueViolation)

    def _lock_schema(self, cur: Any) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))


def _safe(dsn: str) -> str:
    """The dsn without a password, for messages."""
    if "@" in dsn and "://" in dsn:
        scheme, rest = dsn.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        return f"{scheme}://{creds.split(':', 1)[0]}@{host}"
    return "postgresql database"
