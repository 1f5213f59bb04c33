"""Sole ownership, proved by the reference count: when a value may be changed in place.

Law: a value someone else may hold is never changed. The engine changes a list in place
(extends the state's list by a commit's appended tail, lends a stage the view it already
has of a list) only when the interpreter's reference count proves that nothing but the
engine's own holders reach it — not the commit log, a recorder, a checkpoint, a result, a
``raw_read`` caller or a stage that kept what it read. Anything the count cannot prove is
shared and is copied, as before: on an interpreter without ``sys.getrefcount`` everything is.

:func:`holders` counts the references to a value beyond the caller's one local name, so
``holders(x) == 0`` means the caller's ``x`` is the only way to it. The count it subtracts is
measured once, at import, through the same calls, and checked there (no holder, then one): an
interpreter that counts otherwise, or a build without the global lock, proves nothing sole.
"""

from __future__ import annotations

import sys
from typing import Any


def _uncounted(_value: Any) -> int:
    return sys.maxsize


# a build without the global lock counts references per thread: nothing is proved sole there
_COUNT: Any = getattr(sys, "getrefcount", None) if getattr(sys, "_is_gil_enabled", lambda: True)() else None
_BASE = 0


def holders(value: Any) -> int:
    """How many references to ``value`` there are besides the caller's one local name for it
    (``sys.maxsize`` where the interpreter cannot count them: then nothing is ever sole)."""
    return (_COUNT or _uncounted)(value) - _BASE


def _alone() -> int:
    """What ``holders`` reads, uncorrected, for a value held by one local name of its caller alone."""
    probe: list[Any] = []
    return holders(probe)


def _counts_right() -> bool:
    """The count proves what it must on this interpreter: none besides a local, then one per holder."""
    probe: list[Any] = []
    alone = holders(probe)
    box = {"probe": probe}
    held = holders(probe)
    del box
    return alone == 0 and held == 1


_BASE = _alone()
if not _counts_right():  # an interpreter that counts otherwise: everything is shared
    _COUNT = None


__all__ = ["holders"]
