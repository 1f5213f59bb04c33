"""A stored run's pending question, read back as the type that asked it.

Law: the store keeps a question as JSON; a package whose runs pause with typed requests
names a reader for its run ``kind``, and every store hands ``RunRecord.question`` through
it — so a process holding only a run id gets the typed request back, whether or not it
imported that package. ``flowchart`` never imports such a package: the reader is found by
name, in the ``flowchart.question_readers`` entry-point group (``kind = "module:function"``,
as the agent declares ``agent = "governance.human:pending_request"`` in its
``pyproject.toml``), or given in code with ``register_question_reader`` (which wins). Nothing
is registered by importing a module. A run kind with no reader keeps its question as
stored. A reader that cannot read the stored question raises (fail closed); it never guesses.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

READER_GROUP = "flowchart.question_readers"

_READERS: dict[str, Callable[[Any], Any]] = {}
_FOUND: dict[str, Callable[[Any], Any] | None] = {}
_lock = threading.Lock()


def register_question_reader(kind: str, reader: Callable[[Any], Any]) -> None:
    """Read the questions of runs of ``kind`` with ``reader(stored_json) -> typed`` (in this process;
    it takes the place of a reader the ``flowchart.question_readers`` entry points name)."""
    if not callable(reader):
        raise TypeError(f"register_question_reader({kind!r}, reader): the reader must be callable")
    _READERS[kind] = reader


def _declared(kind: str) -> Callable[[Any], Any] | None:
    """The reader the installed packages declare for ``kind`` (looked up once per kind)."""
    with _lock:
        if kind not in _FOUND:
            from importlib.metadata import entry_points

            points = [p for p in entry_points(group=READER_GROUP) if p.name == kind]
            _FOUND[kind] = points[0].load() if points else None
        return _FOUND[kind]


def read_question(kind: str, question: Any) -> Any:
    """``question`` (as stored) for a run of ``kind``: typed by its reader, if there is one."""
    if question is None:
        return None
    reader = _READERS.get(kind) or _declared(kind)
    return question if reader is None else reader(question)
