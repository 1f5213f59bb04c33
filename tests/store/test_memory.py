"""Long-term memory (``agent.memory``) on every backend: in-process, SQLite FTS5, real PostgreSQL."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent.memory import InMemoryMemory, MemoryItem, MemoryStoreError, PostgresMemory, SqliteMemory
from agent.memory.items import read_row
from agent.memory.sqlite import require_sqlite_module


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def make_memory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """A factory of memories on one backend (each call opens the same database again)."""
    made: list[Any] = []

    def make(**options: Any) -> Any:
        if request.param == "memory":
            memory: Any = InMemoryMemory(**options)
        elif request.param == "sqlite":
            memory = SqliteMemory(tmp_path / "memory.db", **options)
        else:
            from servers import fresh_pg_dsn

            if not made:
                request.node.dsn = fresh_pg_dsn(request.getfixturevalue("pg_dsn"))
            memory = PostgresMemory(request.node.dsn, **options)
        made.append(memory)
        return memory

    yield make
    for memory in made:
        memory.close()


def test_search_finds_the_items_that_match_best_first(make_memory: Callable[..., Any]) -> None:
    """The item sharing the query's words ranks first; stop words alone do not make a match."""
    m = make_memory()
    teal = m.put(("acme", "u-1"), "My favourite colour is teal")
    m.put(("acme", "u-1"), "The user lives in Lisbon and works nights")
    m.put(("acme", "u-1"), "The user is allergic to peanuts")
    found = m.search(("acme", "u-1"), "what is my favourite colour?", k=5)
    assert [item.id for item in found] == [teal]
    assert found[0].text == "My favourite colour is teal" and found[0].score > 0
    assert found[0].namespace == ("acme", "u-1")


def test_namespaces_never_see_each_other(make_memory: Callable[..., Any]) -> None:
    """An item is found only in the namespace it was put in (a tenant never recalls another's)."""
    m = make_memory()
    m.put(("acme", "u-1"), "favourite colour teal")
    m.put(("acme", "u-2"), "favourite colour red")
    m.put(("other",), "favourite colour green")
    assert [i.text for i in m.search(("acme", "u-2"), "colour")] == ["favourite colour red"]
    assert [i.text for i in m.search(("other",), "colour")] == ["favourite colour green"]
    assert m.search(("acme",), "colour") == []


def test_origin_is_recorded_and_read_back(make_memory: Callable[..., Any]) -> None:
    """Every item keeps where it came from: the run, conversation, turn, commit and stage."""
    m = make_memory()
    origin = {"run_id": "r-1", "conversation": "c-9", "turn": 1, "commit": "tool-calls#4", "stage": "tool-calls"}
    ident = m.put(("u",), "The user's dog is called Bruno", origin=origin)
    (item,) = m.search(("u",), "dog name")
    assert item.id == ident and item.origin == origin
    assert m.get(ident) == MemoryItem(ident, ("u",), item.text, origin, item.created, None, 0.0)
    assert m.get("m-0000000000000000") is None


def test_the_same_fact_from_the_same_origin_is_one_item(make_memory: Callable[..., Any]) -> None:
    """Ids are digests: a re-dispatched remember writes no second copy, and ids are the same every run."""
    m = make_memory()
    a = m.put(("u",), "likes tea", origin={"run_id": "r", "tool_call_id": "c1"})
    b = m.put(("u",), "likes tea", origin={"run_id": "r", "tool_call_id": "c1"})
    assert a == b == InMemoryMemory().put(("u",), "likes tea", origin={"run_id": "r", "tool_call_id": "c1"})
    assert len(m.search(("u",), "tea")) == 1


def test_items_expire_after_their_ttl(make_memory: Callable[..., Any]) -> None:
    """An item past its TTL is never returned (search, empty-query recency, get)."""
    clock = Clock()
    m = make_memory(ttl=60, clock=clock)
    short = m.put(("u",), "the parcel code is 4411", ttl=10)
    long = m.put(("u",), "the parcel is blue")
    clock.now += 30
    assert [i.id for i in m.search(("u",), "parcel")] == [long]
    assert [i.id for i in m.search(("u",), "")] == [long]
    assert m.get(short) is None and m.get(long) is not None
    clock.now += 60
    assert m.search(("u",), "parcel") == [] and m.get(long) is None


def test_k_bounds_the_results_and_an_empty_query_gives_the_most_recent(make_memory: Callable[..., Any]) -> None:
    """``k`` items at most; a query without words returns the newest items first."""
    clock = Clock()
    m = make_memory(clock=clock)
    for n in range(6):
        clock.now += 1
        m.put(("u",), f"note number {n} about apples")
    assert len(m.search(("u",), "apples", k=3)) == 3
    assert [i.text for i in m.search(("u",), "  ", k=2)] == ["note number 5 about apples", "note number 4 about apples"]


def test_embed_makes_search_semantic(make_memory: Callable[..., Any]) -> None:
    """With ``embed=``, items rank by cosine similarity of their vectors, not by shared words."""
    vectors = {"cat": [1.0, 0.0], "kitten": [0.9, 0.1], "invoice": [0.0, 1.0]}
    m = make_memory(embed=lambda text: vectors.get(text.split()[-1], [0.5, 0.5]))
    m.put(("u",), "pet is a cat")
    m.put(("u",), "sent an invoice")
    assert [i.text for i in m.search(("u",), "a kitten", k=1)] == ["pet is a cat"]


def test_search_k_and_query_are_checked() -> None:
    """A bad ``k`` or a query that is not text is refused naming the argument."""
    m = InMemoryMemory()
    with pytest.raises(MemoryStoreError, match=r"search\(k=...\): expected a positive integer, got 0"):
        m.search(("u",), "x", k=0)
    with pytest.raises(MemoryStoreError, match=r"search\(query=...\): expected a string, got int"):
        m.search(("u",), 3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("namespace", "message"),
    [
        (["acme", "u-1"], r"must be a tuple of strings, got a list \['acme', 'u-1'\]: write \('acme', 'u-1'\)"),
        ("acme", r"must be a tuple of strings, got a string 'acme'"),
        ((), r"must name at least one part"),
        (("acme", 7), r"part 1 must be a non-empty string, got an integer 7"),
        (("acme", ""), r"part 1 must be a non-empty string"),
    ],
)
def test_a_namespace_that_is_not_a_tuple_of_strings_is_refused(namespace: Any, message: str) -> None:
    """put and search refuse a bad namespace, naming what was given and how to write it."""
    m = InMemoryMemory()
    with pytest.raises(MemoryStoreError, match=message):
        m.put(namespace, "text")
    with pytest.raises(MemoryStoreError, match=message):
        m.search(namespace, "text")


@pytest.mark.parametrize(
    ("text", "origin", "message"),
    [
        ("   ", None, r"memory text is blank"),
        ("x" * 16_001, None, r"memory text is 16001 characters; at most 16000"),
        ("bad \ud800 text", None, r"memory text holds a lone surrogate"),
        ("ok", {"who": "me"}, r"unknown field 'who': the fields are run_id, conversation"),
        ("ok", {"turn": 1.5}, r"field 'turn' must be an integer, got a number"),
        ("ok", {"run_id": 7}, r"field 'run_id' must be a string, got an integer"),
        ("ok", "r-1", r"origin must be a mapping"),
    ],
)
def test_bad_text_or_origin_is_refused_before_anything_is_written(text: str, origin: Any, message: str) -> None:
    """Nothing is written on bad input; the error names the part."""
    m = SqliteMemory(":memory:")
    with pytest.raises(MemoryStoreError, match=message):
        m.put(("u",), text, origin=origin)
    assert m.search(("u",), "") == []


def test_a_sqlite_without_fts5_is_refused_with_what_to_do() -> None:
    """A SQLite build lacking the module SqliteMemory needs fails at open, saying what to use instead."""
    db = sqlite3.connect(":memory:")
    with pytest.raises(MemoryStoreError, match=r"needs SQLite's FTS_ABSENT full-text search.*use PostgresMemory"):
        require_sqlite_module(db, "fts_absent")
    require_sqlite_module(db, "fts5")  # this build has it


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("origin", '{"turn": 1, "turn": 2}', r"duplicate key 'turn'"),
        ("origin", '{"secret": "x"}', r"origin: unknown key\(s\) secret @ \$"),
        ("origin", '{"turn": "one"}', r"origin: .*turn"),
        ("origin", "not json", r"origin"),
        ("ns", '{"a": 1}', r"namespace is not a list"),
        ("text", "x" * 20_000, r"text is 20000 characters"),
        ("text", "bad \ud800", r"lone surrogate"),
    ],
)
def test_a_tampered_stored_row_is_refused_naming_the_item(
    tmp_path: Path, column: str, value: str, message: str
) -> None:
    """What comes back from the database is untrusted: a bad field fails closed, naming the item."""
    m = SqliteMemory(tmp_path / "m.db")
    ident = m.put(("u",), "the code is 12")
    db = sqlite3.connect(tmp_path / "m.db")
    if value.endswith("\ud800"):
        db.execute("UPDATE memory_items SET text = CAST(? AS TEXT) WHERE id = ?", (b"bad \xed\xa0\x80", ident))
    else:
        db.execute(f"UPDATE memory_items SET {column} = ? WHERE id = ?", (value, ident))
    db.commit()
    with pytest.raises(MemoryStoreError, match=rf"stored memory item {ident}.*{message}"):
        m.search(("u",), "")


@settings(max_examples=200, deadline=None)
@given(
    st.tuples(
        st.one_of(st.text(max_size=20), st.integers(), st.none()),
        st.one_of(st.text(max_size=40), st.none(), st.integers()),
        st.one_of(st.text(max_size=40), st.integers()),
        st.one_of(st.text(max_size=60), st.none()),
        st.one_of(st.floats(allow_nan=True), st.integers(), st.text(max_size=5), st.none()),
        st.one_of(st.floats(), st.none(), st.text(max_size=3)),
    )
)
def test_fuzzed_rows_either_read_or_fail_closed(row: tuple[Any, ...]) -> None:
    """Any row is either a checked ``MemoryItem`` or a ``MemoryStoreError`` — never another exception."""
    try:
        item = read_row(row)
    except MemoryStoreError:
        return
    assert isinstance(item, MemoryItem) and isinstance(item.text, str) and item.namespace


def _ranked_in_one_query(memory: SqliteMemory, namespace: tuple[str, ...], query: str, k: int) -> list[str]:
    """The definition of a SQLite search, as one join sorted in full: BM25, newest first, id."""
    from agent.memory.items import namespace_token, search_words

    terms = " OR ".join('"' + w + '"' for w in search_words(query))
    match = f'nstok : "{namespace_token(namespace)}" AND text : ({terms})'
    rows = memory._db.execute(
        "SELECT i.id FROM memory_fts JOIN memory_items i ON i.rid = memory_fts.rowid "
        "WHERE memory_fts MATCH ? AND (i.expires IS NULL OR i.expires > ?) "
        "ORDER BY bm25(memory_fts, 0.0, 1.0), i.created DESC, i.id LIMIT ?",
        (match, memory.clock(), k),
    ).fetchall()
    return [row[0] for row in rows]


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 12),
    query=st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "omega"]), min_size=1, max_size=3),
)
def test_a_sqlite_search_ranked_inside_fts5_is_the_full_ranking_cut_at_k(k: int, query: list[str]) -> None:
    """FTS5 ranks with a LIMIT of its own (no join), then the kept rows are read: with expired items
    among the best and many exact ties (few words, same lengths), the answer is the full sorted
    join's first ``k``, item for item."""
    clock = Clock()
    memory = SqliteMemory(":memory:", clock=clock)
    words = ["alpha", "beta", "gamma", "delta"]
    for n in range(120):
        text = " ".join(words[(n + j) % 4] for j in range(1 + n % 3))
        memory.put(("acme", "one"), f"{text} #{n}", ttl=5.0 if n % 7 == 0 else None)
        clock.now += 1.0 if n % 10 == 0 else 0.0  # many items share a created time
    clock.now += 10.0  # every seventh item has expired, some of them among the best matches
    text = " ".join(query)
    assert [item.id for item in memory.search(("acme", "one"), text, k=k)] == _ranked_in_one_query(
        memory, ("acme", "one"), text, k
    )


def _ranked_with_scores(
    memory: SqliteMemory, namespace: tuple[str, ...], query: str, k: int
) -> list[tuple[str, float]]:
    """``_ranked_in_one_query`` with each item's score (``-bm25``): the definition, id and score."""
    from agent.memory.items import namespace_token, search_words

    terms = " OR ".join('"' + w + '"' for w in search_words(query))
    match = f'nstok : "{namespace_token(namespace)}" AND text : ({terms})'
    rows = memory._db.execute(
        "SELECT i.id, -bm25(memory_fts, 0.0, 1.0) FROM memory_fts JOIN memory_items i ON i.rid = memory_fts.rowid "
        "WHERE memory_fts MATCH ? AND (i.expires IS NULL OR i.expires > ?) "
        "ORDER BY bm25(memory_fts, 0.0, 1.0), i.created DESC, i.id LIMIT ?",
        (match, memory.clock(), k),
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def _counted(memory: SqliteMemory) -> dict[str, int]:
    """``memory_namespaces`` as a dict (``*``: every item)."""
    return dict(memory._db.execute("SELECT nstok, items FROM memory_namespaces").fetchall())


def _counted_from_items(memory: SqliteMemory) -> dict[str, int]:
    """Each namespace's items counted from ``memory_items`` itself, and ``*``: all of them."""
    counts = dict(memory._db.execute("SELECT nstok, count(*) FROM memory_items GROUP BY nstok").fetchall())
    return {**counts, "*": sum(counts.values())}


@settings(max_examples=30, deadline=None)
@given(
    k=st.integers(1, 12),
    query=st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta", "omega"]), min_size=1, max_size=3),
)
def test_a_search_of_the_namespace_with_most_items_ranks_without_its_token_and_gives_the_same_answer(
    k: int, query: list[str]
) -> None:
    """A namespace with most of the items is ranked by FTS5 without its token's phrase and its
    rows kept after ranking; a small one keeps the token in the query. Both give the full
    sorted join's first ``k`` (ids and scores), with expired items, ties and the other
    namespaces' items (the same words) among the best matches."""
    clock = Clock()
    memory = SqliteMemory(":memory:", clock=clock)
    words = ["alpha", "beta", "gamma", "delta"]
    big, small = ("acme", "big"), ("acme", "small")
    for n in range(150):
        text = " ".join(words[(n + j) % 4] for j in range(1 + n % 3))
        namespace = small if n % 5 == 0 else ("acme", f"tiny-{n % 3}") if n % 7 == 0 else big
        memory.put(namespace, f"{text} #{n}", ttl=5.0 if n % 6 == 0 else None)
        clock.now += 1.0 if n % 10 == 0 else 0.0
    clock.now += 10.0
    from agent.memory.items import namespace_token

    assert memory._most_items(namespace_token(big)) and not memory._most_items(namespace_token(small))
    text = " ".join(query)
    for namespace in (big, small):
        found = [(item.id, item.score) for item in memory.search(namespace, text, k=k)]
        assert found == _ranked_with_scores(memory, namespace, text, k)


def test_recall_over_the_bench_corpus_in_one_namespace_is_the_full_ranking_cut_at_k() -> None:
    """M100K's items (Zipf-like made-up words, seeded), 4,000 of them in one namespace, a tenth
    expired: for 150 of its queries the search returns the full sorted join's first 5 — the
    same ids in the same order with the same scores, bit for bit."""
    from bench.memory_items import items, queries

    clock = Clock()
    memory = SqliteMemory(":memory:", clock=clock)
    corpus = list(items(1, 4_000))
    memory.put_many([entry for n, entry in enumerate(corpus) if n % 10 != 3])
    memory.put_many([entry for n, entry in enumerate(corpus) if n % 10 == 3], ttl=5.0)
    clock.now += 10.0
    stream = queries(1)
    for _ in range(150):
        namespace, query = next(stream)
        found = [(item.id, item.score) for item in memory.search(namespace, query, k=5)]
        assert found == _ranked_with_scores(memory, namespace, query, 5), query


def test_namespace_counts_stay_in_step_with_the_items(tmp_path: Path) -> None:
    """``memory_namespaces`` counts each namespace's items and all of them (``*``) through puts,
    a batch, the same item written again (replaced, not added) and deletes (a namespace left
    empty leaves the table)."""
    memory = SqliteMemory(tmp_path / "memory.db")
    first = memory.put(("acme", "u-1"), "tea with lemon")
    memory.put(("acme", "u-1"), "tea with lemon")  # the same item: replaced
    memory.put_many([(("acme", "u-2"), f"fact {n}") for n in range(5)])
    assert _counted(memory) == _counted_from_items(memory)
    assert _counted(memory)["*"] == 6
    assert memory.delete(first)
    assert _counted(memory) == _counted_from_items(memory)
    assert _counted(memory)["*"] == 5 and len(_counted(memory)) == 2
    memory.close()


def test_a_memory_file_from_before_the_namespace_counts_is_counted_when_opened(tmp_path: Path) -> None:
    """A file written before ``memory_namespaces`` existed (no table, no counting triggers) gets
    them when opened, counted from its items, and its searches give the same answers."""
    path = tmp_path / "memory.db"
    memory = SqliteMemory(path)
    memory.put_many([(("acme", "big"), f"alpha beta {n}") for n in range(8)] + [(("acme", "small"), "alpha gamma")])
    memory._db.executescript(
        "DROP TRIGGER memory_items_count_ai; DROP TRIGGER memory_items_count_ad; DROP TABLE memory_namespaces;"
    )
    memory.put(("acme", "big"), "alpha delta")  # written the old way: nothing counts it
    memory.close()
    reopened = SqliteMemory(path)
    assert _counted(reopened) == _counted_from_items(reopened)
    assert _counted(reopened)["*"] == 10
    for namespace in (("acme", "big"), ("acme", "small")):
        found = [(item.id, item.score) for item in reopened.search(namespace, "alpha delta", k=3)]
        assert found == _ranked_with_scores(reopened, namespace, "alpha delta", 3)
    reopened.close()


def test_a_tie_wider_than_the_first_ranking_still_gives_the_newest_first() -> None:
    """200 items with exactly the same score (one word once, texts of one length) outnumber the
    rows FTS5 ranks at first: the limit grows until the tie is read whole, and the answer is
    the newest five, as in the full sorted join — in the namespace with most items and in a
    small one beside it."""
    clock = Clock()
    memory = SqliteMemory(":memory:", clock=clock)
    for n in range(200):
        memory.put(("acme", "big"), f"alpha {n:04d}")
        if n % 40 == 0:
            memory.put(("acme", "small"), f"alpha {n:04d}")
        clock.now += 1.0
    for namespace in (("acme", "big"), ("acme", "small")):
        found = memory.search(namespace, "alpha", k=5)
        assert [(item.id, item.score) for item in found] == _ranked_with_scores(memory, namespace, "alpha", 5)
        assert len({item.score for item in found}) == 1
    assert [item.text for item in memory.search(("acme", "big"), "alpha", k=3)] == [
        "alpha 0199",
        "alpha 0198",
        "alpha 0197",
    ]
