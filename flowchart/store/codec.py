"""How records travel to and from a database row: JSON text, one owned encoding.

Law: every column a store writes is JSON text produced here (compact, no NaN), and a
value that is not JSON-safe is stored as its ``repr()`` string — a run's output is a
record, and a record must never make the write that ends a run fail. For the same
reason free text (an error message, a narrative line, who answered) that is not
Unicode — a lone surrogate such as ``"\\ud800"`` — is stored with it escaped
(``\\ud800``), where UTF-8 could not hold it. What is read back is validated: a row a
store cannot read is a ``StoreError`` naming the run and the column. A store made with
``key=`` seals the columns a run is started, resumed and recorded from
(``SIGNED_COLUMNS``: its input, its checkpoint, the recorded answer, each commit) with an
HMAC bound to the run id and the column, and verifies each one as it reads it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeVar

import attrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError

from flowchart._core.commits import Commit, commit_data
from flowchart._core.errors import CheckpointError
from flowchart._core.failure import RunFailure
from flowchart._core.fastjson import loads_rows
from flowchart._core.fingerprint import spec_fingerprint
from flowchart._core.narrative_columns import NarrativeColumns, check_columns, parsed_columns
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.pause import Checkpoint
from flowchart._core.redaction import Redaction
from flowchart._core.serde import dumps, dumps_acyclic, load_error, loads
from flowchart._core.signing import SIGNATURE_KEY, sign, unsign
from flowchart._core.spec_shape import check_spec
from flowchart._core.untrusted import MAX_DEPTH, parse_proven, within_limits
from flowchart._core.values import NotJsonSafe, copy_json, escape_surrogates
from flowchart._record.record import SubflowTrace
from flowchart._record.trace import CONVERTER as TRACE
from flowchart._record.trace import structure_columns
from flowchart._record.trace_codec import check_log
from flowchart._record.trace_parsed import parsed_log, record_columns
from flowchart.store.protocol import StoredRowError, renumber

_T = TypeVar("_T")


def text(value: str | None) -> str | None:
    """``value`` with every lone surrogate written as ``\\uXXXX`` (UTF-8 can hold the rest)."""
    return None if value is None else escape_surrogates(value)


def encode_lines(lines: Any) -> str:
    """A narrative (list of lines) as JSON text; each line stored with ``text``."""
    return dumps([text(str(line)) for line in lines])


def encode_narrative(lines: Any, records: Any) -> str:
    """A segment's narrative as JSON text: its records when it has them, as columns (one list
    per field, ``narrative_columns``: the trace file's form, each key once), else its lines;
    free text stored with ``text``."""
    if not records:
        return encode_lines(lines)
    columns = NarrativeColumns.of_records(records).data()
    columns["text"] = [text(line) for line in columns["text"]]
    return dumps(columns)


def _strict_narrative(data: Any) -> NarrativeColumns | None:
    """The strict pass of a stored narrative: columns (schema 6 on) or a list of records (schema 4–5)."""
    return record_columns(data) if type(data) is list else parsed_columns(data)


def decode_narrative_columns(value: str, run_id: str) -> NarrativeColumns:
    """Inverse of ``encode_narrative``, as columns (records are built when asked for): columns
    as written since schema 6; a list of records (schema 4–5); bare lines (before: records of
    type ``line``). ``StoreError`` naming the run when the row is none of these, or its columns
    could not have been written (unequal lengths, an unknown type, a negative depth)."""
    items, found = parse_proven(value, what="stored value", proof=_strict_narrative, fast=True)
    try:
        fits_trace(items, 2)
    except ValueError as exc:
        raise StoredRowError(run_id, "narrative", str(exc)) from None
    try:
        if found is None and isinstance(items, dict):  # columns the strict pass declined: the converter names why
            found = structure_columns(items)
        if found is None:
            found = NarrativeColumns.of_records(_listed_narrative(items, run_id))
        check_columns(found)
    except CheckpointError as exc:
        problem = str(exc).removeprefix("Invalid trace: ")
        raise StoredRowError(run_id, "narrative", problem, path=exc.path or "$") from None
    return found


def decode_narrative(value: str, run_id: str) -> tuple[NarrativeEntry, ...]:
    """``decode_narrative_columns`` as records."""
    return tuple(decode_narrative_columns(value, run_id).records())


def _listed_narrative(items: Any, run_id: str) -> list[NarrativeEntry]:
    """A narrative row of bare lines and record objects (before schema 6), item by item."""
    if not isinstance(items, list):
        raise StoredRowError(run_id, "narrative", "not a list")
    out = []
    for item in items:  # freshly parsed and checked: structured as is, without a JSON round trip each
        if isinstance(item, str):
            out.append(NarrativeEntry("line", 0, item))
            continue
        try:
            out.append(_narrative_record(item))
        except ValueError as exc:
            raise StoredRowError(run_id, "narrative", str(exc)) from None
    return out


def _narrative_record(data: Any) -> NarrativeEntry:
    try:
        record: NarrativeEntry = TRACE.structure(data, NarrativeEntry)
    except Exception as exc:  # cattrs groups its errors; the message names the field
        raise ValueError(str(exc)) from None
    return record


def encode_subflows(subflows: Any) -> str | None:
    """A segment's subflow logs (``SubflowTrace`` per mount runtime id) as JSON text, NULL when none."""
    if not subflows:
        return None
    return dumps({rid: TRACE.unstructure(sub) for rid, sub in subflows.items()})


def decode_subflows(value: str | None, run_id: str) -> dict[str, SubflowTrace]:
    """Inverse of ``encode_subflows`` (``{}`` for NULL); ``StoreError`` when the column is not one, or
    a log is not one a trace file holds (a subflow under another runtime id, an op it refuses);
    each log's commits are numbered by their position."""
    if value is None:
        return {}

    def load(data: Any) -> dict[str, SubflowTrace]:
        fits_trace(data, 2)
        try:
            subflows: dict[str, SubflowTrace] = TRACE.structure(data, dict[str, SubflowTrace])
        except Exception as exc:  # cattrs groups its errors; the message names the field
            raise ValueError(str(exc)) from None
        for rid, sub in subflows.items():  # as a trace file's subflows are held
            if sub.runtime_stage_id != rid:
                raise ValueError(f"subflow '{rid}' says it is '{sub.runtime_stage_id}'")
            if any(commit.idx != position for position, commit in enumerate(sub.commit_log)):
                # numbered by position: a stored fork inside a subflow wrote the fork's own numbers
                # after the parent's commits before pyfootprint numbered them (the position is the truth)
                sub = subflows[rid] = attrs.evolve(sub, commit_log=list(renumber(sub.commit_log, 0)))
            try:
                check_log(list(sub.commit_log), f"$[{json.dumps(rid)}].commit_log")
            except CheckpointError as exc:
                message = str(exc).replace("Invalid trace: ", "Invalid stored subflows: ", 1)
                raise CheckpointError(message, path=exc.path) from None
        return subflows

    return dict(_decode_column(value, run_id, "subflows", load))


def encode(value: Any) -> str:
    """JSON text for ``value`` (its ``repr()`` as a JSON string when not JSON-safe)."""
    try:
        return dumps_acyclic(copy_json(value))  # a copy holds no cycle
    except NotJsonSafe:
        return dumps(repr(value))


def decode(text: str | None) -> Any:
    """The value ``encode`` wrote (``None`` for a NULL column), read as untrusted JSON."""
    if text is not None and not isinstance(text, str):
        raise ValueError(f"expected JSON text, got {type(text).__name__}")
    return None if text is None else loads(text, what="stored value")


def decode_object(text: str | None, *, level: int | None = None) -> dict[str, Any]:
    """A column that holds a JSON object (a run's input, a chart spec); with ``level``, one the
    run's trace carries at that nesting level (``fits_trace``)."""
    value = decode(text)
    if type(value) is not dict:
        raise ValueError(f"expected a JSON object, got {type(value).__name__}")
    if level is not None:
        fits_trace(value, level)
    return value


def fits_trace(value: Any, level: int) -> None:
    """Refuse a column's value that loads but that the run's trace, which carries it at nesting
    ``level`` (its top-level fields are at 2), could not: it would be refused by ``Trace.load``
    and fail the run's page and ``agent runs trace``."""
    if not within_limits(value, level):
        raise ValueError(f"nested deeper than the run's trace can carry it ({MAX_DEPTH - level + 1} levels)")


def decode_text(value: Any) -> str | None:
    """A free-text column (an error line, a parent run id): text or NULL."""
    if value is not None and not isinstance(value, str):
        raise ValueError(f"expected text, got {type(value).__name__}")
    return value


#: the times a reader can show (``time.gmtime``): from year 1 to year 9999, UTC
TIME_RANGE = (-62135596800.0, 253402300799.0)


def decode_time(value: Any) -> float:
    """A timestamp column: a number of seconds a reader can show as a date (``TIME_RANGE``: year 1
    to 9999) — a finite number past it would load, then fail ``agent runs show`` and ``list``."""
    if type(value) not in (int, float) or not TIME_RANGE[0] <= value <= TIME_RANGE[1]:
        raise ValueError(f"expected a time in seconds (year 1 to 9999), got {value!r}")
    return float(value)


def decode_spec(text: str | None, fingerprint: str) -> dict[str, Any]:
    """A ``charts.spec`` column: a chart spec of ``chart.spec``'s shape whose fingerprint is the one
    the run names (an edited spec would load, then fail its trace, its page and its resume)."""
    spec = decode_object(text, level=2)
    if spec_fingerprint(spec) != fingerprint:
        raise ValueError("the spec does not match its fingerprint (it was edited behind the store)")
    check_spec(spec, what="stored chart spec", path="$")
    return spec


def decode_answered(request_ids: Sequence[Any]) -> frozenset[str]:
    """The ``answers.request_id`` cells of a run: the ids of the pauses answered, each a text."""
    for request_id in request_ids:
        if not isinstance(request_id, str):
            raise ValueError(f"expected a request id (text), got {type(request_id).__name__}")
    return frozenset(request_ids)


def column(run_id: str, name: str, read: Callable[[], _T]) -> _T:
    """``read()`` of one stored column of run ``run_id``: its value, or ``StoredRowError`` naming the
    run and the column — whatever the decoder raised on a value it did not expect."""
    try:
        return read()
    except StoredRowError:
        raise
    except CheckpointError as exc:
        problem = str(exc).split(": ", 1)[-1] if str(exc).startswith("Invalid ") else str(exc)
        raise StoredRowError(run_id, name, problem, path=exc.path or "$") from None
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError) as exc:
        raise StoredRowError(run_id, name, f"{type(exc).__name__}: {exc}") from None


def encode_commit(commit: Commit) -> str:
    """One commit log row: the commit's diff (``Commit.to_dict``), never the whole state.

    A commit's values hold no cycle (each is a ``copy_json`` copy or parsed JSON), so the row
    is written without the encoder's cycle bookkeeping (``serde.dumps_acyclic``): the same
    text. A conversation turn's seed writes its whole loaded history: that row is the long one."""
    return dumps_acyclic(commit_data(commit))


def decode_commit(text: str) -> Commit:
    """Inverse of ``encode_commit``. A plainly right row is structured by the trace file's strict
    log pass, which proves the limits on the way (``untrusted.parse_proven``); any other row is
    walked within the limits and structured by the trace file's converter, every field's type
    checked (a row from before ``reads`` and ``redacted_paths`` were kept reads them as empty)."""
    data, proved = parse_proven(text, what="stored commit", proof=_one_commit, fast=True)
    if proved is not None:
        return proved[0]
    fits_trace(data, 3)  # the level of a commit in the run's trace (the strict pass proves it)
    if type(data) is dict:  # rows written before a commit kept its reads and hidden paths
        data = {"reads": [], "redacted_paths": [], **data}
    try:  # every field's type, as a trace file's commit is held to
        commit: Commit = TRACE.structure(data, Commit)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "stored commit") from None
    return commit


def decode_commit_data(data: Any) -> Commit:
    """``decode_commit`` of a row already parsed (a referencing row made whole, ``extends``):
    proven by the strict pass, else walked within the limits and structured field by field."""
    proved = _one_commit(data)
    if proved is not None:
        return proved[0]
    fits_trace(data, 3)
    if type(data) is dict:
        data = {"reads": [], "redacted_paths": [], **data}
    try:
        commit: Commit = TRACE.structure(data, Commit)
    except (ClassValidationError, ForbiddenExtraKeysError, TypeError, ValueError) as exc:
        raise load_error(exc, "stored commit") from None
    return commit


def decode_commits(
    texts: Sequence[str], *, run_id: str | None = None, seqs: Sequence[int] | None = None
) -> tuple[Commit, ...]:
    """``decode_commit`` of every row, in order. With the ``[fast]`` extra, rows that are all
    plainly right (each row exactly the text orjson writes for its value: ``fastjson.loads_rows``,
    so no row can reach into the next) are parsed in one pass and structured together by the
    trace file's columnar strict pass; anything else is decoded row by row, which names the
    bad row (with ``run_id``: a ``StoredRowError`` for ``commit <seq>``)."""
    numbers = range(len(texts)) if seqs is None else seqs
    commits: tuple[Commit, ...] | None = None
    if len(texts) >= _BATCH:
        rows = loads_rows(texts)
        if rows is not None:
            parsed = parsed_log(rows)  # each row at a trace's commit level, as in _one_commit
            if parsed is not None and len(parsed) == len(texts):
                commits = tuple(parsed)
    if run_id is None:
        return commits if commits is not None else tuple(map(decode_commit, texts))
    if commits is None:
        commits = tuple(
            column(run_id, f"commit {n}", partial(decode_commit, t)) for n, t in zip(numbers, texts, strict=True)
        )
    check_commit_log(commits, run_id, numbers)
    return commits


def check_commit_log(commits: Sequence[Commit], run_id: str, seqs: Sequence[int]) -> None:
    """Refuse a run's log that the engine could not have written: each commit's ``seq`` and ``idx``
    its position (a commit deleted, moved to another run or renumbered behind the store leaves a
    gap), and each op as ``trace_codec.check_log`` holds a trace file's (``StoredRowError``
    naming the commit)."""
    for position, (commit, seq) in enumerate(zip(commits, seqs, strict=True)):
        if seq != position or commit.idx != position:
            raise StoredRowError(
                run_id,
                f"commit {seq}",
                f"commit idx {commit.idx} at seq {seq} is not its position {position} in the log: "
                "commits were deleted, moved or renumbered behind the store",
            )
    try:
        check_log(list(commits), "$")
    except CheckpointError as exc:
        found = re.match(r"\$\[(\d+)\](.*)", exc.path or "$")
        position, inside = (int(found[1]), "$" + found[2]) if found else (0, "$")
        problem = str(exc).removeprefix("Invalid trace: ").rsplit(" @ ", 1)[0]
        raise StoredRowError(run_id, f"commit {seqs[position]}", problem, path=inside) from None


#: below this many rows the per-row pass costs no more than the columnar one
_BATCH = 64


def _one_commit(data: Any) -> list[Commit] | None:
    return parsed_log([data])  # proven at the level a trace holds it (a commit at 3), which the run's trace needs


def encode_checkpoint(checkpoint: Checkpoint | None) -> str | None:
    """The checkpoint's own JSON (``Checkpoint.to_json``) or NULL."""
    return None if checkpoint is None else checkpoint.to_json()


def decode_checkpoint(text: str | None, fingerprint: str | None = None) -> Checkpoint | None:
    """Inverse of ``encode_checkpoint`` (validated by the checkpoint converter); with ``fingerprint``
    (the run's chart), a checkpoint of another chart is refused — it would load, then fail the
    run's trace and its resume — and so is one nested deeper than the run's trace can carry it."""
    checkpoint = None if text is None else Checkpoint.from_json(text)
    if checkpoint is None or fingerprint is None:
        return checkpoint
    if checkpoint.chart_fingerprint != fingerprint:
        raise ValueError("the checkpoint belongs to another chart than the run's (chart_fingerprint differs)")
    fits_trace(json.loads(str(text)), 2)
    return checkpoint


def _decode_column(value: str, run_id: str, what: str, from_dict: Any) -> Any:
    """``from_dict`` of the column's untrusted JSON; ``StoredRowError`` naming the run and the column
    when it is not one (whatever ``from_dict`` raised on a shape it did not expect)."""
    try:
        return from_dict(loads(value, what=f"stored {what}"))
    except CheckpointError as exc:
        message = str(exc)  # ``Invalid <what>: <problem> @ <path>``, from the parse or the loader
        problem = message.split(": ", 1)[1] if message.startswith("Invalid ") and ": " in message else message
        raise StoredRowError(run_id, what, problem, path=exc.path or "$") from None
    except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise StoredRowError(run_id, what, str(exc)) from None


def encode_redaction(redaction: Redaction | None) -> str | None:
    """The rule a run is recorded under (``Redaction.to_dict``), or NULL when it hides nothing."""
    return None if redaction is None or not redaction.active else dumps(redaction.to_dict())


def decode_redaction(value: str | None, run_id: str) -> Redaction | None:
    """Inverse of ``encode_redaction``; ``StoreError`` when the column is not a rule."""
    return None if value is None else _decode_column(value, run_id, "redaction", Redaction.from_dict)


def encode_failure(failure: RunFailure | None) -> str | None:
    """Why a run failed (``RunFailure.to_dict``, free text escaped), or NULL."""
    if failure is None:
        return None
    return dumps({k: text(v) if isinstance(v, str) else v for k, v in failure.to_dict().items()})


def decode_failure(value: str | None, run_id: str) -> RunFailure | None:
    """Inverse of ``encode_failure``; ``StoreError`` when the column is not a failure."""
    return None if value is None else _decode_column(value, run_id, "failure", RunFailure.from_dict)


# -- signed rows (a store made with key=...) ---------------------------------------------------
STORE_PURPOSE = "pyfootprint store v1"
SIGNED_COLUMNS = ("input", "checkpoint", "answer", "commit")
_ENVELOPE = '{"signed":'


def seal(text: str | None, key: bytes | None, run_id: str, column: str) -> str | None:
    """``text`` as ``{"signed":<text>,"signature":"hmac-sha256:…"}``, bound to the run and column
    (a row copied into another run, or into another column, does not verify). No key: ``text``."""
    if text is None or key is None:
        return text
    return sign(f"{_ENVELOPE}{text}}}", key, f"{STORE_PURPOSE}\x00{run_id}\x00{column}")


def unseal(text: str | None, key: bytes | None, run_id: str, column: str) -> str | None:
    """The text ``seal`` wrapped, once its signature is verified (``CheckpointError`` if not)."""
    what = f"stored run '{run_id}' ({column})"
    if text is None:
        return None
    if key is None:
        if text.startswith(_ENVELOPE) and SIGNATURE_KEY in text[-90:]:
            raise CheckpointError(
                f"Invalid {what}: the row is signed, but the store was opened without a key; "
                "open it with the key it was written with (e.g. SqliteStore(path, key=...))",
                path=f"$.{SIGNATURE_KEY}",
            )
        return text
    body = unsign(text, key, f"{STORE_PURPOSE}\x00{run_id}\x00{column}", what=what)
    if not body.startswith(_ENVELOPE):  # pragma: no cover - only a key holder can sign another shape
        raise CheckpointError(f"Invalid {what}: not a signed row", path="$")
    return body[len(_ENVELOPE) : -1]


def decode_turn_key(conversation_id: Any, turn: Any, run_id: str) -> tuple[str | None, int | None]:
    """A row's ``(conversation_id, turn)`` columns, checked: both absent (not a conversation
    turn), or a non-empty string and a turn >= 1 — else ``StoreError`` naming the run."""
    if conversation_id is None and turn is None:
        return None, None
    if (
        isinstance(conversation_id, str)
        and conversation_id
        and isinstance(turn, int)
        and not isinstance(turn, bool)
        and turn >= 1
    ):
        return conversation_id, turn
    raise StoredRowError(
        run_id,
        "conversation_id/turn",
        f"conversation_id={conversation_id!r}, turn={turn!r}: expected a non-empty id and a turn >= 1",
    )
