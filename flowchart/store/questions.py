"""A stored run's pending question, read back as the type that asked it.

Law: the store keeps a question as JSON; a package whose runs pause with typed requests
registers a reader for its run ``kind`` (``register_question_reader``), and every store
hands ``RunRecord.question`` through it — so a process holding only a run id gets the
typed request back. ``flowchart`` never imports such a package: the reader comes to it.
A run kind with no reader keeps its question as stored. A reader that cannot read the
stored question raises (fail closed); it never guesses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_READERS: dict[str, Callable[[Any], Any]] = {}


def register_question_reader(kind: str, reader: Callable[[Any], Any]) -> None:
    """Read the questions of runs of ``kind`` with ``reader(stored_json) -> typed``."""
    if not callable(reader):
        raise TypeError(f"register_question_reader({kind!r}, reader): the reader must be callable")
    _READERS[kind] = reader


def read_question(kind: str, question: Any) -> Any:
    """``question`` (as stored) for a run of ``kind``: typed by its reader, if one is registered."""
    reader = _READERS.get(kind)
    return question if reader is None or question is None else reader(question)
