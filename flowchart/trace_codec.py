"""A trace file's commit log, fast both ways: written in chunks, read by a strict pass.

Laws:
- Saving writes the commit log in chunks (``log_chunks``: ``CHUNK`` commits per
  ``json.dumps`` call, plain data from ``commit_data``, no converter call and no copy per
  commit) to a temporary file beside the target that replaces it only when complete
  (``write_atomically``), so a failed save leaves nothing half-written.
- Loading a freshly parsed commit log takes a strict hand-written pass
  (``parsed_log``) that accepts only what the converter accepts; anything it is not sure
  of returns ``None`` and goes through the converter, which names the bad field, so both
  paths accept and refuse exactly the same documents.
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
from pathlib import Path
from typing import Any, get_args

from .commits import Commit, Op, commit_data
from .errors import CheckpointError
from .pause import Checkpoint
from .serde import dumps, structure_checkpoint
from .untrusted import MAX_DEPTH

#: commits per ``json.dumps`` call when a trace is written (the text never holds the whole log twice)
CHUNK = 1024


# -- writing ----------------------------------------------------------------------------------------
def log_chunks(log: Sequence[Commit]) -> Iterator[str]:
    """The JSON text of a commit log (a list) in pieces of ``CHUNK`` commits."""
    yield "["
    for start in range(0, len(log), CHUNK):
        text = dumps([commit_data(c) for c in log[start : start + CHUNK]])
        yield (text[1:-1] if start == 0 else "," + text[1:-1])
    yield "]"


def write_atomically(path: str | Path, chunks: Iterable[str]) -> Path:
    """Write ``chunks`` and one trailing newline (UTF-8) to ``path``; return the path.

    The text is streamed to a temporary file beside ``path`` that replaces it once
    complete: a write that fails leaves ``path`` as it was.
    """
    target = Path(path)
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as out:
            out.writelines(chunks)
            out.write("\n")
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


# -- reading ----------------------------------------------------------------------------------------
@contextlib.contextmanager
def no_gc_pauses() -> Iterator[None]:
    """Hold the cycle collector while a document is parsed and structured.

    Loading makes hundreds of thousands of container objects and no cycle: every
    collection the allocations trigger walks the growing heap for nothing (a third of a
    big trace's load time). The collector runs again as soon as the load returns or fails.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_COMMIT_KEYS = frozenset(("idx", "stage", "stage_id", "runtime_stage_id", "trace", "reads", "redacted_paths"))
_COMMIT_KEYS_DECIDED = _COMMIT_KEYS | {"decision"}
_OP_KEYS = frozenset(("path", "verb", "value"))
_OP_KEYS_BARE = frozenset(("path", "verb"))
_VERBS = frozenset(get_args(Op.__attrs_attrs__.verb.type))


_STR = frozenset((str,))


def _strs(value: Any) -> bool:
    """A JSON list of strings only (the types are gathered in C: no Python loop per item)."""
    return type(value) is list and set(map(type, value)) <= _STR


def parsed_log(raw: Any) -> list[Commit] | None:
    """A freshly parsed commit log as commits, or ``None`` when anything is not plainly right.

    Strict: it accepts only what the converter accepts (every key, no other key, exact JSON
    types, a known verb), sharing the parsed values (nobody else holds them). On ``None`` the
    converter structures the log and names the first bad field, so errors read the same.
    """
    if type(raw) is not list:
        return None
    out: list[Commit] = []
    append = out.append
    for item in raw:
        if type(item) is not dict:
            return None
        keys = item.keys()
        if keys == _COMMIT_KEYS:
            decision = None
        elif keys == _COMMIT_KEYS_DECIDED:
            decision = item["decision"]
            if decision is not None and type(decision) is not dict:
                return None
        else:
            return None
        idx, stage, stage_id, rid = item["idx"], item["stage"], item["stage_id"], item["runtime_stage_id"]
        if type(idx) is not int or type(stage) is not str or type(stage_id) is not str or type(rid) is not str:
            return None
        reads, redacted, trace = item["reads"], item["redacted_paths"], item["trace"]
        if not _strs(reads) or not _strs(redacted) or type(trace) is not list:
            return None
        ops = []
        for op in trace:
            if type(op) is not dict:
                return None
            op_keys = op.keys()
            if op_keys != _OP_KEYS and op_keys != _OP_KEYS_BARE:
                return None
            path, verb = op["path"], op["verb"]
            if not _strs(path) or type(verb) is not str or verb not in _VERBS:
                return None
            ops.append(Op(tuple(path), verb, op.get("value")))  # type: ignore[arg-type]  # a known verb
        append(Commit(idx, stage, stage_id, rid, tuple(ops), tuple(reads), tuple(redacted), decision))
    return out


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


def check_log(log: list[Commit], where: str) -> None:
    """Refuse a loaded commit log (at JSON path ``where``) that the engine could not have written."""
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
    "log_chunks",
    "nested_checkpoint",
    "no_gc_pauses",
    "parsed_log",
    "refuse",
    "write_atomically",
]
