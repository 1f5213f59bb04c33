"""``agent.memory``: long-term memory an agent remembers into and recalls from.

``SqliteMemory(path)`` (embedded, searched by SQLite's FTS5), ``PostgresMemory(dsn)``
(PostgreSQL full-text search), ``InMemoryMemory()`` (tests). Items live in namespaces —
tuples of strings such as ``("acme", "u-7")`` — and each records where it came from
(``origin``: run id, conversation, turn, commit, stage). ``m.put(namespace, text,
origin=None) -> id``; ``m.search(namespace, query, k=5) -> [MemoryItem]``. Give one to an
agent with ``Agent.create(..., memory=m, recall=k)`` (docs/memory.md).
"""

from __future__ import annotations

from agent.errors import MemoryStoreError
from agent.memory.base import Memory
from agent.memory.inmemory import InMemoryMemory
from agent.memory.items import MemoryItem
from agent.memory.postgres import PostgresMemory
from agent.memory.sqlite import SqliteMemory

__all__ = ["InMemoryMemory", "Memory", "MemoryItem", "MemoryStoreError", "PostgresMemory", "SqliteMemory"]
