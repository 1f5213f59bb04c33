"""The one run-id rule, for every store (SQLite, PostgreSQL, memory) and for runs without one.

Law: a run id is a string of 1 to ``MAX_RUN_ID_LENGTH`` (200) characters, every one
printable — no NUL (PostgreSQL cannot store it; SQLite would), no control character (an
escape sequence would reach an operator's terminal), no line break, no bidirectional
override, no lone surrogate (it is not text) — and with no space at either end (two ids
that print alike must be one id). ``check_run_id`` refuses anything else with
``RunIdError`` naming the id (escaped, ``flowchart.printable``) and the character at
fault, before anything is written: ``RunOptions`` checks a caller-chosen id when the run
is asked for, and every store's ``create`` checks again. A fresh id (``uuid4().hex``)
always passes. The rule says nothing about file names: a reader that derives a path from
an id makes its own safe name (``agent view``).
"""

from __future__ import annotations

from .errors import RunIdError
from .printable import is_printable, printable

__all__ = ["MAX_RUN_ID_LENGTH", "check_run_id"]

#: the longest run id a store accepts
MAX_RUN_ID_LENGTH = 200

_RULE = f"a run id is 1 to {MAX_RUN_ID_LENGTH} printable characters with no space at either end"


def check_run_id(run_id: object) -> str:
    """``run_id`` itself when it follows the rule; ``TypeError`` for a non-string, else ``RunIdError``."""
    if not isinstance(run_id, str):
        raise TypeError(f"a run id must be a string, got {type(run_id).__name__}")
    shown = printable(run_id[:60]) + ("..." if len(run_id) > 60 else "")
    if not run_id:
        raise RunIdError(f"the run id is empty: {_RULE}", run_id=run_id)
    if len(run_id) > MAX_RUN_ID_LENGTH:
        raise RunIdError(f"run id '{shown}' is {len(run_id)} characters long: {_RULE}", run_id=run_id)
    if not is_printable(run_id):
        at = next(i for i, char in enumerate(run_id) if not is_printable(char))
        what = printable(run_id[at])
        raise RunIdError(f"run id '{shown}' has a control character ({what} at {at}): {_RULE}", run_id=run_id)
    if any(0xD800 <= ord(char) <= 0xDFFF for char in run_id):
        raise RunIdError(f"run id '{shown}' has a lone surrogate (it is not text): {_RULE}", run_id=run_id)
    if run_id != run_id.strip():
        raise RunIdError(f"run id '{shown}' starts or ends with a space: {_RULE}", run_id=run_id)
    return run_id
