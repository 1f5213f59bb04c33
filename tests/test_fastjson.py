"""The ``[fast]`` extra: with orjson installed, trace files are byte-identical and load (or are
refused) exactly as with the standard library alone; ``fastjson.stdlib_only()`` is the seam that
takes the standard path without uninstalling anything."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutate
from trace_versions import as_version_1, as_version_2

from flowchart import Trace, flow_chart, narrative
from flowchart._core import fastjson
from flowchart._core.commits import Commit, Op
from flowchart._core.errors import CheckpointError
from flowchart._core.narrative_columns import NarrativeColumns
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.serde import dumps
from flowchart._record.trace import CONVERTER
from flowchart._record.trace_codec import log_chunks

orjson = pytest.importorskip("orjson", reason="the [fast] extra (orjson) is part of the dev extra")


def _trace(passes: int = 6) -> Trace:
    def work(scope: Any, ctx: Any) -> None:
        n = getattr(scope, "n", 0) + 1
        scope.n = n
        scope.label = f'pass {n}: é \u2028 \x01 "q" \\ 😀'
        scope.items = [*getattr(scope, "items", []), {"n": n, "big": 2**63 + n}]
        if n % 3 == 0:
            del scope.items
        if n >= passes:
            ctx.stop()

    chart = flow_chart("Work", work, "work").loop_to("work").build()
    return chart.run(recorders=[narrative()], max_iterations=passes + 1).trace()


def _text(trace: Trace) -> str:
    return trace.to_json()


# -- the seam -----------------------------------------------------------------------------------------
def test_stdlib_only_switches_orjson_off_and_back() -> None:
    """Inside ``stdlib_only()`` nothing uses orjson (as if it were not installed); after it, orjson is used again."""
    assert fastjson.available()
    assert fastjson.dumps_exact([1, "a"]) == b'[1,"a"]'
    with fastjson.stdlib_only():
        assert not fastjson.available()
        assert fastjson.dumps_exact([1, "a"]) is None
        assert fastjson.loads_canonical(b'[1,"a"]') is None
    assert fastjson.loads_canonical(b'[1,"a"]\n') == ([1, "a"],)


# -- writing: byte identity ---------------------------------------------------------------------------
def test_a_saved_trace_is_byte_identical_with_and_without_orjson(tmp_path: Any) -> None:
    """The same trace saved with orjson and with the standard library alone: the same bytes
    (non-ASCII, U+2028, control characters, quotes, an emoji, ints past 2**63); and orjson wrote
    the commit log and the narrative (the fast path was taken, not skipped)."""
    trace = _trace()
    fast, slow = tmp_path / "fast.json", tmp_path / "slow.json"
    trace.save(fast)
    with fastjson.stdlib_only():
        trace.save(slow)
    assert fast.read_bytes() == slow.read_bytes()
    pieces = list(trace._chunks())
    assert sum(isinstance(p, bytes) for p in pieces) >= 2, "orjson wrote no piece"


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e16, 1e15, 1e-7, 1e-5, 1e-4, 0.0001, -0.0, 1e22, 5e-324, 1.7976931348623157e308, 0.1]),
    st.text(),
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x3F)),
    st.sampled_from(["\ud800", "a\udfffb", "\x7f", "\u2028\u2029", '\\"', "\x00\x08\x0c"]),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4)),
    max_leaves=12,
)


def _stdlib_or_error(data: Any) -> Any:
    try:
        return dumps(data).encode("utf-8")
    except (ValueError, TypeError) as exc:  # UnicodeEncodeError is a ValueError
        return type(exc)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(JSON_VALUES, min_size=1, max_size=6), decision=st.none() | JSON_VALUES)
def test_property_orjson_pieces_are_the_standard_library_s_bytes(values: list[Any], decision: Any) -> None:
    """Random commit values (floats such as 1e16 and 1e-7, -0.0, ints past 64 bits, unicode,
    control characters, lone surrogates): the commit log's text with orjson equals the
    standard library's byte for byte, or both fail alike; ``dumps_exact`` never returns other
    bytes than ``serde.dumps``."""
    commits = [
        Commit(n, "S", "s", f"s#{n}", (Op(("k", str(n)), "set", v),), ("k",), (), {"d": decision} if n == 0 else None)
        for n, v in enumerate(values)
    ]

    def text() -> Any:
        try:
            return b"".join(p if isinstance(p, bytes) else p.encode("utf-8") for p in log_chunks(commits))
        except (ValueError, TypeError) as exc:
            return type(exc)

    fast = text()
    with fastjson.stdlib_only():
        assert text() == fast
    for value in (values, {"v": values, "d": decision}):
        exact = fastjson.dumps_exact(value)
        assert exact is None or exact == _stdlib_or_error(value)


def test_floats_and_odd_types_are_left_to_the_standard_library() -> None:
    """orjson prints 1e-05 as 0.00001 and NaN as null, and writes datetimes that ``json``
    refuses: data with any float or such a value is not orjson's to write."""
    import datetime

    for value in ([1e-05], [1.5e-7], [float("nan")], [0.5], [datetime.date(2026, 1, 1)], [{1: "int key"}]):
        assert fastjson.dumps_exact(value) is None
    assert fastjson.dumps_exact([{"a": [1, "é", None, True]}]) == dumps([{"a": [1, "é", None, True]}]).encode()


def test_narrative_columns_write_what_the_converter_writes() -> None:
    """The narrative is written as columns without the converter: column ``f`` holds field ``f``
    of each record as the converter unstructures it, for records with every field set and none;
    a record holding a non-JSON value is not plain (left to ``json``, never to orjson)."""
    records = [
        NarrativeEntry("step", 1, "Step 1: Read x", "S", "s", "s#0", "sf", "x", 1),
        NarrativeEntry("stage", 0, "Stage 1"),
    ]
    columns = NarrativeColumns.of_records(records)
    unstructured = CONVERTER.unstructure(records, list[NarrativeEntry])
    assert columns.plain()
    assert columns.data() == {name: [r[name] for r in unstructured] for name in unstructured[0]}
    assert list(columns.data()) == list(unstructured[0])  # the keys in the records' field order
    assert not NarrativeColumns.of_records([NarrativeEntry("note", 0, "x", key=1.5)]).plain()  # type: ignore[arg-type]


# -- reading: the same trace, the same refusals -------------------------------------------------------
def _outcome(text: str | bytes, *, stdlib: bool) -> tuple[str, Any]:
    try:
        if stdlib:
            with fastjson.stdlib_only():
                return "trace", Trace.from_json(text)
        return "trace", Trace.from_json(text)
    except CheckpointError as exc:
        return "refused", (str(exc), exc.path, exc.detail)


def test_a_saved_trace_is_read_by_orjson_and_equals_the_standard_reading(tmp_path: Any) -> None:
    """A file ``save`` wrote is taken by orjson (it writes it back byte for byte) and loads to the
    same trace as the standard path."""
    trace = _trace()
    path = tmp_path / "t.json"
    trace.save(path)
    raw = path.read_bytes()
    assert fastjson.loads_canonical(raw) is not None
    assert _outcome(raw, stdlib=False) == _outcome(raw, stdlib=True) == ("trace", trace)


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (lambda t: t.replace('"stage_id":', '"stage_id":"x","stage_id":', 1), r"duplicate key 'stage_id'"),
        (lambda t: t.replace('"idx":0', '"idx":0,"idx":0', 1), r"duplicate key 'idx'"),
        (
            lambda t: t.replace('"version":3', '"version":3,"version":2', 1),
            r"duplicate key 'version' .* @ \$\.version$",
        ),
        (lambda t: t.replace('"value":1', '"value":1e999', 1), r"non-finite float \(inf\)"),
        (lambda t: t.replace('"value":1', '"value":NaN', 1), r"non-finite float \(nan\)"),
    ],
)
def test_a_damaged_compact_file_is_refused_as_without_orjson(damage: Any, match: str) -> None:
    """Compact text with a repeated key (orjson would keep the last) or a non-finite number:
    refused with the standard path's words, orjson installed or not."""
    text = damage(_text(_trace()))
    fast, slow = _outcome(text.encode(), stdlib=False), _outcome(text.encode(), stdlib=True)
    assert fast == slow and fast[0] == "refused"
    with pytest.raises(CheckpointError, match=match):
        Trace.from_json(text.encode())


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.replace(":", ": ", 3),  # whitespace
        lambda t: t.replace('"value":1', '"value":1.0e0', 1),  # a number in another form
        lambda t: t.replace('"value":1', '"value":10000000000000000000000', 1),  # past 64 bits
        lambda t: t.replace('"Work"', '"\\u0057ork"', 1),  # an escape the writer would not write
        lambda t: t.replace('"value":1', '"value":1e-05', 1),  # a float orjson prints another way
    ],
)
def test_non_canonical_text_takes_the_standard_path_and_reads_the_same(change: Any) -> None:
    """Text the writer would not have written is not orjson's to read: the standard path reads
    it, to the same trace (or the same refusal) as without orjson."""
    raw = change(_text(_trace())).encode()
    assert fastjson.loads_canonical(raw) is None
    assert _outcome(raw, stdlib=False) == _outcome(raw, stdlib=True)


def _compact(rng: random.Random, version: int = 3) -> bytes:
    """A mutated trace (of file ``version``) as compact text (the form orjson may read), sometimes damaged as text."""
    data = json.loads(_text(_trace(4)))
    text = mutate({3: data, 2: as_version_2(data), 1: as_version_1(data)}[version], rng)
    try:
        text = dumps(json.loads(text))
    except (ValueError, RecursionError):
        return text.encode("utf-8", "surrogatepass")
    damage = rng.choice(
        [None, '"x":1,"x":2', '"x":1e999', '"x":-0', '"x":1E5', '"x":"\\u00e9"', '"x":99999999999999999999']
    )
    opens = [i for i, c in enumerate(text) if c == "{" and text[i + 1 : i + 2] != "}"]
    if damage is not None and opens:  # into a random object, not only the top one
        at = rng.choice(opens) + 1
        text = text[:at] + damage + "," + text[at:]
    return text.encode("utf-8", "surrogatepass")


@pytest.mark.parametrize("version", [1, 2, 3])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_compact_traces_load_the_same_with_and_without_orjson(version: int, rng: random.Random) -> None:
    """Mutated compact trace files of every version the loader reads (the narrative as columns,
    records or lines): orjson's path and the standard one load the same trace or refuse with
    the same message, path and detail."""
    raw = _compact(rng, version)
    assert _outcome(raw, stdlib=False) == _outcome(raw, stdlib=True)


# -- the proof: plain() -------------------------------------------------------------------------------
def _plain_by_definition(data: Any, depth: int = 0) -> bool:
    """``fastjson.plain`` as its docstring defines it, one value at a time (the reference)."""
    kind = type(data)
    if kind not in (dict, list, tuple):
        return kind in (str, int, bool, type(None))
    if depth >= 250:
        return False
    if kind is dict and not all(type(k) is str for k in data):
        return False
    return all(_plain_by_definition(v, depth + 1) for v in (data.values() if kind is dict else data))


class _Text(str):
    """A str subclass: not exactly a str, so not plain."""


ODD = st.one_of(
    st.sampled_from([1.5, 1e-05, _Text("x"), {1: "int key"}, {"s": {1, 2}}, b"bytes"]),
    st.tuples(st.integers(), st.text(max_size=3)),
)
MIXED = st.recursive(
    st.one_of(SCALARS, ODD),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=5), inner, max_size=4), st.tuples(inner, inner)
    ),
    max_leaves=16,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=MIXED)
def test_property_plain_is_its_definition(data: Any) -> None:
    """Random values mixing plain ones with floats, str subclasses, int keys, sets, bytes and
    tuples at any depth: ``plain`` (walked a level at a time) says what the one-value-at-a-time
    definition says."""
    assert fastjson.plain(data) == _plain_by_definition(data)


def test_plain_refuses_a_cycle_and_what_is_nested_too_deep() -> None:
    """A list holding itself, and plain lists nested past the limit, are not plain; nested just
    within it, they are."""
    cycle: list[Any] = []
    cycle.append(cycle)
    assert not fastjson.plain(cycle)

    def nested(levels: int) -> list[Any]:
        value: list[Any] = []
        for _ in range(levels - 1):
            value = [value]
        return value

    assert fastjson.plain(nested(250)) and not fastjson.plain(nested(251))


def _calls_made(work: Any) -> int:
    """The Python and C calls ``work()`` made, as ``sys.setprofile`` counts them (the collector
    held off: a finalizer of an earlier test's garbage would run inside ``work`` and count)."""
    import gc
    import sys

    calls = [0]

    def count(_frame: Any, event: str, _arg: Any) -> None:
        if event in ("call", "c_call"):
            calls[0] += 1

    gc.collect()
    was_on = gc.isenabled()
    gc.disable()
    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
        if was_on:
            gc.enable()
    return calls[0]


def _history(turns: int) -> list[dict[str, Any]]:
    """A conversation's history of ``turns`` turns: four messages a turn, as C1000 sends."""
    out: list[dict[str, Any]] = []
    for n in range(1, turns + 1):
        call = {"id": f"t{n}", "name": "lookup", "args": {"q": f"question {n}"}}
        out += [
            {"role": "user", "content": f"question {n}"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": f"result for question {n}", "tool_call_id": f"t{n}", "tool_name": "lookup"},
            {"role": "assistant", "content": f"found result for question {n}"},
        ]
    return out


def test_plain_makes_the_same_calls_for_a_long_history_as_for_a_short_one() -> None:
    """The proof that lets orjson write a stored commit walks a level at a time in C: proving a
    1,000-turn history makes as many calls as proving a 3-turn one (no call per message), so
    the proof costs what the values do, not a Python step each."""
    short, long = _history(3), _history(1000)
    assert fastjson.plain(short) and fastjson.plain(long)
    assert _calls_made(lambda: fastjson.plain(long)) == _calls_made(lambda: fastjson.plain(short))
