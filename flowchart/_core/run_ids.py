"""The one run-id rule, for every store (SQLite, PostgreSQL, memory) and for runs without one.

Law: a run id is a string of 1 to ``MAX_RUN_ID_LENGTH`` (200) characters, every one
printable — no NUL (PostgreSQL cannot store it; SQLite would), no control character (an
escape sequence would reach an operator's terminal), no line break, no bidirectional
override, no lone surrogate (it is not text) — and with no space at either end (two ids
that print alike must be one id). ``check_run_id`` refuses anything else with
``RunIdError`` naming the id (escaped, ``flowchart._core.printable``) and the character at
fault, before anything is written: ``RunOptions`` checks a caller-chosen id when the run
is asked for, and every store's ``create`` checks again. A fresh id (``uuid4().hex``)
always passes. A conversation id follows the same rule (``check_run_id(cid, "conversation
id")``, in every store's ``create``). The rule says nothing about file names: a reader that derives a file from
an id takes ``file_name(run_id, suffix)`` — one plain name in the working directory (no
folder, no ``..``, no leading dot or dash), the id itself when it is already plain, else
its letters, digits, ``.``, ``_``, ``-`` with a short hash of the whole id, so two ids never
share a file (``agent view RUN`` writes ``file_name(RUN, ".html")``).
"""

from __future__ import annotations

import hashlib
import re

from flowchart._core.errors import RunIdError
from flowchart._core.printable import is_printable, printable

__all__ = ["MAX_RUN_ID_LENGTH", "check_run_id", "file_name"]

#: the longest run id a store accepts
MAX_RUN_ID_LENGTH = 200

_RULE = f"a run id is 1 to {MAX_RUN_ID_LENGTH} printable characters with no space at either end"


def check_run_id(run_id: object, what: str = "run id") -> str:
    """``run_id`` itself when it follows the rule; ``TypeError`` for a non-string, else ``RunIdError``
    (``what`` names the id in the message: a conversation id follows the same rule)."""
    rule = _RULE.replace("a run id", f"a {what}")
    if not isinstance(run_id, str):
        raise TypeError(f"a {what} must be a string, got {type(run_id).__name__}")
    shown = printable(run_id[:60]) + ("..." if len(run_id) > 60 else "")
    if not run_id:
        raise RunIdError(f"the {what} is empty: {rule}", run_id=run_id)
    if len(run_id) > MAX_RUN_ID_LENGTH:
        raise RunIdError(f"{what} '{shown}' is {len(run_id)} characters long: {rule}", run_id=run_id)
    if not is_printable(run_id):
        at = next(i for i, char in enumerate(run_id) if not is_printable(char))
        fault = printable(run_id[at])
        raise RunIdError(f"{what} '{shown}' has a control character ({fault} at {at}): {rule}", run_id=run_id)
    if any(0xD800 <= ord(char) <= 0xDFFF for char in run_id):
        raise RunIdError(f"{what} '{shown}' has a lone surrogate (it is not text): {rule}", run_id=run_id)
    if run_id != run_id.strip():
        raise RunIdError(f"{what} '{shown}' starts or ends with a space: {rule}", run_id=run_id)
    return run_id


_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")


def file_name(run_id: str, suffix: str) -> str:
    """A safe file name for ``run_id`` ending in ``suffix``: the id when it is plain (letters,
    digits, ``.``, ``_``, ``-``; not starting with a dot or dash; at most 80 characters), else
    its plain characters (cut to 60) and ``-`` with 8 hex digits of the id's SHA-256."""
    if _PLAIN.fullmatch(run_id) and ".." not in run_id:
        return run_id + suffix
    kept = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id).replace("..", "_").lstrip("._-")[:60]
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{kept}-{digest}{suffix}" if kept else f"run-{digest}{suffix}"
