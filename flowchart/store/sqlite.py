"""``SqliteStore(path)``: the embedded run store (stdlib ``sqlite3``, WAL).

Laws:
- One file holds every run; WAL mode lets readers (``agent runs list``) work while a
  writer commits, and ``BEGIN IMMEDIATE`` makes every write take the database's single
  writer lock before it reads the row it checks — so two processes on one machine
  advancing or answering the same run are serialised, and the loser is told.
- ``synchronous`` stays at SQLite's default (FULL): a committed segment survives a
  power cut.
- Busy writers wait (``timeout`` seconds, default 30) instead of failing at once.
- It opens a run store and nothing else: an existing file that is not one — another
  application's SQLite database, a file that is not SQLite (an empty ``.json``, a text
  file), a directory — is refused with ``NotARunStoreError`` naming it, before anything is
  written to it. An absent path, or an empty (0-byte) file, becomes a new store only with
  ``create=True`` (the default for the library; the ``agent`` command asks for
  ``--create``).
- ``key=b"..."`` signs the rows a run is started, resumed and recorded from (see
  ``flowchart.store.codec``); a row changed outside the store then fails to load.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from flowchart.store.protocol import NotARunStoreError
from flowchart.store.sql import SqlStore

#: the tables every version of the schema has (migration 1 creates them in one transaction)
_STORE_TABLES = frozenset({"schema_version", "charts", "runs", "commits", "segments", "answers"})
_SQLITE_HEADER = b"SQLite format 3\x00"


class SqliteStore(SqlStore):
    """A run store in one SQLite file (created when ``create``, and migrated, on first use)."""

    def __init__(
        self, path: str | Path, *, timeout: float = 30.0, key: bytes | None = None, create: bool = True
    ) -> None:
        self.path = str(path)
        self._timeout = timeout
        check_store_file(self.path, create=create)
        super().__init__(self.path, key)

    def _open(self) -> Any:
        db = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA foreign_keys=ON")
        return db

    @contextmanager
    def _begin(self, db: Any, write: bool) -> Iterator[Any]:
        cur = db.cursor()
        cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            yield cur
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")

    def _is_unique_violation(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.IntegrityError) and "UNIQUE" in str(exc)


def check_store_file(path: str, *, create: bool) -> None:
    """Refuse ``path`` unless it is a run store, or (``create``) absent or empty.

    Raises ``NotARunStoreError`` naming the path and saying what it holds; reads the file
    read-only, so a refused file is left exactly as it was.
    """
    if path in ("", ":memory:"):
        return
    file = Path(path)
    if not file.exists():
        if create:
            return
        raise NotARunStoreError(
            f"no run store at {path}: create a new one with SqliteStore(path, create=True) "
            "(agent command: --create), or name an existing store"
        )
    if file.is_dir():
        raise NotARunStoreError(f"{path} is a directory, not a run store: name the store's file")
    with file.open("rb") as handle:
        head = handle.read(len(_SQLITE_HEADER))
    if not head:
        if create:
            return
        raise NotARunStoreError(
            f"{path} is an empty file, not a run store: remove it, or pass create=True (agent command: "
            "--create) to make a new store there"
        )
    if head != _SQLITE_HEADER:
        raise NotARunStoreError(
            f"{path} is not a run store: it is not a SQLite database; name a run store's file, "
            "or a path that does not exist yet"
        )
    tables = _tables(file)
    if tables is None or tables >= _STORE_TABLES:
        return
    if not tables and create:
        return
    held = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
    what = f"another application's SQLite database (tables: {held})" if tables else "an empty SQLite database"
    raise NotARunStoreError(
        f"{path} is not a run store: it is {what}; pyfootprint leaves it untouched. Name a run store's file, "
        "or a path that does not exist yet"
    )


def _tables(file: Path) -> frozenset[str] | None:
    """The table names of the SQLite database ``file``, read-only (``None``: it cannot be read
    without writing, e.g. a WAL database in a read-only folder — the store's own open decides)."""
    try:
        db = sqlite3.connect(file.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error:
        return None
    try:
        rows = db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
    except sqlite3.DatabaseError as exc:
        if "not a database" in str(exc) or "malformed" in str(exc):
            raise NotARunStoreError(f"{file} is not a run store: SQLite cannot read it ({exc})") from None
        return None
    finally:
        db.close()
    return frozenset(name for (name,) in rows)
