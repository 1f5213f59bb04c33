"""``InMemoryMemory()``: memory in a dict, for tests and single-process demos.

Law: it ranks as the SQL backends do — Okapi BM25 over the items' lowercase words, ties to
the most recent then the id — from an inverted index per namespace (a search reads only the
items that hold one of its words), and holds items as the same frozen values a stored row is
read back into. Document frequencies count the namespace's items, expired ones included (an
expired item is never returned; ``delete`` forgets it).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from agent.memory.base import Memory, _scored
from agent.memory.items import MemoryItem, word_counts

__all__ = ["InMemoryMemory"]

_K1, _B = 1.2, 0.75


@attrs.define
class _Space:
    """One namespace: its items (with vector and word counts), the inverted index, total words."""

    items: dict[str, tuple[MemoryItem, list[float] | None, dict[str, int], int]] = attrs.Factory(dict)
    index: dict[str, dict[str, int]] = attrs.Factory(dict)
    words: int = 0

    def add(self, item: MemoryItem, vector: list[float] | None) -> None:
        self.remove(item.id)
        counts, length = word_counts(item.text)
        self.items[item.id] = (item, vector, counts, length)
        for word, tf in counts.items():
            self.index.setdefault(word, {})[item.id] = tf
        self.words += length

    def remove(self, ident: str) -> bool:
        entry = self.items.pop(ident, None)
        if entry is None:
            return False
        for word in entry[2]:
            postings = self.index[word]
            del postings[ident]
            if not postings:
                del self.index[word]
        self.words -= entry[3]
        return True


def _live(item: MemoryItem, now: float) -> bool:
    return item.expires is None or item.expires > now


class InMemoryMemory(Memory):
    """Memory held in this process (lost when it ends). Same API as ``SqliteMemory``."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._spaces: dict[tuple[str, ...], _Space] = {}
        self._where: dict[str, tuple[str, ...]] = {}

    def _write(self, item: MemoryItem, vector: list[float] | None) -> None:
        self._spaces.setdefault(item.namespace, _Space()).add(item, vector)
        self._where[item.id] = item.namespace

    def _match(self, namespace: tuple[str, ...], words: list[str], k: int, now: float) -> list[MemoryItem]:
        space = self._spaces.get(namespace)
        if space is None or not space.items:
            return []
        n = len(space.items)
        avg = space.words / n or 1.0
        scores: dict[str, float] = {}
        for word in words:
            postings = space.index.get(word)
            if not postings:
                continue
            idf = math.log(1 + (n - len(postings) + 0.5) / (len(postings) + 0.5))
            for ident, tf in postings.items():
                length = space.items[ident][3]
                scores[ident] = scores.get(ident, 0.0) + idf * tf * (_K1 + 1) / (
                    tf + _K1 * (1 - _B + _B * length / avg)
                )
        found = [(score, space.items[i][0]) for i, score in scores.items() if _live(space.items[i][0], now)]
        found.sort(key=lambda pair: (-pair[0], -pair[1].created, pair[1].id))
        return [_scored(item, score) for score, item in found[:k]]

    def _recent(self, namespace: tuple[str, ...], k: int, now: float) -> list[MemoryItem]:
        space = self._spaces.get(namespace)
        live = [entry[0] for entry in space.items.values() if _live(entry[0], now)] if space else []
        live.sort(key=lambda item: (-item.created, item.id))
        return live[:k]

    def _scan(self, namespace: tuple[str, ...], now: float) -> list[tuple[MemoryItem, list[float] | None]]:
        space = self._spaces.get(namespace)
        return [(e[0], e[1]) for e in space.items.values() if _live(e[0], now)] if space else []

    def _get(self, item: str) -> MemoryItem | None:
        namespace = self._where.get(item)
        return self._spaces[namespace].items[item][0] if namespace is not None else None

    def _delete(self, item: str) -> bool:
        namespace = self._where.pop(item, None)
        return namespace is not None and self._spaces[namespace].remove(item)
