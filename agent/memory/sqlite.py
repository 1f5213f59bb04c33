"""``SqliteMemory(path)``: memory in one SQLite file, searched by SQLite's FTS5.

Laws:
- Needs FTS5: a Python whose SQLite lacks it is refused when the memory is opened, with a
  ``MemoryStoreError`` saying so and what to use instead — never a failure at the first search.
- The items live in ``memory_items``; ``memory_fts`` is an external-content FTS5 index of
  their text and of one token naming their namespace (``items.namespace_token``), kept in
  step by triggers, so a search is an FTS5 query ranked by BM25 on the text column, with a
  LIMIT inside FTS5 (``_match``: only the rows it keeps are joined and tie-broken).
- ``memory_namespaces`` counts each namespace's items (and, under ``*``, all of them), kept
  in step by triggers and filled once for a file written before it existed. A search of a
  namespace holding at least half of the items leaves the namespace token out of the FTS5
  query and keeps the namespace's rows after ranking: the same scores (the token's column
  weighs 0, so its phrase adds exactly 0.0 to every score) without FTS5 counting the
  namespace's rows for an IDF no score uses — the same answer, item for item.
- Every row read back goes through ``items.read_row`` (untrusted: checked field by field).
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

from agent.errors import MemoryStoreError
from agent.memory.base import Memory
from agent.memory.items import MemoryItem, encode_namespace, encode_origin, namespace_token, read_row
from flowchart.lowlevel import canonical_json

__all__ = ["SqliteMemory", "require_sqlite_module"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memory_items (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    ns TEXT NOT NULL,
    nstok TEXT NOT NULL,
    text TEXT NOT NULL,
    origin TEXT NOT NULL,
    created REAL NOT NULL,
    expires REAL,
    vector TEXT
);
CREATE INDEX IF NOT EXISTS memory_items_ns ON memory_items (nstok, created);
CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5(
    nstok, text, content='memory_items', content_rowid='rid', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS memory_items_ai AFTER INSERT ON memory_items BEGIN
    INSERT INTO memory_fts (rowid, nstok, text) VALUES (new.rid, new.nstok, new.text);
END;
CREATE TRIGGER IF NOT EXISTS memory_items_ad AFTER DELETE ON memory_items BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, nstok, text) VALUES ('delete', old.rid, old.nstok, old.text);
END;
"""
#: each namespace's item count, and all items under ``*`` (no namespace token is ``*``)
_COUNTS = (
    "CREATE TABLE memory_namespaces (nstok TEXT PRIMARY KEY, items INTEGER NOT NULL) WITHOUT ROWID",
    "INSERT INTO memory_namespaces (nstok, items) SELECT nstok, count(*) FROM memory_items GROUP BY nstok",
    "INSERT INTO memory_namespaces (nstok, items) SELECT '*', count(*) FROM memory_items",
    """CREATE TRIGGER memory_items_count_ai AFTER INSERT ON memory_items BEGIN
    INSERT INTO memory_namespaces (nstok, items) VALUES (new.nstok, 1)
        ON CONFLICT (nstok) DO UPDATE SET items = items + 1;
    UPDATE memory_namespaces SET items = items + 1 WHERE nstok = '*';
END""",
    """CREATE TRIGGER memory_items_count_ad AFTER DELETE ON memory_items BEGIN
    UPDATE memory_namespaces SET items = items - 1 WHERE nstok IN (old.nstok, '*');
    DELETE FROM memory_namespaces WHERE nstok = old.nstok AND items = 0;
END""",
)
_COLUMNS = "i.id, i.ns, i.text, i.origin, i.created, i.expires"
#: how many more rows than asked are joined at a time (expired items, ties at the edge)
_EDGE = 8
#: how many rows FTS5 ranks at first (before the limit grows): the bench's ties at the edge fit
_FIRST = 64


def require_sqlite_module(db: sqlite3.Connection, module: str = "fts5") -> None:
    """Refuse a SQLite build without virtual-table module ``module`` (FTS5), saying what to do."""
    try:
        db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp._probe_{module} USING {module}(x)")
        db.execute(f"DROP TABLE IF EXISTS temp._probe_{module}")
    except sqlite3.OperationalError as exc:
        if "no such module" in str(exc):
            raise MemoryStoreError(
                f"SqliteMemory needs SQLite's {module.upper()} full-text search, which this Python's SQLite "
                f"{sqlite3.sqlite_version} was built without ({exc}): use PostgresMemory(dsn) or InMemoryMemory(), "
                "or a Python whose sqlite3 module was built with FTS5 (the python.org and Debian builds are)"
            ) from None
        raise


class SqliteMemory(Memory):
    """Memory in the SQLite file ``path`` (``":memory:"`` for one that lives with the object)."""

    def __init__(self, path: str | Path, **options: Any) -> None:
        super().__init__(**options)
        self.path = str(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        # a stored text that is not UTF-8 reads back with lone surrogates, refused by read_row
        self._db.text_factory = lambda raw: raw.decode("utf-8", "surrogateescape")
        require_sqlite_module(self._db, "fts5")
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._count_namespaces()

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def _count_namespaces(self) -> None:
        """Create ``memory_namespaces`` (counted from the items already there) unless it exists."""
        exists = "SELECT 1 FROM sqlite_master WHERE name = 'memory_namespaces'"
        if self._db.execute(exists).fetchall():
            return
        self._db.execute("BEGIN IMMEDIATE")
        try:
            if not self._db.execute(exists).fetchall():  # another connection may have made it meanwhile
                for statement in _COUNTS:
                    self._db.execute(statement)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise

    def _write(self, item: MemoryItem, vector: list[float] | None) -> None:
        self._write_many([(item, vector)])

    def _write_many(self, made: list[tuple[MemoryItem, list[float] | None]]) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for item, vector in made:
                    self._db.execute("DELETE FROM memory_items WHERE id = ?", (item.id,))
                    self._db.execute(
                        "INSERT INTO memory_items (id, ns, nstok, text, origin, created, expires, vector) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (
                            item.id,
                            encode_namespace(item.namespace),
                            namespace_token(item.namespace),
                            item.text,
                            encode_origin(item.origin),
                            item.created,
                            item.expires,
                            None if vector is None else canonical_json(vector),
                        ),
                    )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _match(self, namespace: tuple[str, ...], words: list[str], k: int, now: float) -> list[MemoryItem]:
        """The ``k`` best live items: BM25 (ties: newest first, then id). FTS5 ranks on its own
        first (``ORDER BY`` its score ``LIMIT``: no join, no tie-break columns, for every match),
        then only the rows it kept are read; the limit grows until ``k`` live items are in hand
        and the last one kept scores strictly better than the first one left out — so an expired
        item, an item of another namespace or a tie at the edge never changes the answer.

        A namespace holding at least half of the items is searched without its token in the
        query (its rows are kept after ranking): every score is the same — the token's phrase
        adds 0.0 — and FTS5 no longer counts that namespace's rows to weigh a phrase of weight 0."""
        token = namespace_token(namespace)
        terms = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        query = f"text : ({terms})" if self._most_items(token) else f'nstok : "{token}" AND text : ({terms})'
        limit = max(k + _EDGE, _FIRST)
        while True:
            ranked = self._rows(
                "SELECT rowid, bm25(memory_fts, 0.0, 1.0) AS score FROM memory_fts WHERE memory_fts MATCH ? "
                "ORDER BY score LIMIT ?",
                (query, limit),
            )
            kept: list[tuple[float, Any]] = []
            read = 0
            while read < len(ranked):  # join the ranked rows a few at a time, best first
                chunk = ranked[read : read + k + _EDGE]
                read += len(chunk)
                score = {rid: float(value) for rid, value in chunk}
                rows = self._rows(
                    f"SELECT i.rid, {_COLUMNS} FROM memory_items i WHERE i.rid IN ({','.join('?' * len(chunk))}) "
                    "AND +i.nstok = ? AND (i.expires IS NULL OR i.expires > ?)",
                    (*score, token, now),
                )
                kept.extend((score[row[0]], row) for row in rows)
                kept.sort(key=lambda pair: (pair[0], -float(pair[1][5]), pair[1][1]))
                # every row not read yet scores at least ranked[read] (or ranked[-1], past the limit)
                edge = float(ranked[min(read, len(ranked) - 1)][1])
                if len(kept) >= k and kept[k - 1][0] < edge:
                    return [_item(row[1:7], -value) for value, row in kept[:k]]
            if len(ranked) < limit:  # every match was ranked and read
                return [_item(row[1:7], -value) for value, row in kept[:k]]
            limit *= 4

    def _most_items(self, token: str) -> bool:
        """Whether the namespace of ``token`` holds at least half of all items."""
        (mine, every), *_ = self._rows(
            "SELECT (SELECT items FROM memory_namespaces WHERE nstok = ?), "
            "(SELECT items FROM memory_namespaces WHERE nstok = '*')",
            (token,),
        )
        return isinstance(mine, int) and isinstance(every, int) and mine * 2 >= every

    def _recent(self, namespace: tuple[str, ...], k: int, now: float) -> list[MemoryItem]:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM memory_items i WHERE i.nstok = ? AND (i.expires IS NULL OR i.expires > ?) "
            "ORDER BY i.created DESC, i.id LIMIT ?",
            (namespace_token(namespace), now, k),
        )
        return [_item(row) for row in rows]

    def _scan(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None]]:
        rows = self._rows(
            f"SELECT {_COLUMNS}, i.vector FROM memory_items i WHERE i.nstok = ? "
            "AND (i.expires IS NULL OR i.expires > ?)",
            (namespace_token(namespace), now),
        )
        out = []
        for row in rows:
            pair = read_row(row, parse_vector=True)
            assert isinstance(pair, tuple)
            out.append(pair)
        return out

    def _get(self, item: str) -> MemoryItem | None:
        rows = self._rows(f"SELECT {_COLUMNS} FROM memory_items i WHERE i.id = ?", (item,))
        return _item(rows[0]) if rows else None

    def _delete(self, item: str) -> bool:
        with self._lock:
            return self._db.execute("DELETE FROM memory_items WHERE id = ?", (item,)).rowcount > 0


def _item(row: Any, score: float = 0.0) -> MemoryItem:
    found = read_row(tuple(row), score)
    if not isinstance(found, MemoryItem):  # pragma: no cover - read_row without parse_vector
        raise MemoryStoreError("internal: a row read as a pair")
    return found
