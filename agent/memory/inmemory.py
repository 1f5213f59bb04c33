"""``InMemoryMemory()``: memory in a dict, for tests and single-process demos.

Law: it ranks exactly as the SQL backends are meant to — Okapi BM25 over the item's
lowercase words (``items.bm25``), ties to the most recent then the id — and holds items
as the same frozen values a stored row is read back into.
"""

from __future__ import annotations

from typing import Any

from agent.memory.base import Memory, _scored
from agent.memory.items import MemoryItem, bm25, tokens

__all__ = ["InMemoryMemory"]


class InMemoryMemory(Memory):
    """Memory held in this process (lost when it ends). Same API as ``SqliteMemory``."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # namespace -> id -> (item, vector, words): a search reads its namespace only
        self._spaces: dict[tuple[str, ...], dict[str, tuple[MemoryItem, list[float] | None, list[str]]]] = {}
        self._where: dict[str, tuple[str, ...]] = {}

    def _write(self, item: MemoryItem, vector: list[float] | None) -> None:
        self._spaces.setdefault(item.namespace, {})[item.id] = (item, vector, tokens(item.text))
        self._where[item.id] = item.namespace

    def _live(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None, list[str]]]:
        space = self._spaces.get(namespace, {})
        return [entry for entry in space.values() if entry[0].expires is None or entry[0].expires > now]

    def _match(self, namespace: tuple[str, ...], words: list[str], k: int, now: float) -> list[MemoryItem]:
        live = self._live(namespace, now)
        found = {entry[0].id: entry[0] for entry in live}
        scored = bm25([(entry[0].id, entry[2]) for entry in live], words)
        scored.sort(key=lambda pair: (-pair[0], -found[pair[1]].created, pair[1]))
        return [_scored(found[key], score) for score, key in scored[:k]]

    def _recent(self, namespace: tuple[str, ...], k: int, now: float) -> list[MemoryItem]:
        live = [entry[0] for entry in self._live(namespace, now)]
        live.sort(key=lambda item: (-item.created, item.id))
        return live[:k]

    def _scan(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None]]:
        return [(entry[0], entry[1]) for entry in self._live(namespace, now)]

    def _get(self, item: str) -> MemoryItem | None:
        namespace = self._where.get(item)
        return self._spaces[namespace][item][0] if namespace is not None else None

    def _delete(self, item: str) -> bool:
        namespace = self._where.pop(item, None)
        if namespace is None:
            return False
        del self._spaces[namespace][item]
        return True
