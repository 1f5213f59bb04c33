"""Stored rows as untrusted input: real runs in a SQL store, ONE cell edited behind the store, then
everything a reader does — one place for the campaign (``bench/fuzz_loaders.py``) and the fuzz
test (``tests/untrusted/test_stored_rows_fuzz.py``); both put ``tests/store`` and ``tests/pause``
on ``sys.path`` (the refund agent, the servers, the pause charts).

``Base.build(db)`` stores three real runs — a paused agent run (``refund_agent``, a check-in
pending), the same agent's run approved and done (an ``answers`` row), and a chart run with a
subflow and a redaction rule, paused and answered (done, with subflow logs and narrative records)
— and keeps every row of every table. ``attempt(db, base, table, column, rng)`` puts those rows
back, writes one edited value (``edit``: ``mutate`` of the real value, NULL, an integer, a real,
a blob, JSON nested 3,000–5,000 deep, a lone surrogate escape, a huge number, another JSON type)
into ``table.column`` of one row with the database's own client, then reads through a fresh store:
``list()``, ``get``, ``verify`` and, when the run loads, what a reader does — ``record_trace``,
``Trace.to_json``/``from_json``/``save``, the viewer's ``render_page``, ``agent runs show / list /
trace`` and ``agent view`` in-process, and ``resume_run`` of a paused agent run with the approval
that answers the real pause. It returns the outcome:

- ``accepted`` — the run loads and every reader works on it;
- ``refused (<Error>)`` — ``get`` refused with an error of the documented tree (``StoredRowError``,
  ``RunNotFoundError`` when the run id itself was edited);
- ``refused at resume (<Error>)`` — it loads, and ``resume_run`` refuses with a documented error (a
  decision that no longer matches the stored question, a checkpoint this agent did not write);
- ``unwritable``/``unchanged`` — the database refused the value (PostgreSQL's column types, NOT
  NULL) or it equals the stored one: nothing was tried;
- ``OTHER: …`` — anything else: an exception outside the tree, ``list()`` raising or hiding another
  run, a run that loads and then fails a reader, a keyed store accepting an edit.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import random
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
from mutations import mutate, paths
from refund_agent import redacting_refund_agent, refund_agent

from agent import Paused
from agent.cli import main as agent_main
from flowchart import CheckpointError, Redaction, Trace, narrative
from flowchart.store import RunNotFoundError, RunStore, SqliteStore, StoredRowError, StoreError
from flowchart.store.export import record_trace
from flowchart.store.sealing import RUN_COLUMNS
from flowchart.viewer import render_page
from governance import DecisionRequiredError, ResumeDecisionError, check_in_approved

KEY = b"k" * 32
"""The key of the keyed store (``SqliteStore(path, key=KEY)``)."""

#: each table's columns, and the columns naming a row of it
TABLES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "charts": (("fingerprint", "spec"), ("fingerprint",)),
    "runs": (("run_id", *RUN_COLUMNS, "seal"), ("run_id",)),
    "commits": (("run_id", "seq", "body"), ("run_id", "seq")),
    "segments": (("run_id", "n", "start_seq", "status", "narrative", "created_at", "subflows"), ("run_id", "n")),
    "answers": (("run_id", "request_id", "answer", "answered_by", "answered_at"), ("run_id", "request_id")),
}
TARGETS: list[tuple[str, str]] = [(table, column) for table, (columns, _) in TABLES.items() for column in columns]
"""Every column of every table a store keeps: what the campaign edits, one cell at a time."""

#: the refusals a store, a loader or a decision check may answer with (flowchart/errors.py, store/protocol.py)
TREE = (StoreError, CheckpointError, ResumeDecisionError, DecisionRequiredError)

#: the exception names an ``agent`` command may print after ``agent: error:`` (the documented tree)
CLI_TREE = (
    "StoredRowError",
    "RunNotFoundError",
    "StoreError",
    "CheckpointError",
    "TraceError",
    "Invalid stored run",
    "no run '",
)


@attrs.define
class Db:
    """One backing database: how to reach it raw (``connect``), and how to open a store on it."""

    name: str
    connect: Callable[[], Any]
    store: Callable[[bytes | None], RunStore]
    cli: list[str]
    placeholder: str = "?"


def sqlite_db(path: Path) -> Db:
    """A SQLite file as a ``Db``."""
    return Db("sqlite", lambda: sqlite3.connect(path), lambda key: SqliteStore(path, key=key), ["--db", str(path)])


def postgres_db(dsn: str) -> Db:
    """A PostgreSQL database (the DSN may name a schema) as a ``Db``."""
    import psycopg

    from flowchart.store import PostgresStore

    return Db(
        "postgres",
        lambda: psycopg.connect(dsn, autocommit=False),
        lambda key: PostgresStore(dsn, key=key),
        ["--dsn", dsn],
        "%s",
    )


@attrs.define
class Base:
    """The stored runs, every row of every table, and the decision that answers the paused one."""

    rows: dict[str, list[tuple[Any, ...]]]
    paused: str
    decision: Any

    @classmethod
    def build(cls, db: Db, key: bytes | None = None) -> Base:
        """Store the three runs on ``db`` (through a store with ``key``) and keep their rows."""
        from pause_charts import CHARTS

        store = db.store(key)
        try:
            out = refund_agent(store).run("refund order A-1 150")
            assert isinstance(out, Paused) and out.run_id and out.check_in
            done = redacting_refund_agent(store).run("refund order B-2 300")
            assert isinstance(done, Paused) and done.run_id and done.check_in
            redacting_refund_agent(store).resume_run(done.run_id, check_in_approved(request=done.check_in, by="bob"))
            chart = CHARTS["subflow"]([])
            chart.run({}, store=store, run_id="chart", recorders=[narrative()], redaction=Redaction(keys={"seed"}))
            chart.resume_run("chart", {"ok": 1}, store=store, recorders=[narrative()])
        finally:
            store.close()
        with contextlib.closing(db.connect()) as conn:
            rows = {table: _select(conn, table) for table in TABLES}
        decision = check_in_approved(request=out.check_in, by="alice", at="2026-01-01T00:00:00Z")
        return cls(rows, out.run_id, decision)

    def restore(self, db: Db) -> None:
        """Put every table back as it was built (what an attempt changed, resumes included)."""
        with contextlib.closing(db.connect()) as conn:
            cur = conn.cursor()
            for table in ("answers", "segments", "commits", "runs", "charts"):
                cur.execute(f"DELETE FROM {table}")
            for table in ("charts", "runs", "commits", "segments", "answers"):
                columns = TABLES[table][0]
                marks = ", ".join([db.placeholder] * len(columns))
                cur.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", self.rows[table])
            conn.commit()


def _select(conn: Any, table: str) -> list[tuple[Any, ...]]:
    columns, keys = TABLES[table]
    cur = conn.cursor()
    cur.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {', '.join(keys)}")
    return [tuple(row) for row in cur.fetchall()]


# -- the edits ----------------------------------------------------------------------------------
def _json(value: Any) -> Any:
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            return json.loads(value)
    return None


def _surrogate(original: Any, rng: random.Random) -> str:
    """The JSON text of ``original`` (parsed when it is JSON) with a lone surrogate escaped in one string."""
    doc = _json(original)
    if doc is None:
        doc = original if isinstance(original, str) else "x"
    strings = [p for p in paths(doc) if isinstance(_at(doc, p), str)]
    where = rng.choice(strings) if strings else ()
    lone = rng.choice(["\ud800", "\udfff", "a\udc80b"])
    if where:
        parent = _at(doc, where[:-1])
        parent[where[-1]] = parent[where[-1]] + lone
    else:
        doc = (doc if isinstance(doc, str) else "") + lone
    return json.dumps(doc)  # ensure_ascii: the surrogate written as \\ud800, as a JSON file may hold it


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def edit(original: Any, rng: random.Random) -> tuple[str, Any]:
    """One edited value for a cell that holds ``original``: ``(kind, value)``."""
    kind = rng.choice(["mutate"] * 6 + ["null", "integer", "real", "blob", "deep", "surrogate", "huge", "type"])
    if kind == "mutate":
        doc = _json(original)
        base = doc if doc is not None or original in ("null", None) else original
        text = mutate(copy.deepcopy(base), rng)
        if not (isinstance(original, str) and doc is not None) and rng.random() < 0.5:
            with contextlib.suppress(ValueError, RecursionError):  # a plain cell: the mutated value itself
                value = json.loads(text)
                if value is None or isinstance(value, int | float | str):
                    return kind, value
        return kind, text
    if kind == "null":
        return kind, None
    if kind == "integer":
        return kind, rng.choice([0, 1, -1, 7, 2**31, 2**63 - 1, -(2**63)])
    if kind == "real":
        return kind, rng.choice([1.5, -0.0, 1e308, float("inf"), float("-inf")])
    if kind == "blob":
        return kind, rng.choice([b"", b"\xff\xfe\x00", (original if isinstance(original, str) else "x").encode()])
    if kind == "deep":
        return kind, rng.choice(["[" * 5000 + "]" * 5000, '{"a":' * 3000 + "1" + "}" * 3000, "[" * 250 + "]" * 250])
    if kind == "surrogate":
        return kind, _surrogate(original, rng)
    if kind == "huge":
        return kind, rng.choice(["1e999", "-1e400", "9" * 5000, str(2**64), "1" + "0" * 4300, '{"n": 1e999}'])
    return kind, rng.choice(["[]", "{}", '"x"', "0", "true", "null", "", " ", "[1, 2]", '{"a": 1}'])


_REALS = [float("nan"), float("inf"), float("-inf"), 1e300, -1e300, -0.0, 5e-324]


# -- one attempt --------------------------------------------------------------------------------
def attempt(db: Db, base: Base, table: str, column: str, rng: random.Random, *, key: bytes | None = None) -> str:
    """Edit one cell of ``table.column`` (a row chosen by ``rng``) and read the store; the outcome."""
    base.restore(db)
    columns, keys = TABLES[table]
    row = rng.choice(base.rows[table])
    named = dict(zip(columns, row, strict=True))
    original = named[column]
    sql = f"UPDATE {table} SET {column} = {db.placeholder} WHERE " + " AND ".join(
        f"{k} = {db.placeholder}" for k in keys
    )
    # a typed column (PostgreSQL) refuses most edits: then a value of its type, an integer or a real
    fallback = [rng.choice([-1, 0, 2, 7, 2**31 - 1, -(2**31)]), rng.choice(_REALS)]
    values = [edit(original, rng)[1], *(fallback[::-1] if type(original) is float else fallback)]
    for value in values:
        try:
            with contextlib.closing(db.connect()) as conn:
                conn.cursor().execute(sql, (value, *(named[k] for k in keys)))
                conn.commit()
            break
        except Exception:  # the database refused it (a column type, NOT NULL, a constraint, UTF-8)
            continue
    else:
        return "unwritable"
    with contextlib.closing(db.connect()) as conn:
        if _select(conn, table) == base.rows[table]:
            return "unchanged"
    victims = _victims(base, table, named, value if column == "run_id" else None)
    store = db.store(key)
    try:
        return _read(db, base, store, victims, key)
    finally:
        store.close()
        _ATTEMPTS[0] += 1
        if _ATTEMPTS[0] % 50 == 0:  # the stores the in-process commands opened (and never closed)
            gc.collect()


_ATTEMPTS = [0]


def _victims(base: Base, table: str, row: dict[str, Any], new_id: Any) -> set[Any]:
    """The runs an edit of ``row`` touches (a chart's spec: every run of that chart)."""
    if table == "charts":
        return {r[0] for r in base.rows["runs"] if r[2] == row["fingerprint"]}
    return {row["run_id"], new_id} - {None}


def _read(db: Db, base: Base, store: RunStore, victims: set[Any], key: bytes | None) -> str:
    every = {r[0] for r in base.rows["runs"]}
    try:
        listed = store.list()
    except Exception as exc:
        return f"OTHER: list() raised {type(exc).__name__}: {exc}"[:300]
    seen = {r.run_id for r in listed}
    if not (every - victims) <= seen:
        return f"OTHER: list() hid {sorted(every - victims - seen)}"
    victim = sorted(str(v) for v in victims & every)[0]
    try:
        record = store.get(victim)
    except TREE as exc:
        if key is not None and not isinstance(exc, StoredRowError | RunNotFoundError):
            return f"OTHER: a keyed store refused with {type(exc).__name__}: {exc}"[:300]
        return _refused(db, store, victim, exc, key)
    except Exception as exc:
        return f"OTHER: get raised {type(exc).__name__}: {exc}"[:300]
    if key is not None:
        return f"OTHER: a keyed store accepted an edited row of run '{victim}'"
    try:
        _readers(db, store, record)
    except Exception as exc:
        return f"OTHER: loads, then {type(exc).__name__}: {exc}"[:300]
    if record.run_id != base.paused or record.status != "paused":
        return "accepted"
    try:
        refund_agent(store).resume_run(record.run_id, base.decision)
    except TREE as exc:
        return f"refused at resume ({type(exc).__name__})"
    except Exception as exc:
        return f"OTHER: loads, then resume_run raised {type(exc).__name__}: {exc}"[:300]
    return "accepted"


def _refused(db: Db, store: RunStore, victim: str, exc: Exception, key: bytes | None) -> str:
    """A run ``get`` refused: ``agent runs show`` refuses it by name, and ``verify`` gives its head
    (with a key: refuses it too)."""
    try:
        store.verify(victim)
    except (StoredRowError, RunNotFoundError):
        pass
    except Exception as error:
        return f"OTHER: verify raised {type(error).__name__}: {error}"[:300]
    else:
        if key is not None:
            return f"OTHER: a keyed store's verify accepted an edited row of run '{victim}'"
    status, err = _cli(["runs", "show", victim, *db.cli])
    if status != 2 or not any(name in err for name in CLI_TREE):
        return f"OTHER: agent runs show exited {status}: {err.strip()[:200]}"
    return f"refused ({type(exc).__name__})"


def _cli(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        status = agent_main(argv)
    return status, err.getvalue()


def _readers(db: Db, store: RunStore, record: Any) -> None:
    """What a reader does with a run that loaded; raises what went wrong."""
    store.verify(record.run_id)
    if record.chart_spec is not None:
        trace = record_trace(record)
        again = Trace.from_json(trace.to_json())
        with tempfile.TemporaryDirectory() as tmp:
            again.save(Path(tmp) / "t.json")
            render_page(again)
            for argv in (
                ["runs", "show", record.run_id],
                ["runs", "show", record.run_id, "--json"],
                ["runs", "trace", record.run_id],
                ["runs", "list"],
                ["runs", "list", "--json"],
                ["view", record.run_id, "-o", f"{tmp}/p.html"],
            ):
                status, err = _cli([*argv, *db.cli])
                if status != 0:
                    raise AssertionError(f"agent {' '.join(argv[:2])} exited {status}: {err.strip()[:200]}")


@contextlib.contextmanager
def sqlite_base(tmp: Path, key: bytes | None = None) -> Iterator[tuple[Db, Base]]:
    """A SQLite file holding the three runs (written with ``key``)."""
    db = sqlite_db(tmp / ("keyed.db" if key else "runs.db"))
    yield db, Base.build(db, key)
