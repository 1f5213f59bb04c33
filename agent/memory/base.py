"""What every memory backend does the same way: check, stamp, expire, rank by vectors.

Law: ``put`` checks the namespace, text and origin before anything is written (nothing is
half-written on bad input) and returns the item's id (a digest: ``items.item_id``);
``search`` never returns an item past its ``expires``; with ``embed=`` it ranks the
namespace's items by cosine similarity of stored vectors, otherwise the backend ranks by
its full-text index (``items.search_words``). A backend implements the five storage
methods below and nothing else.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent.errors import MemoryStoreError
from agent.memory.items import (
    MemoryItem,
    check_embedding,
    check_namespace,
    check_origin,
    check_text,
    cosine,
    item_id,
    search_words,
)

__all__ = ["Memory"]


class Memory:
    """Long-term memory: items in namespaces, searched by words (or by ``embed=`` vectors).

    ``ttl`` (seconds) is how long an item lives unless ``put`` says otherwise (``None``:
    forever); ``embed`` (``text -> list[float]``) makes search semantic; ``clock`` is
    where "now" comes from (seconds since the epoch; tests pass a fixed one).
    """

    def __init__(
        self,
        *,
        ttl: float | None = None,
        embed: Callable[[str], Any] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int | float) or ttl <= 0):
            raise MemoryStoreError(f"memory ttl must be a positive number of seconds or None, got {ttl!r}")
        if embed is not None and not callable(embed):
            raise MemoryStoreError(f"memory embed= must be a function text -> list[float], got {type(embed).__name__}")
        self.ttl = ttl
        self.embed = embed
        self.clock = clock

    # -- the API ---------------------------------------------------------------------------
    def put(self, namespace: tuple[str, ...], text: str, origin: Any = None, *, ttl: float | None = None) -> str:
        """Remember ``text`` in ``namespace``; ``origin`` says where it came from (``run_id``,
        ``conversation``, ``turn``, ``commit``, ``stage``). Returns the item's id."""
        item, vector = self._made(namespace, text, origin, ttl=ttl)
        self._write(item, vector)
        return item.id

    def put_many(self, entries: Any, *, ttl: float | None = None) -> list[str]:
        """``put`` for many ``(namespace, text, origin)`` entries at once (one transaction where the
        backend has them); every entry is checked before any is written. Returns their ids."""
        made = []
        for number, entry in enumerate(entries):
            if not isinstance(entry, tuple) or len(entry) not in (2, 3):
                raise MemoryStoreError(
                    f"put_many: entry {number} must be (namespace, text) or (namespace, text, origin)"
                )
            made.append(self._made(*entry, ttl=ttl))
        self._write_many(made)
        return [item.id for item, _ in made]

    def _made(
        self, namespace: Any, text: Any, origin: Any = None, *, ttl: float | None = None
    ) -> tuple[MemoryItem, list[float] | None]:
        ns = check_namespace(namespace)
        body = check_text(text)
        where = check_origin(origin)
        life = self.ttl if ttl is None else ttl
        if life is not None and (isinstance(life, bool) or not isinstance(life, int | float) or life <= 0):
            raise MemoryStoreError(f"put(ttl=...): expected a positive number of seconds, got {life!r}")
        vector = check_embedding(self.embed(body)) if self.embed is not None else None
        now = float(self.clock())
        item = MemoryItem(item_id(ns, body, where), ns, body, where, now, None if life is None else now + life)
        return item, vector

    def search(self, namespace: tuple[str, ...], query: str, k: int = 5) -> list[MemoryItem]:
        """The ``k`` items of ``namespace`` that best match ``query``, best first (the most
        recent first when the query has no words); expired items are never returned."""
        ns = check_namespace(namespace)
        if not isinstance(query, str):
            raise MemoryStoreError(f"search(query=...): expected a string, got {type(query).__name__}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise MemoryStoreError(f"search(k=...): expected a positive integer, got {k!r}")
        now = float(self.clock())
        if self.embed is not None and query.strip():
            wanted = check_embedding(self.embed(query))
            scored = [(cosine(wanted, vector), item) for item, vector in self._scan(ns, now) if vector is not None]
            scored.sort(key=lambda pair: (-pair[0], -pair[1].created, pair[1].id))
            return [_scored(item, score) for score, item in scored[:k] if score > 0]
        words = search_words(query)
        if not words:
            return self._recent(ns, k, now)
        return self._match(ns, words, k, now)

    def get(self, item: str) -> MemoryItem | None:
        """The item with id ``item`` (``None`` when there is none, or it expired)."""
        found = self._get(item)
        return found if found is not None and (found.expires is None or found.expires > self.clock()) else None

    def delete(self, item: str) -> bool:
        """Forget item ``item``; True when there was one."""
        return self._delete(item)

    def close(self) -> None:
        """Release the backend's connection (if it holds one)."""

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *_exc: Any) -> None:
        self.close()

    # -- a backend's part ------------------------------------------------------------------
    def _write(self, item: MemoryItem, vector: list[float] | None) -> None:
        raise NotImplementedError

    def _write_many(self, made: list[tuple[MemoryItem, list[float] | None]]) -> None:
        for item, vector in made:
            self._write(item, vector)

    def _match(self, namespace: tuple[str, ...], words: list[str], k: int, now: float) -> list[MemoryItem]:
        raise NotImplementedError

    def _recent(self, namespace: tuple[str, ...], k: int, now: float) -> list[MemoryItem]:
        raise NotImplementedError

    def _scan(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None]]:
        raise NotImplementedError

    def _get(self, item: str) -> MemoryItem | None:
        raise NotImplementedError

    def _delete(self, item: str) -> bool:
        raise NotImplementedError


def _scored(item: MemoryItem, score: float) -> MemoryItem:
    return MemoryItem(item.id, item.namespace, item.text, item.origin, item.created, item.expires, score)
