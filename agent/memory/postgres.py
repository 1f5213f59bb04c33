"""``PostgresMemory(dsn)``: memory in PostgreSQL, searched by its full-text search (psycopg 3).

Laws:
- psycopg is imported when a memory is made, not when this module is; without it the
  error says how to install it.
- One table, ``memory_items``, with a generated ``tsvector`` of the text (the ``simple``
  configuration: no stemming, as SQLite's FTS5 ``unicode61``) under a GIN index; a search
  is one query ``WHERE ns = ... AND doc @@ (w1 | w2 ...)`` ranked by ``ts_rank``.
- Every row read back goes through ``items.read_row`` (untrusted: checked field by field).
"""

from __future__ import annotations

import threading
from typing import Any

from agent.memory.base import Memory
from agent.memory.items import MemoryItem, encode_namespace, encode_origin, read_row
from flowchart.lowlevel import canonical_json

__all__ = ["PostgresMemory"]

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS memory_items ("
    " id TEXT PRIMARY KEY, ns TEXT NOT NULL, text TEXT NOT NULL, origin TEXT NOT NULL,"
    " created DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION, vector TEXT,"
    " doc tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED)",
    "CREATE INDEX IF NOT EXISTS memory_items_doc ON memory_items USING GIN (doc)",
    "CREATE INDEX IF NOT EXISTS memory_items_ns ON memory_items (ns, created)",
)
_COLUMNS = "id, ns, text, origin, created, expires"
_LOCK_KEY = 0x70F7_3E30  # an advisory lock owned by pyfootprint's memory: one migration at a time


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise ImportError(
            "PostgresMemory needs psycopg 3: pip install 'psycopg[binary]' (in a pyfootprint checkout: "
            "pip install -e '.[postgres]')"
        ) from None
    return psycopg


class PostgresMemory(Memory):
    """Memory in the PostgreSQL database at ``dsn`` (as psycopg takes it)."""

    def __init__(self, dsn: str, *, connect_timeout: float = 10.0, **options: Any) -> None:
        super().__init__(**options)
        psycopg = _psycopg()
        self._lock = threading.Lock()
        self._db = psycopg.connect(dsn, autocommit=True, connect_timeout=int(connect_timeout))
        with self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
            for statement in _SCHEMA:
                self._db.execute(statement)

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def _write(self, item: MemoryItem, vector: list[float] | None) -> None:
        with self._lock:
            self._db.execute(
                "INSERT INTO memory_items (id, ns, text, origin, created, expires, vector) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "created = EXCLUDED.created, expires = EXCLUDED.expires, vector = EXCLUDED.vector",
                (
                    item.id,
                    encode_namespace(item.namespace),
                    item.text,
                    encode_origin(item.origin),
                    item.created,
                    item.expires,
                    None if vector is None else canonical_json(vector),
                ),
            )

    def _match(self, namespace: tuple[str, ...], words: list[str], k: int, now: float) -> list[MemoryItem]:
        # each word is a lexeme of \w characters: quoted as a tsquery literal, OR-ed
        query = " | ".join("'" + w.replace("'", "''") + "'" for w in words)
        rows = self._rows(
            f"SELECT {_COLUMNS}, ts_rank(doc, q) AS rank FROM memory_items, to_tsquery('simple', %s) q "
            "WHERE ns = %s AND doc @@ q AND (expires IS NULL OR expires > %s) "
            "ORDER BY rank DESC, created DESC, id LIMIT %s",
            (query, encode_namespace(namespace), now, k),
        )
        return [_item(row[:6], float(row[6])) for row in rows]

    def _recent(self, namespace: tuple[str, ...], k: int, now: float) -> list[MemoryItem]:
        rows = self._rows(
            f"SELECT {_COLUMNS} FROM memory_items WHERE ns = %s AND (expires IS NULL OR expires > %s) "
            "ORDER BY created DESC, id LIMIT %s",
            (encode_namespace(namespace), now, k),
        )
        return [_item(row) for row in rows]

    def _scan(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None]]:
        rows = self._rows(
            f"SELECT {_COLUMNS}, vector FROM memory_items WHERE ns = %s AND (expires IS NULL OR expires > %s)",
            (encode_namespace(namespace), now),
        )
        out = []
        for row in rows:
            pair = read_row(tuple(row), parse_vector=True)
            assert isinstance(pair, tuple)
            out.append(pair)
        return out

    def _get(self, item: str) -> MemoryItem | None:
        rows = self._rows(f"SELECT {_COLUMNS} FROM memory_items WHERE id = %s", (item,))
        return _item(rows[0]) if rows else None

    def _delete(self, item: str) -> bool:
        with self._lock:
            return int(self._db.execute("DELETE FROM memory_items WHERE id = %s", (item,)).rowcount or 0) > 0


def _item(row: Any, score: float = 0.0) -> MemoryItem:
    found = read_row(tuple(row), score)
    assert isinstance(found, MemoryItem)
    return found
