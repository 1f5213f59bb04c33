"""Each message stored once (issue 30): a conversation turn's row references the list an earlier
turn's row stored and adds only its new tail (``flowchart.store.extends``).

Shown through real SQLite and PostgreSQL databases: the bytes a turn writes stay flat, every
record reads back exactly as if stored whole, the same conversation gives the same rows, a
redaction rule keeps lists whole, a signed store verifies the rows a reference stands on, and a
forged, missing, edited, mislengthed or cyclic reference is refused naming the row.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from chat_agent import chat_agent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from traced_store import TracedStore

from flowchart import Redaction
from flowchart.store import RunStore, SqliteStore, StoredRowError
from flowchart.store.extends import CHAIN, Written

KEY = b"k" * 32


class WholeStore(SqliteStore):
    """A SQLite store that never finds an earlier row to reference: every list stored whole, as
    rows were before references (the twin the referencing store is held to)."""

    def _still_stored(self, cur: Any, written: Written) -> bool:
        return False


def written_bytes(store: TracedStore, agent: Any, message: str) -> dict[str, int]:
    """The bytes of the INSERT and UPDATE statements one turn of conversation ``c`` sent, by the
    table they write (``runs input`` for the run's row, ``runs`` for its updates)."""
    store.statements.clear()
    agent.run(message, conversation="c")
    sent: dict[str, int] = {}
    for statement in store.statements:
        found = re.match(r"\s*(?:INSERT INTO|UPDATE) (\w+)", statement)
        if found:
            table = f"{found[1]} input" if statement.lstrip().startswith("INSERT INTO runs") else found[1]
            sent[table] = sent.get(table, 0) + len(statement.encode())
    return sent


def talk(store: RunStore, turns: int, conversation: str = "c", first: int = 1, **create: Any) -> None:
    """``turns`` turns of a conversation that calls a tool every third turn (from turn ``first``)."""
    agent = chat_agent(store, **create)
    for n in range(first, first + turns):
        agent.run("weather in Oslo" if n % 3 == 1 else f"note {n}", conversation=conversation)


def rows(path: Path) -> list[tuple[int, int, str]]:
    """Every commit row, ``(turn, seq, body)``, each run id replaced by its turn (ids are random)."""
    db = sqlite3.connect(path)
    found = db.execute(
        "SELECT r.turn, c.seq, c.body FROM commits c JOIN runs r USING (run_id) ORDER BY r.turn, c.seq"
    ).fetchall()
    ids = dict(db.execute("SELECT run_id, turn FROM runs").fetchall())
    db.close()
    named = re.compile("|".join(map(re.escape, ids)))
    return [(turn, seq, named.sub(lambda m: f"turn-{ids[m[0]]}", body)) for turn, seq, body in found]


def logs(store: RunStore) -> list[str]:
    """Each turn's commit log as JSON, oldest turn first, run ids replaced by turns."""
    records = list(reversed(store.list(conversation="c")))
    ids = {r.run_id: r.turn for r in records}
    named = re.compile("|".join(map(re.escape, ids)))
    return [named.sub(lambda m: f"turn-{ids[m[0]]}", json.dumps([c.to_dict() for c in r.commit_log])) for r in records]


def test_the_bytes_a_turn_writes_at_turn_40_are_those_at_turn_3(tmp_path: Path) -> None:
    """Through SQLite: turn 40 writes its commit rows in as many bytes as turn 3 (give or take
    two references: turn 3 still stores its two short lists of earlier turns whole), where a
    store writing the history whole writes many times more. What still grows is named: the
    run's input names each loaded turn (its number and run id, for ``loaded_from_store``) and
    the narrative's sentence lists their numbers — under 50 bytes an earlier turn, against the
    history's hundreds."""
    store = TracedStore(tmp_path / "runs.db")
    agent = chat_agent(store)
    for n in range(1, 3):
        agent.run(f"note {n}", conversation="c")
    early = written_bytes(store, agent, "note 3")
    for n in range(4, 40):
        agent.run(f"note {n}", conversation="c")
    late = written_bytes(store, agent, "note 40")
    assert late["commits"] <= early["commits"] + 200, (early, late)  # at most two references more
    for table in ("runs", "answers", "leases"):
        assert abs(late.get(table, 0) - early.get(table, 0)) <= 16, (table, early, late)
    grown = late["runs input"] + late["segments"] - early["runs input"] - early["segments"]
    assert 0 < grown < 50 * (40 - 3), (early, late)
    whole = WholeStore(tmp_path / "whole.db")
    talk(whole, 39)
    sent = sqlite3.connect(tmp_path / "whole.db").execute("SELECT MAX(length(body)) FROM commits").fetchone()[0]
    assert sent > 3 * late["commits"]  # the whole history's row alone outweighs all of turn 40's


def test_every_turn_reads_back_as_if_stored_whole(tmp_path: Path) -> None:
    """Twelve turns (tool calls, answers) on a referencing store and on one storing every list
    whole: each turn's commit log reads back the same, from a fresh store object (another
    process's view, which remembers nothing), and the rows really are references."""
    talk(SqliteStore(tmp_path / "once.db"), 12)
    talk(WholeStore(tmp_path / "whole.db"), 12)
    assert logs(SqliteStore(tmp_path / "once.db")) == logs(SqliteStore(tmp_path / "whole.db"))
    seeds = [turn for turn, seq, body in rows(tmp_path / "once.db") if seq == 0 and body.startswith('{"extends":')]
    assert seeds == list(range(3, 13))  # turn 2 extends a one-message list: stored again, not referenced


def test_a_chain_is_at_most_chain_rows_long(tmp_path: Path) -> None:
    """The writer stores a list whole rather than make a chain longer than ``CHAIN`` rows: turn 2
    stores its history whole, turns 3-65 reference the turn before, turn 66 stores it whole again
    and turn 67 references it; every turn still reads back as if stored whole."""
    assert CHAIN == 64
    talk(SqliteStore(tmp_path / "once.db"), 67)
    seeds = {turn: json.loads(body) for turn, seq, body in rows(tmp_path / "once.db") if seq == 0}
    whole = {turn for turn, row in seeds.items() if not any(r["in"] == [] for r in row.get("extends", []))}
    assert whole == {1, 2, 66}  # the history; its other lists (sources, loaded_turns) chain on their own
    talk(WholeStore(tmp_path / "whole.db"), 67)
    assert logs(SqliteStore(tmp_path / "once.db")) == logs(SqliteStore(tmp_path / "whole.db"))


def test_the_same_conversation_gives_the_same_rows(tmp_path: Path) -> None:
    """Two stores given the same conversation write the same rows, byte for byte (run ids, which
    are random, named by their turn)."""
    talk(SqliteStore(tmp_path / "a.db"), 8)
    talk(SqliteStore(tmp_path / "b.db"), 8)
    assert rows(tmp_path / "a.db") == rows(tmp_path / "b.db")


def test_a_turn_another_store_object_writes_is_stored_whole_and_starts_a_new_chain(tmp_path: Path) -> None:
    """A store object that did not write the previous turn (another process, a restart) stores
    the next turn's lists whole, then references its own rows again; every turn reads back."""
    path = tmp_path / "runs.db"
    talk(SqliteStore(path), 3)
    talk(SqliteStore(path), 2, first=4)  # turns 4 and 5: 4 whole, 5 referencing 4
    kinds = {turn: body.startswith('{"extends":') for turn, seq, body in rows(path) if seq == 0}
    assert kinds == {1: False, 2: False, 3: True, 4: False, 5: True}
    assert '"run":"turn-4"' in rows(path)[-4][2]
    talk(WholeStore(tmp_path / "whole.db"), 5)
    assert logs(SqliteStore(path)) == logs(SqliteStore(tmp_path / "whole.db"))


def test_a_run_with_a_redaction_rule_stores_its_lists_whole(tmp_path: Path) -> None:
    """A conversation whose runs hide the messages' texts never references a row (a reference can
    neither reveal nor bypass a hidden value), and reads back with the placeholders in place."""
    hidden = Redaction(fields={"history": ["content"]})
    talk(SqliteStore(tmp_path / "runs.db"), 4, redaction=hidden)
    assert not [body for _, _, body in rows(tmp_path / "runs.db") if body.startswith('{"extends":')]
    latest = SqliteStore(tmp_path / "runs.db").list(conversation="c")[0]
    history = next(op.value for c in latest.commit_log for op in c.trace if op.path == ("history",))
    assert len(history) > 4 and {m["content"] for m in history if m["role"] == "user"} == {"REDACTED"}


@pytest.fixture(params=["sqlite", "postgres"])
def make_sql_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., RunStore]]:
    """A factory of SQL stores on one database (each call another process's view)."""
    made: list[Any] = []
    if request.param == "sqlite":

        def factory(**kw: Any) -> RunStore:
            return SqliteStore(tmp_path / "runs.db", **kw)
    else:
        from servers import fresh_pg_dsn

        from flowchart.store import PostgresStore

        dsn = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))

        def factory(**kw: Any) -> RunStore:
            return PostgresStore(dsn, **kw)

    def make(**kw: Any) -> RunStore:
        made.append(factory(**kw))
        return made[-1]

    yield make
    for store in made:
        store.close()


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_sqlite_and_postgres_read_the_turns_back_whole(make_sql_store: Callable[..., RunStore], key: Any) -> None:
    """On SQLite and a real PostgreSQL, plain and signed: the last turn's history, read by a
    fresh store object, holds every message of the six turns, and ``verify`` accepts every run."""
    talk(make_sql_store(key=key), 6)
    reader = make_sql_store(key=key)
    latest = reader.list(conversation="c")
    assert not latest.unreadable and len(latest) == 6
    history = next(op.value for c in latest[0].commit_log for op in c.trace if op.path == ("history",))
    assert [m["content"] for m in history if m["role"] == "user"] == [
        "weather in Oslo" if n % 3 == 1 else f"note {n}" for n in range(1, 7)
    ]
    for record in latest:
        assert reader.verify(record.run_id)


def edit(path: Path, turn: int, sql: str, *args: Any) -> str:
    """Run ``sql`` on turn ``turn``'s seed row (``?1`` its run id) with SQLite's own client; its run id."""
    db = sqlite3.connect(path)
    run_id = db.execute("SELECT run_id FROM runs WHERE turn = ?", (turn,)).fetchone()[0]
    db.execute(sql, (run_id, *args))
    db.commit()
    db.close()
    return str(run_id)


@pytest.mark.parametrize("key", [None, KEY], ids=["plain", "signed"])
def test_a_deleted_referenced_row_is_refused_naming_it(tmp_path: Path, key: Any) -> None:
    """Turn 2's seed row deleted behind the store: turn 4 (whose history stands on it) is refused
    naming turn 4's row and the missing one; turn 1 still reads."""
    talk(SqliteStore(tmp_path / "runs.db", key=key), 4)
    gone = edit(tmp_path / "runs.db", 2, "DELETE FROM commits WHERE run_id = ? AND seq = 0")
    store = SqliteStore(tmp_path / "runs.db", key=key)
    fourth = store.list(conversation="c")[0].run_id if key is None else None
    runs = dict(sqlite3.connect(tmp_path / "runs.db").execute("SELECT turn, run_id FROM runs").fetchall())
    with pytest.raises(
        StoredRowError,
        match=rf"^Invalid stored run '{runs[4]}' \(commit 0\): it extends run '{gone}' commit 0 op 1, "
        r"which is not stored \(deleted behind the store\?\)",
    ):
        store.get(runs[4])
    assert store.get(runs[1]).turn == 1
    assert fourth is None or fourth != runs[4]  # unsigned: the listing left turn 4 out as unreadable


def test_an_edited_referenced_row_of_a_signed_store_is_refused_naming_it(tmp_path: Path) -> None:
    """Signed: turn 2's seed row rewritten behind the store (a message changed, signature kept)
    fails its signature when turn 3 reads through it — refused naming both rows."""
    talk(SqliteStore(tmp_path / "runs.db", key=KEY), 3)
    edited = edit(
        tmp_path / "runs.db", 2, "UPDATE commits SET body = replace(body, 'note 2', 'note X') WHERE run_id = ?"
    )
    runs = dict(sqlite3.connect(tmp_path / "runs.db").execute("SELECT turn, run_id FROM runs").fetchall())
    with pytest.raises(
        StoredRowError,
        match=rf"^Invalid stored run '{runs[3]}' \(commit 0\): it extends run '{edited}' commit 0 op 1, "
        r"which does not load: Invalid stored run .*signature",
    ):
        SqliteStore(tmp_path / "runs.db", key=KEY).get(runs[3])


def seed_row(path: Path, turn: int) -> dict[str, Any]:
    db = sqlite3.connect(path)
    body = db.execute(
        "SELECT c.body FROM commits c JOIN runs r USING (run_id) WHERE r.turn = ? AND c.seq = 0", (turn,)
    ).fetchone()[0]
    db.close()
    found: dict[str, Any] = json.loads(body)
    return found


def forge(path: Path, turn: int, data: Any) -> str:
    return edit(path, turn, "UPDATE commits SET body = ?2 WHERE run_id = ?1 AND seq = 0", json.dumps(data))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (
            lambda r, ids: r["extends"][0].update(run="nobody"),
            r"it extends run 'nobody' commit 0 op 1, which is not stored",
        ),
        (lambda r, ids: r["extends"][0].update(commit=9), r"it extends run '.*' commit 9 op 1, which is not stored"),
        (lambda r, ids: r["extends"][0].update(at=99), r"names op 99, which the row does not hold"),
        (lambda r, ids: r["extends"][0].update(at=0), r"names op 0 at \[\], which is not a list"),
        (lambda r, ids: r["extends"][0].update(length=2), r"takes 2 items of a list of \d+: the rows differ"),
        (lambda r, ids: r["extends"][0].update(run=ids[3], commit=0), r"makes a cycle of references"),
        (lambda r, ids: r["extends"][0].update(op=True), r"hold a malformed reference"),
        (lambda r, ids: r["extends"][0].update(extra=1), r"hold a malformed reference"),
        (lambda r, ids: r.update(more=1), r"are not an envelope of 'extends' and 'row'"),
        (lambda r, ids: r.update(extends=[]), r"are not a non-empty list beside a commit row"),
        (lambda r, ids: r["extends"].append(dict(r["extends"][0])), r"hold a malformed reference"),
    ],
    ids=[
        "missing-run",
        "missing-commit",
        "missing-op",
        "not-a-list",
        "wrong-length",
        "cycle",
        "bool-op",
        "extra-field",
        "extra-key",
        "empty",
        "twice",
    ],
)
def test_a_forged_reference_is_refused_naming_the_row(
    tmp_path: Path, change: Callable[[dict[str, Any], dict[int, str]], None], problem: str
) -> None:
    """Turn 3's seed row forged behind an unsigned store: each wrong reference is a
    ``StoredRowError`` naming turn 3's commit 0 and what is wrong, never a wrong history."""
    talk(SqliteStore(tmp_path / "runs.db"), 3)
    ids = dict(sqlite3.connect(tmp_path / "runs.db").execute("SELECT turn, run_id FROM runs").fetchall())
    row = seed_row(tmp_path / "runs.db", 3)
    change(row, ids)
    forge(tmp_path / "runs.db", 3, row)
    with pytest.raises(StoredRowError, match=rf"^Invalid stored run '{ids[3]}' \(commit 0\): .*{problem}"):
        SqliteStore(tmp_path / "runs.db").get(ids[3])


def test_a_cycle_through_two_rows_is_refused(tmp_path: Path) -> None:
    """Turn 3's row made to extend turn 4's, which extends turn 3's: reading either is refused as a
    cycle, not a loop or a recursion error."""
    talk(SqliteStore(tmp_path / "runs.db"), 4)
    ids = dict(sqlite3.connect(tmp_path / "runs.db").execute("SELECT turn, run_id FROM runs").fetchall())
    row = seed_row(tmp_path / "runs.db", 3)
    row["extends"][0].update(run=ids[4])
    forge(tmp_path / "runs.db", 3, row)
    store = SqliteStore(tmp_path / "runs.db")
    for turn in (3, 4):
        with pytest.raises(StoredRowError, match=r"makes a cycle of references"):
            store.get(ids[turn])


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 12) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["op", "in", "run", "x"]), inner),
    max_leaves=12,
)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fuzzed_referencing_rows_load_or_are_refused_by_name(tmp_path_factory: Any, data: st.DataObject) -> None:
    """Referencing rows edited at random (fields of the right and wrong types, real and unknown run
    ids, any JSON in the row): ``get`` returns a record (its log checked as any stored log) or
    raises ``StoredRowError`` naming the run — nothing else."""
    path = _fuzz_db(tmp_path_factory)
    ids = dict(sqlite3.connect(path).execute("SELECT turn, run_id FROM runs").fetchall())
    row = seed_row(path, 3)
    run_ids = st.sampled_from([*ids.values(), "nobody", ""])
    ref = st.fixed_dictionaries(
        {
            "op": st.integers(-1, 12) | _json,
            "in": st.sampled_from([[], ["sources"], ["loaded_turns"], ["x"], [1]]) | _json,
            "run": run_ids | _json,
            "commit": st.integers(-1, 4) | _json,
            "at": st.integers(-1, 12) | _json,
            "length": st.integers(-1, 8) | _json,
        }
    )
    choice = data.draw(st.sampled_from(["refs", "row", "ref-fields"]))
    if choice == "refs":
        row["extends"] = data.draw(st.lists(ref, max_size=3) | _json)
    elif choice == "row":
        row["row"]["trace"][data.draw(st.integers(0, len(row["row"]["trace"]) - 1))] = data.draw(_json)
    else:
        row["extends"][0][data.draw(st.sampled_from(list(row["extends"][0])))] = data.draw(_json | run_ids)
    original = seed_row(path, 3)
    forge(path, 3, row)
    try:
        record = SqliteStore(path).get(ids[3])
    except StoredRowError as exc:
        assert exc.run_id == ids[3]
    else:
        assert record.commit_log[0].idx == 0
    finally:
        forge(path, 3, original)


_FUZZ: dict[str, Path] = {}


def _fuzz_db(factory: Any) -> Path:
    if "db" not in _FUZZ:
        path = factory.mktemp("stored-once") / "runs.db"
        talk(SqliteStore(path), 3)
        _FUZZ["db"] = path
    return _FUZZ["db"]
