"""Stored commit rows and narratives are read by the trace file's strict passes when they are plainly
right, and by the per-item path otherwise: both give the same records and the same refusals."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutate

from flowchart._core import fastjson
from flowchart._core.commits import Attempt, Commit, Op, commit_data
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.serde import dumps
from flowchart._core.values import NotJsonSafe, copy_json
from flowchart.store import codec

COMMIT = Commit(
    4,
    "Pick",
    "pick",
    "pick#4",
    (Op(("a",), "set", {"x": [1, 2.5]}), Op(("b",), "delete"), Op(("c",), "append", ["é"])),
    ("a", "b"),
    ("a/x",),
    {"chosen": "left"},
    (Attempt(1, "TimeoutError", "slow"),),
    "pick#2",
)
RECORDS = [
    NarrativeEntry("stage", 0, "Stage 1: began", "Pick", "pick", "pick#0"),
    NarrativeEntry("step", 1, "Step 1: Read a = 1", "Pick", "pick", "pick#0", None, "a", 1),
]


@contextlib.contextmanager
def per_item_path() -> Iterator[None]:
    """Within: the codec reads every row the way it did before the strict passes (no orjson either)."""
    with pytest.MonkeyPatch.context() as patch, fastjson.stdlib_only():
        patch.setattr(codec, "_one_commit", lambda _data: None)
        patch.setattr(codec, "_strict_narrative", lambda _data: None)
        yield


def _read(load: Any, *args: Any) -> Any:
    try:
        return "read", load(*args)
    except Exception as exc:  # a garbage row fails as it always did (KeyError, TypeError): alike on both paths
        return "refused", type(exc).__name__, str(exc)


def _both(load: Any, *args: Any) -> tuple[Any, Any]:
    fast = _read(load, *args)
    with per_item_path():
        return fast, _read(load, *args)


def test_a_stored_commit_and_narrative_read_the_same_on_both_paths() -> None:
    """A commit row with every field set, and a narrative with full and sparse records: the strict
    passes read exactly what the per-item path reads."""
    row = dumps(commit_data(COMMIT))
    assert _both(codec.decode_commit, row) == (("read", COMMIT), ("read", COMMIT))
    text = codec.encode_narrative([r.text for r in RECORDS], RECORDS)
    assert _both(codec.decode_narrative, text, "r1") == (("read", tuple(RECORDS)), ("read", tuple(RECORDS)))


def test_a_row_the_strict_pass_declines_is_still_read_as_before() -> None:
    """A commit row without ``reads`` (older rows) is not the strict pass's to read: it is read
    leniently as before; a narrative of bare lines still becomes ``line`` records."""
    data = commit_data(COMMIT)
    del data["reads"]
    fast, slow = _both(codec.decode_commit, dumps(data))
    assert fast == slow and fast[0] == "read" and fast[1].reads == ()
    fast, slow = _both(codec.decode_narrative, dumps(["a line"]), "r1")
    assert fast == slow == ("read", (NarrativeEntry("line", 0, "a line"),))


def test_a_narrative_row_is_stored_as_columns_and_an_older_list_of_records_still_reads() -> None:
    """Since schema 6 a segment's records are stored as columns (each key once); a row of record
    objects written before reads to the same records, on both paths."""
    stored = json.loads(codec.encode_narrative([r.text for r in RECORDS], RECORDS))
    assert stored["text"] == [r.text for r in RECORDS] and stored["step_number"] == [None, 1]
    old = dumps([{**attrs.asdict(r)} for r in RECORDS])
    assert _both(codec.decode_narrative, old, "r1") == (("read", tuple(RECORDS)), ("read", tuple(RECORDS)))


def test_a_stored_run_builds_its_narrative_records_when_they_are_read(tmp_path: Any) -> None:
    """``store.get`` keeps the run's narrative as checked columns: ``narrative`` (the lines) is
    there at once, ``narrative_records`` are built on first read, equal to what the run told."""
    from flowchart import flow_chart, narrative
    from flowchart.store import SqliteStore
    from flowchart.store.protocol import _NARRATIVE_RECORDS, RunRecord

    store = SqliteStore(tmp_path / "runs.db")
    rec = narrative()
    result = flow_chart("A", lambda scope: setattr(scope, "x", 1), "a").build().run(recorders=[rec], store=store)
    record = store.get(result.run_id)
    assert type(_NARRATIVE_RECORDS.__get__(record, RunRecord)).__name__ == "NarrativeColumns"
    assert record.narrative == tuple(rec.lines())
    assert record.narrative_records == tuple(rec.records())
    assert _NARRATIVE_RECORDS.__get__(record, RunRecord) == tuple(rec.records())  # built once, kept
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        record.narrative_records = ()  # type: ignore[misc]


@pytest.mark.parametrize(
    "damage",
    [
        lambda t: t.replace('"idx":4', '"idx":4,"idx":5', 1),
        lambda t: t.replace('"x":[1,2.5]', '"x":[1,1e999]', 1),
        lambda t: t.replace('"x":[1,2.5]', '"x":' + "[" * 260 + "]" * 260, 1),
    ],
)
def test_a_damaged_commit_row_is_refused_alike(damage: Any) -> None:
    """A repeated key, an overflowing number, a value nested past the limit: the same
    ``CheckpointError`` on both paths."""
    fast, slow = _both(codec.decode_commit, damage(dumps(commit_data(COMMIT))))
    assert fast == slow and fast[:2] == ("refused", "CheckpointError")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_stored_rows_read_the_same_on_both_paths(rng: random.Random) -> None:
    """Mutated commit rows and narrative columns (compact, as stores write them, or not):
    both paths read the same values or refuse with the same words."""
    row = mutate(commit_data(COMMIT) | {"trace": [o.to_dict() for o in COMMIT.trace]}, rng)
    narrative = mutate(json.loads(codec.encode_narrative([], RECORDS)), rng)
    for text in (row, narrative):
        with contextlib.suppress(ValueError, RecursionError):
            fast, slow = _both(codec.decode_commit, dumps(json.loads(text)))
            assert fast == slow
        fast, slow = _both(codec.decode_commit, text)
        assert fast == slow
    fast, slow = _both(codec.decode_narrative, narrative, "fz")
    assert fast == slow


def _row(index: int, value: Any) -> str:
    commit = Commit(index, "Step", "step", f"step#{index}", (Op(("items",), "append", [value]),), ("items",))
    return dumps(commit_data(commit))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    values=st.lists(
        st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5), st.none()),
        min_size=0,
        max_size=90,
    ),
    rng=st.randoms(use_true_random=False),
)
def test_a_run_s_rows_read_together_as_one_by_one(values: list[Any], rng: random.Random) -> None:
    """``decode_commits`` (many rows, structured together when every row is plainly right) reads
    exactly what ``decode_commit`` reads row by row — with one row damaged too, where it refuses
    with the same words."""
    rows = [_row(i, v) for i, v in enumerate(values)]
    by_row = _read(lambda: tuple(codec.decode_commit(r) for r in rows))
    assert _read(codec.decode_commits, rows) == by_row
    if rows:
        at = rng.randrange(len(rows))
        rows[at] = mutate(json.loads(rows[at]), rng)
        assert _read(codec.decode_commits, rows) == _read(lambda: tuple(codec.decode_commit(r) for r in rows))


def test_a_row_holding_two_commits_is_refused_even_among_many() -> None:
    """Rows are parsed one by one, never joined: a row that holds two commits, with another row
    cut short to make the count match, is refused as the row-by-row path refuses it."""
    rows = [_row(i, i) for i in range(80)]
    rows[10] = rows[10] + "," + rows[11]
    rows[11] = "{"
    refused = _read(codec.decode_commits, rows)
    assert refused[0] == "refused" and refused == _read(lambda: tuple(codec.decode_commit(r) for r in rows))


def test_plain_rows_are_structured_together_when_orjson_is_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the ``[fast]`` extra, a run of plainly right rows never goes row by row (the point
    of ``decode_commits``: one columnar pass); without it, every row does."""
    pytest.importorskip("orjson")
    rows = [_row(i, i) for i in range(80)]
    expected = tuple(codec.decode_commit(r) for r in rows)

    def one_by_one(_text: str) -> Commit:
        raise AssertionError("read row by row")

    monkeypatch.setattr(codec, "decode_commit", one_by_one)
    assert codec.decode_commits(rows) == expected
    with fastjson.stdlib_only(), pytest.raises(AssertionError, match="row by row"):
        codec.decode_commits(rows)


def test_a_stored_run_read_leaves_the_collector_on(tmp_path: Any) -> None:
    """``store.get`` holds the cycle collector while it builds a record (a big run's record is
    hundreds of thousands of objects and no cycle) and turns it back on, also when the run is
    not there."""
    import gc

    from flowchart import flow_chart
    from flowchart.store import RunNotFoundError, SqliteStore

    store = SqliteStore(tmp_path / "runs.db")

    def step(scope: Any) -> None:
        scope.n = 1

    result = flow_chart("Step", step, "step").build().run(store=store)
    assert list(store.get(result.run_id).commit_log) == list(result.commit_log)
    assert gc.isenabled()
    with pytest.raises(RunNotFoundError, match="no run 'missing'"):
        store.get("missing")
    assert gc.isenabled()


ROW_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e16, 1e-7, 1e-5, -0.0, 0.1, 5e-324]),
    st.text(),
    st.sampled_from(["\ud800", "a\udfffb", "\x7f", "\u2028", '\\"', "\x00\x08"]),
)
ROW_VALUES = st.recursive(
    ROW_SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(ROW_VALUES, min_size=1, max_size=5))
def test_property_a_stored_row_is_the_one_codec_s_text(values: list[Any]) -> None:
    """A commit row and an input column, written without the encoder's cycle bookkeeping, are
    ``serde.dumps``' text byte for byte (floats, ints past 64 bits, lone surrogates, non-ASCII,
    control characters), or fail as it fails; and the same with or without orjson."""

    def written(encode: Any, value: Any) -> Any:
        try:
            return encode(value)
        except ValueError as exc:
            return type(exc)

    commit = Commit(0, "Seed", "seed", "seed#0", tuple(Op(("k", str(n)), "set", v) for n, v in enumerate(values)))
    row = written(codec.encode_commit, commit)
    assert row == written(dumps, commit_data(commit))
    column = codec.encode({"values": values})
    try:
        assert column == dumps(copy_json({"values": values}))
    except NotJsonSafe:  # a lone surrogate: the column holds the value's repr, as it always did
        assert column == dumps(repr({"values": values}))
    with fastjson.stdlib_only():
        assert written(codec.encode_commit, commit) == row and codec.encode({"values": values}) == column


def test_a_conversation_seed_row_is_the_codec_s_text_and_reads_back() -> None:
    """The long row of a conversation (a seed writing 400 messages, non-ASCII among them) is
    ``serde.dumps``' text and reads back as the commit; a commit holding a cycle (no run makes
    one: values are copies) is refused, not written."""
    history = [{"role": "user", "content": f"question {n} · é"} for n in range(400)]
    commit = Commit(0, "Seed", "seed", "seed#0", (Op(("history",), "set", history),), (), ())
    row = codec.encode_commit(commit)
    assert row == dumps(commit_data(commit))
    assert codec.decode_commit(row).trace[0].value == history
    looped: list[Any] = []
    looped.append(looped)
    with pytest.raises(RecursionError):
        codec.encode_commit(Commit(0, "Seed", "seed", "seed#0", (Op(("history",), "set", looped),), (), ()))
