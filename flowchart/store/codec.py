"""How records travel to and from a database row: JSON text, one owned encoding.

Law: every column a store writes is JSON text produced here (compact, no NaN), and a
value that is not JSON-safe is stored as its ``repr()`` string — a run's output is a
record, and a record must never make the write that ends a run fail.
"""

from __future__ import annotations

import json
from typing import Any

from ..commits import Commit
from ..pause import Checkpoint
from ..serde import dumps
from ..values import NotJsonSafe, copy_json


def encode(value: Any) -> str:
    """JSON text for ``value`` (its ``repr()`` as a JSON string when not JSON-safe)."""
    try:
        return dumps(copy_json(value))
    except NotJsonSafe:
        return dumps(repr(value))


def decode(text: str | None) -> Any:
    """The value ``encode`` wrote (``None`` for a NULL column)."""
    return None if text is None else json.loads(text)


def encode_commit(commit: Commit) -> str:
    """One commit log row: the commit's diff (``Commit.to_dict``), never the whole state."""
    return dumps(commit.to_dict())


def decode_commit(text: str) -> Commit:
    """Inverse of ``encode_commit``."""
    return Commit.from_dict(json.loads(text))


def encode_checkpoint(checkpoint: Checkpoint | None) -> str | None:
    """The checkpoint's own JSON (``Checkpoint.to_json``) or NULL."""
    return None if checkpoint is None else checkpoint.to_json()


def decode_checkpoint(text: str | None) -> Checkpoint | None:
    """Inverse of ``encode_checkpoint`` (validated by the checkpoint converter)."""
    return None if text is None else Checkpoint.from_json(text)
