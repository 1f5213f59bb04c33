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
        self._items: dict[str, tuple[MemoryItem, list[float] | None, list[str]]] = {}

    def _write(self, item: MemoryItem, vector: list[float] | None) -> None:
        self._items[item.id] = (item, vector, tokens(item.text))

    def _live(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None, list[str]]]:
        return [
            entry
            for entry in self._items.values()
            if entry[0].namespace == namespace and (entry[0].expires is None or entry[0].expires > now)
        ]

    def _match(self, namespace: tuple[str, ...], words: list[str], k: int, now: float) -> list[MemoryItem]:
        live = {entry[0].id: entry[0] for entry in self._live(namespace, now)}
        docs = [(entry[0].id, entry[2]) for entry in self._live(namespace, now)]
        scored = bm25(docs, words)
        scored.sort(key=lambda pair: (-pair[0], -live[pair[1]].created, pair[1]))
        return [_scored(live[key], score) for score, key in scored[:k]]

    def _recent(self, namespace: tuple[str, ...], k: int, now: float) -> list[MemoryItem]:
        live = [entry[0] for entry in self._live(namespace, now)]
        live.sort(key=lambda item: (-item.created, item.id))
        return live[:k]

    def _scan(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None]]:
        return [(entry[0], entry[1]) for entry in self._live(namespace, now)]

    def _get(self, item: str) -> MemoryItem | None:
        entry = self._items.get(item)
        return entry[0] if entry is not None else None

    def _delete(self, item: str) -> bool:
        return self._items.pop(item, None) is not None
