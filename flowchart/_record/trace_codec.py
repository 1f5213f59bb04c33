"""A trace file's commit log, fast both ways: written in chunks, checked once loaded.

Laws:
- Saving writes the commit log in chunks (``log_chunks``: ``CHUNK`` commits per
  ``json.dumps`` call, plain data from ``commit_data``, no converter call and no copy per
  commit) to a temporary file beside the target that replaces it only when complete
  (``write_atomically``), so a failed save leaves nothing half-written.
- Loading a freshly parsed commit log takes the strict passes of ``flowchart._record.trace_parsed``
  (accepting only what the converter accepts; anything else goes through the converter,
  which names the bad field, so both paths accept and refuse exactly the same documents).
- Every loaded log is checked the same way (``check_log``): commit ``idx`` equals its
  position; an op path is non-empty and at most ``MAX_DEPTH`` keys; a delete carries no
  value, an append a list. A refusal is a ``CheckpointError`` naming the field path.
"""

from __future__ import annotations

import contextlib
import gc
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from operator import attrgetter
from pathlib import Path
from typing import Any

from flowchart._core.commits import Commit, Op, commit_data
from flowchart._core.errors import CheckpointError
from flowchart._core.fastjson import available, dumps_exact, plain
from flowchart._core.pause import Checkpoint, structure_checkpoint
from flowchart._core.serde import dumps
from flowchart._core.untrusted import MAX_DEPTH

#: commits per ``json.dumps`` call when a trace is written (the text never holds the whole log twice)
CHUNK = 1024


# -- writing ----------------------------------------------------------------------------------------
def log_chunks(log: Sequence[Commit]) -> Iterator[str | bytes]:
    """The JSON text of a commit log (a list) in pieces of ``CHUNK`` commits (``bytes``, UTF-8:
    a piece orjson wrote, where it provably writes what ``json`` would — ``fastjson``)."""
    yield "["
    for start in range(0, len(log), CHUNK):
        chunk = log[start : start + CHUNK]
        data = [commit_data(c) for c in chunk]
        fast = dumps_exact(data, proved=True) if available() and plain_log(chunk) else None
        if fast is not None:
            yield fast[1:-1] if start == 0 else b"," + fast[1:-1]
            continue
        text = dumps(data)
        yield text[1:-1] if start == 0 else "," + text[1:-1]
    yield "]"


_SCALARS = frozenset((str, int, bool, type(None)))
_SEQUENCES = frozenset((tuple, list))
_STR = frozenset((str,))
_heads = attrgetter("idx", "stage", "stage_id", "runtime_stage_id", "recovers")
_reads = attrgetter("reads")
_redacted = attrgetter("redacted_paths")
_ops = attrgetter("trace")
_idx = attrgetter("idx")
_path = attrgetter("path")


def _strs(column: list[Any]) -> bool:
    """Every item a tuple or list of str."""
    return set(map(type, column)) <= _SEQUENCES and set(map(type, chain.from_iterable(column))) <= _STR


def plain_log(commits: Sequence[Commit]) -> bool:
    """``fastjson.plain`` of the commits' ``commit_data``, shown column by column in C: every
    value exactly a str, int, bool or None (no float: the writers print floats differently),
    every container a dict with str keys, a list or a tuple. The free values (op values,
    decisions, attempts) go through ``fastjson.plain`` itself."""
    if not set(map(type, commits)) <= {Commit}:
        return False
    if not set(map(type, chain.from_iterable(map(_heads, commits)))) <= _SCALARS:
        return False
    if not _strs(list(map(_reads, commits))) or not _strs(list(map(_redacted, commits))):
        return False
    ops = list(chain.from_iterable(map(_ops, commits)))
    if not set(map(type, ops)) <= {Op} or not _strs([op.path for op in ops]):
        return False
    if not set(map(type, (op.verb for op in ops))) <= _STR:
        return False
    free = [op.value for op in ops if type(op.value) not in _SCALARS]
    free.extend(c.decision for c in commits if c.decision is not None)
    free.extend(a.to_dict() for c in commits for a in c.attempts)
    return plain(free)


def write_atomically(path: str | Path, chunks: Iterable[str | bytes]) -> Path:
    """Write ``chunks`` (text, or bytes already UTF-8) and one trailing newline to ``path`` in
    UTF-8; return the path.

    The text is streamed to a temporary file beside ``path`` that replaces it once
    complete: a write that fails leaves ``path`` as it was.
    """
    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temp, "wb") as out:
            out.writelines(c if isinstance(c, bytes) else c.encode("utf-8") for c in chunks)
            out.write(b"\n")
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


@contextlib.contextmanager
def collector_held() -> Iterator[None]:
    """Hold the cycle collector while a trace is written, and give it back as it was.

    Writing makes a dict per commit and per op, a chunk at a time, and frees them: no cycle.
    With the collector on, those allocations trigger collections that, past the young ones,
    walk every object a loaded trace holds (a million for W7: a third of a save's time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# -- reading ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def no_gc_pauses() -> Iterator[None]:
    """Hold the cycle collector while a document is parsed and structured.

    Loading makes hundreds of thousands of container objects and no cycle: every
    collection the allocations trigger walks the growing heap for nothing (a third of a
    big trace's load time). The collector runs again as soon as the load returns or fails.
    """
    was_enabled = gc.isenabled()
    with collector_held():
        try:
            yield
        finally:
            # what the load made is long-lived: hand it to the oldest generation at once (freeze
            # then unfreeze moves every tracked object there without walking it), or the first
            # young collection after ``enable`` walks the million new objects for nothing; not
            # when the application froze objects itself (a pre-fork server): unfreeze would undo it
            if was_enabled and gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()


def nested_checkpoint(raw: Any) -> Checkpoint:
    """A trace's ``checkpoint`` validated as a checkpoint, its errors placed under ``$.checkpoint``."""
    try:
        return structure_checkpoint(raw, checked=True)
    except CheckpointError as exc:
        path = "$.checkpoint" + (exc.path or "$")[1:]
        message = str(exc).replace("Invalid checkpoint: ", "Invalid trace: checkpoint: ", 1)
        raise CheckpointError(message.replace(" @ $", " @ $.checkpoint"), path=path, detail=exc.detail) from None


def refuse(message: str, path: str) -> CheckpointError:
    """The error for an invalid trace at ``path`` (``Invalid trace: <message> @ <path>``)."""
    return CheckpointError(f"Invalid trace: {message} @ {path}", path=path)


def _plainly_right(log: list[Commit]) -> bool:
    """``check_log``'s checks over the whole log at once, in C where it can (no paths built)."""
    if list(map(_idx, log)) != list(range(len(log))):
        return False
    ops = list(chain.from_iterable(map(_ops, log)))
    sizes = set(map(len, map(_path, ops)))
    if sizes and (min(sizes) < 1 or max(sizes) > MAX_DEPTH):
        return False
    return not any(
        (op.verb == "delete" and op.value is not None) or (op.verb == "append" and not isinstance(op.value, list))
        for op in ops
    )


def check_log(log: list[Commit], where: str) -> None:
    """Refuse a loaded commit log (at JSON path ``where``) that the engine could not have written."""
    if _plainly_right(log):
        return
    for position, commit in enumerate(log):
        if commit.idx != position:
            raise refuse(
                f"commit idx {commit.idx} is not its position {position}",
                f"{where}[{position}].idx",
            )
        for n, op in enumerate(commit.trace):
            if not op.path:
                raise refuse("an op path must not be empty", f"{where}[{position}].trace[{n}].path")
            if len(op.path) > MAX_DEPTH:
                raise refuse(f"an op path has at most {MAX_DEPTH} keys", f"{where}[{position}].trace[{n}].path")
            if op.verb == "delete" and op.value is not None:
                raise refuse("a delete op carries no value", f"{where}[{position}].trace[{n}].value")
            if op.verb == "append" and not isinstance(op.value, list):
                raise refuse("an append op carries a list", f"{where}[{position}].trace[{n}].value")


__all__ = [
    "CHUNK",
    "check_log",
    "collector_held",
    "log_chunks",
    "nested_checkpoint",
    "no_gc_pauses",
    "plain_log",
    "refuse",
    "write_atomically",
]
