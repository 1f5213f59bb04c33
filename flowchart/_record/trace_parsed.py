"""A freshly parsed trace document structured by strict passes that run mostly in C.

Law: a pass here accepts a part of a trace (the commit log, the narrative) only when the
converter would accept it — every key and no other, exact JSON types (a bool is not an int),
a known verb — AND only when it is within the limits of ``flowchart._core.untrusted`` (its free
JSON values proved by ``within_limits``); anything it is not sure of makes it return
``None``, and then the limits walk and the converter take the document and name the first
bad field, so a trace loads, or is refused with the same words, whichever path it takes.
``parsed_trace`` is the proof ``untrusted.parse_proven`` asks for: it returns what it
structured only when it proved the limits of every part of the document.

How: JSON types are checked a column (or a record) at a time in C (``set(map(type, ...))``),
objects are built through ``map``, and the parsed values are shared, never copied (nobody
else holds them).
"""

from __future__ import annotations

from itertools import chain, islice, repeat
from operator import itemgetter
from typing import Any, get_args

import attrs

from flowchart._core.commits import Commit, Op, Verb
from flowchart._core.narrative_columns import FIELDS, NarrativeColumns, parsed_columns
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.retry import Attempt
from flowchart._core.untrusted import SAFE_LEAVES, within_limits

_COMMIT_KEYS = frozenset(("idx", "stage", "stage_id", "runtime_stage_id", "trace", "reads", "redacted_paths"))
_COMMIT_OPTIONAL = frozenset(("decision", "attempts", "recovers"))
_OP_KEYS = frozenset(("path", "verb", "value"))
_OP_KEYS_BARE = frozenset(("path", "verb"))
_ATTEMPT_KEYS = frozenset(("attempt", "error_type", "message"))
_VERBS = frozenset(get_args(Verb))
_STR = frozenset((str,))
_INT = frozenset((int,))
_LIST = frozenset((list,))
_DICT = frozenset((dict,))
_STR_OR_NONE = frozenset((str, type(None)))
# nesting depth (the document is 1) of a commit's free JSON values: $ > commit_log > commit > trace > op > value
_OP_VALUE_DEPTH = 6
_DECISION_DEPTH = 4
_FIELD_GETTERS = tuple(map(itemgetter, FIELDS))


def _strs(value: Any) -> bool:
    """A JSON list of strings only (the types are gathered in C: no Python loop per item)."""
    return type(value) is list and set(map(type, value)) <= _STR


def _lists_of_strs(column: list[Any]) -> bool:
    return set(map(type, column)) <= _LIST and set(map(type, chain.from_iterable(column))) <= _STR


def parsed_log(raw: Any, depth: int = 2) -> list[Commit] | None:
    """A freshly parsed commit log (at nesting ``depth``: the document is 1) as commits, or
    ``None`` when anything is not plainly right (see the module law)."""
    if type(raw) is not list or not set(map(type, raw)) <= _DICT:
        return None
    if len(raw) < 64 or set(map(len, raw)) != {len(_COMMIT_KEYS)}:  # short, or some commits carry more keys
        return _parsed_log_each(raw, depth)
    try:
        columns = {key: list(map(itemgetter(key), raw)) for key in _COMMIT_KEYS}
    except KeyError:
        return None
    if not set(map(type, columns["idx"])) <= _INT:
        return None
    if not all(set(map(type, columns[key])) <= _STR for key in ("stage", "stage_id", "runtime_stage_id")):
        return None
    traces = columns["trace"]
    if not _lists_of_strs(columns["reads"]) or not _lists_of_strs(columns["redacted_paths"]):
        return None
    if not set(map(type, traces)) <= _LIST:
        return None
    ops = list(chain.from_iterable(traces))
    op_values = _parsed_ops(ops, depth + _OP_VALUE_DEPTH - 2)
    if op_values is None:
        return None
    ops_each = iter(op_values)  # each commit takes its own ops, in order
    return list(
        map(
            Commit,
            columns["idx"],
            columns["stage"],
            columns["stage_id"],
            columns["runtime_stage_id"],
            map(tuple, map(islice, repeat(ops_each), map(len, traces))),
            map(tuple, columns["reads"]),
            map(tuple, columns["redacted_paths"]),
        )
    )


def _parsed_ops(ops: list[Any], value_depth: int) -> list[Op] | None:
    """The ops of a whole log (flattened, in order), or ``None``."""
    if not set(map(type, ops)) <= _DICT:
        return None
    sizes = list(map(len, ops))
    if not set(sizes) <= {2, 3}:
        return None
    with_value = sum(map(dict.__contains__, ops, repeat("value")))
    if sum(sizes) != 2 * len(ops) + with_value:  # a third key that is not ``value``
        return None
    try:
        paths = list(map(itemgetter("path"), ops))
        verbs = list(map(itemgetter("verb"), ops))
        if not set(verbs) <= _VERBS:
            return None
    except (KeyError, TypeError):  # a missing key; a verb that cannot be hashed
        return None
    if not set(map(type, verbs)) <= _STR or not _lists_of_strs(paths):
        return None
    values = list(map(dict.get, ops, repeat("value")))
    if not set(map(type, values)) <= SAFE_LEAVES:
        free = [v for v in values if type(v) not in SAFE_LEAVES]
        if not all(map(within_limits, free, repeat(value_depth))):
            return None
    return list(map(Op, map(tuple, paths), verbs, values))


def _attempts(raw: Any) -> tuple[Attempt, ...] | None:
    if type(raw) is not list:
        return None
    out = []
    for item in raw:
        if type(item) is not dict or item.keys() != _ATTEMPT_KEYS:
            return None
        number, kind, message = item["attempt"], item["error_type"], item["message"]
        if type(number) is not int or type(kind) is not str or type(message) is not str:
            return None
        out.append(Attempt(number, kind, message))
    return tuple(out)


def _parsed_log_each(raw: list[Any], depth: int) -> list[Commit] | None:
    """``parsed_log`` commit by commit, for a log whose commits do not all have the same keys."""
    value_depth, decision_depth = depth + _OP_VALUE_DEPTH - 2, depth + _DECISION_DEPTH - 2
    out: list[Commit] = []
    append = out.append
    for item in raw:
        keys = item.keys()
        decision = attempts = recovers = None
        if keys != _COMMIT_KEYS:
            if not keys >= _COMMIT_KEYS or not keys - _COMMIT_KEYS <= _COMMIT_OPTIONAL:
                return None
            decision, recovers = item.get("decision"), item.get("recovers")
            if decision is not None and (type(decision) is not dict or not within_limits(decision, decision_depth)):
                return None
            if recovers is not None and type(recovers) is not str:
                return None
            if "attempts" in keys:
                attempts = _attempts(item["attempts"])
                if attempts is None:
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
            path, verb, value = op["path"], op["verb"], op.get("value")
            if not _strs(path) or type(verb) is not str or verb not in _VERBS:
                return None
            if type(value) not in SAFE_LEAVES and not within_limits(value, value_depth):
                return None
            ops.append(Op(tuple(path), verb, value))  # type: ignore[arg-type]  # a known verb
        trace_ops, reads_t, redacted_t = tuple(ops), tuple(reads), tuple(redacted)
        append(Commit(idx, stage, stage_id, rid, trace_ops, reads_t, redacted_t, decision, attempts or (), recovers))
    return out


def record_columns(raw: Any) -> NarrativeColumns | None:
    """A freshly parsed version-2 narrative (a list of records, at nesting 2) as columns, or
    ``None`` when anything is not plainly right (exact keys and JSON types, as the converter
    requires; record types and depths are checked after, as for any trace: ``check_columns``).
    The JSON types are checked a field at a time over all records (in C: no tuple per record).
    Once proven, ``raw`` is emptied (its dicts freed before anything else is made): the caller
    passes a list it parsed for this and keeps no other use of it."""
    if type(raw) is not list or not set(map(type, raw)) <= _DICT:
        return None
    if raw and set(map(len, raw)) != {len(FIELDS)}:
        return None
    try:  # a column per field, in C (no tuple per record); exactly these keys, as the length check said
        found = NarrativeColumns(tuple(list(map(getter, raw)) for getter in _FIELD_GETTERS))
    except KeyError:
        return None
    if not found.plain():
        return None
    raw.clear()  # proven: its dicts go now (the load's peak memory)
    return found


def parsed_narrative(raw: Any) -> list[NarrativeEntry] | None:
    """``record_columns`` as ``NarrativeEntry`` records (a stored run's narrative column)."""
    found = record_columns(raw)
    return None if found is None else found.records()


@attrs.frozen
class ParsedParts:
    """What ``parsed_trace`` structured of a freshly parsed trace (``None``: left to the converter).
    ``narrative`` is the file's narrative as columns, whichever version's form it came in."""

    commit_log: list[Commit] | None
    narrative: NarrativeColumns | None


#: the narrative's pass for each version whose narrative has one (version 1's bare lines: the converter)
_NARRATIVE_PASSES = {2: record_columns, 3: parsed_columns}


def parsed_trace(raw: Any) -> ParsedParts | None:
    """The proof for ``untrusted.parse_proven`` of a trace file: every part within the limits
    (the commit log and the narrative proved while the strict passes structure them — the
    narrative by its file version's pass — the rest by ``within_limits``), or ``None`` (then
    the limits walk and the converter decide)."""
    if type(raw) is not dict:
        return None
    version = raw.get("version")
    narrative_pass = _NARRATIVE_PASSES.get(version) if type(version) is int else None
    log = narrative = None
    for key, value in raw.items():
        if key == "commit_log":
            log = parsed_log(value)
            if log is None:
                return None
        elif key == "narrative" and narrative_pass is not None and value is not None:
            continue  # last: a version-2 pass empties the list it proves, so only once all else is proven
        elif not within_limits(value, 2):
            return None
    if narrative_pass is not None and raw.get("narrative") is not None:
        narrative = narrative_pass(raw["narrative"])
        if narrative is None and not within_limits(raw["narrative"], 2):
            return None
    return ParsedParts(log, narrative)


__all__ = ["ParsedParts", "parsed_log", "parsed_narrative", "parsed_trace", "record_columns"]
