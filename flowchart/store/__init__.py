"""Durable runs: a run store keeps each run's commit log, pause and outcome.

``SqliteStore(path)`` is the embedded default, ``PostgresStore(dsn)`` the store for
many processes on many machines (extra ``[postgres]``), ``MemoryStore()`` one for
tests. They share the ``RunStore`` contract (see ``protocol`` for the laws) and one
behavioural test suite. Charts record into a store with ``chart.run(..., store=...)``,
agents with ``Agent.create(..., store=...)``.
"""

from flowchart.store.memory import MemoryStore
from flowchart.store.postgres import PostgresStore
from flowchart.store.protocol import (
    STATUSES,
    AlreadyAnsweredError,
    CommitConflictError,
    NotARunStoreError,
    RunExistsError,
    RunList,
    RunNotFoundError,
    RunRecord,
    RunStore,
    SchemaVersionError,
    Segment,
    Status,
    StoredRowError,
    StoreError,
    TurnTakenError,
)
from flowchart.store.questions import register_question_reader
from flowchart.store.schema import SCHEMA_VERSION
from flowchart.store.sqlite import SqliteStore
from flowchart.store.summaries import RunSummary, SummaryList

__all__ = [
    "SCHEMA_VERSION",
    "STATUSES",
    "AlreadyAnsweredError",
    "CommitConflictError",
    "MemoryStore",
    "NotARunStoreError",
    "PostgresStore",
    "RunExistsError",
    "RunList",
    "RunNotFoundError",
    "RunRecord",
    "RunStore",
    "RunSummary",
    "SchemaVersionError",
    "Segment",
    "SqliteStore",
    "Status",
    "StoreError",
    "StoredRowError",
    "SummaryList",
    "TurnTakenError",
    "register_question_reader",
]
