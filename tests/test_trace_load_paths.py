"""Trace.load's fast path (strict passes that prove the limits while they structure) and its strict
path (the limits walk, then the converter) accept the same files and refuse them with the same words."""

from __future__ import annotations

import contextlib
import copy
import json
import random
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import mutate
from trace_versions import as_version_1, as_version_2

from flowchart import Trace, flow_chart, narrative
from flowchart._core.commits import Commit
from flowchart._core.errors import CheckpointError
from flowchart._core.narrative_entry import NarrativeEntry
from flowchart._core.untrusted import MAX_DEPTH, MAX_INT_DIGITS
from flowchart._record import trace as trace_module
from flowchart._record.trace_parsed import parsed_log, parsed_trace


def _trace_dict() -> dict[str, Any]:
    """A real trace (a loop with a decider, appends and deletes, a narrative) as a dict, with a
    decision, failed attempts and a recovery written into three of its commits."""

    def work(scope: Any, ctx: Any) -> None:
        n = getattr(scope, "n", 0) + 1
        scope.n = n
        scope.items = [*getattr(scope, "items", []), {"n": n, "half": n / 2}]
        if n % 3 == 0:
            del scope.items
        if n >= 6:
            ctx.stop()

    chart = flow_chart("Work", work, "work").loop_to("work").build()
    data = chart.run(recorders=[narrative()], max_iterations=7).trace().to_dict()
    log = data["commit_log"]
    log[0]["decision"] = {"chosen": "left", "evidence": [{"rule": "r", "ok": True}]}
    log[1]["attempts"] = [{"attempt": 1, "error_type": "TimeoutError", "message": "slow"}]
    log[2]["recovers"] = "work#1"
    return data


BASE = _trace_dict()
BASE_V2 = as_version_2(BASE)
BASES = {3: BASE, 2: BASE_V2, 1: as_version_1(BASE)}


@contextlib.contextmanager
def strict_path() -> Iterator[None]:
    """Within: ``Trace.from_json`` takes the strict path (the proof of its fast path never succeeds)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trace_module, "parsed_trace", lambda _raw: None)
        yield


def _outcome(text: str) -> tuple[str, Any]:
    try:
        return "trace", Trace.from_json(text)
    except CheckpointError as exc:
        return "refused", (str(exc), exc.path, exc.detail)


def _both(text: str) -> tuple[tuple[str, Any], tuple[str, Any]]:
    fast = _outcome(text)
    with strict_path():
        return fast, _outcome(text)


def test_a_saved_trace_takes_the_fast_passes_whole() -> None:
    """A trace as ``save`` writes it is structured by the strict passes (before, every verb was
    refused by the log pass, so every commit went through the converter) and equals what the
    converter builds: commits (with a decision, attempts, a recovery) and narrative records."""
    text = json.dumps(BASE)
    data = json.loads(text)
    parts = parsed_trace(data)
    assert parts is not None and parts.commit_log is not None and parts.narrative is not None
    assert parts.commit_log == [Commit.from_dict(c) for c in BASE["commit_log"]]
    assert parts.narrative.records() == [NarrativeEntry(**r) for r in BASE_V2["narrative"]]
    plain = [c for c in BASE["commit_log"] if len(c) == 7]  # the column-wise pass: every commit alike
    assert parsed_log(json.loads(json.dumps(plain))) == [Commit.from_dict(c) for c in plain]
    assert Trace.from_json(text) == Trace.from_dict(json.loads(text))


def test_a_version_2_file_takes_the_fast_passes_and_loads_as_version_3() -> None:
    """A file written before the narrative became columns (a list of record objects) takes its
    own strict pass, loads to the same trace as today's file, and saves as today's file."""
    parts = parsed_trace(copy.deepcopy(BASE_V2))
    assert parts is not None and parts.narrative is not None
    assert parts.narrative.records() == [NarrativeEntry(**r) for r in BASE_V2["narrative"]]
    old, new = Trace.from_json(json.dumps(BASE_V2)), Trace.from_json(json.dumps(BASE))
    assert old == new == Trace.from_dict(copy.deepcopy(BASE_V2))
    assert old.version == 3 and old.to_json() == new.to_json()


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda d: d["commit_log"][3]["trace"][0].update(verb="sett"), r"\$\.commit_log\[3\]\.trace\[0\]\.verb"),
        (lambda d: d["commit_log"][3]["trace"][0].update(extra=1), r"\$\.commit_log\[3\]\.trace\[0\]"),
        (lambda d: d["commit_log"][3].update(idx=True), r"\$\.commit_log\[3\]\.idx"),
        (lambda d: d["commit_log"][3].update(reads=["n", 1]), r"\$\.commit_log\[3\]\.reads\[1\]"),
        (lambda d: d["commit_log"][1]["attempts"][0].update(attempt="1"), r"\$\.commit_log\[1\]\.attempts\[0\]"),
        (lambda d: d["narrative"]["depth"].__setitem__(2, True), r"\$\.narrative\.depth\[2\]"),
        (lambda d: d["narrative"].pop("key"), r"\$\.narrative\.key"),
        (lambda d: d["narrative"]["step_number"].__setitem__(2, "1"), r"\$\.narrative\.step_number\[2\]"),
        (lambda d: d["narrative"]["text"].append("one more"), r"\$\.narrative\.text"),
        (lambda d: d["narrative"]["type"].__setitem__(2, "poem"), r"\$\.narrative\.type\[2\]"),
        (
            lambda d: d.update(copy.deepcopy(BASE_V2), narrative=BASE["narrative"]),
            r"expected a list, got an object @ \$\.narrative$",
        ),
        (
            lambda d: d.update(copy.deepcopy(BASE_V2)) or d["narrative"][2].update(depth=True),
            r"\$\.narrative\[2\]\.depth",
        ),
        (lambda d: d.update(copy.deepcopy(BASE_V2)) or d["narrative"][2].pop("key"), r"\$\.narrative\[2\]\.key"),
        (
            lambda d: d.update(copy.deepcopy(BASE_V2)) or d["narrative"][2].update(step_number="1"),
            r"\$\.narrative\[2\]\.step_number",
        ),
        (
            lambda d: d.update(copy.deepcopy(BASE_V2)) or d["narrative"][2].update(type="poem"),
            r"\$\.narrative\[2\]\.type",
        ),
        (
            lambda d: d.update(copy.deepcopy(BASE_V2), version=1),
            r"expected a string, got an object @ \$\.narrative\[0\]",
        ),
    ],
)
def test_a_field_the_fast_passes_refuse_is_named_as_the_converter_names_it(change: Any, match: str) -> None:
    """A wrong key or type anywhere in the log or the narrative — today's columns, a version-2
    file's records, a narrative in another version's form: the fast passes give up (or the
    check after them refuses) and the refusal is the strict path's, word for word."""
    data = copy.deepcopy(BASE)
    change(data)
    fast, strict = _both(json.dumps(data))
    assert fast == strict and fast[0] == "refused"
    with pytest.raises(CheckpointError, match=match):
        Trace.from_json(json.dumps(data))


def _nest(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("where", ["op", "decision", "state"])
def test_the_depth_limit_holds_at_its_edge_in_every_free_value(where: str) -> None:
    """A value whose deepest container sits exactly at level ``MAX_DEPTH`` loads; one level more is
    refused naming where it starts to be too deep — an op's value (level 6 of the document), a
    decision (level 4), the initial state (level 2) — on both paths alike."""
    start = {"op": 6, "decision": 4, "state": 3}[where]

    def text(levels: int) -> str:
        data = copy.deepcopy(BASE)
        if where == "op":
            data["commit_log"][3]["trace"][0]["value"] = _nest(levels)
        elif where == "decision":
            data["commit_log"][0]["decision"] = {"deep": _nest(levels - 1)}
        else:
            data["initial_state"] = {"deep": _nest(levels)}
        return json.dumps(data)

    inside = MAX_DEPTH - start + 1
    fast, strict = _both(text(inside))
    assert fast == strict and fast[0] == "trace"
    fast, strict = _both(text(inside + 1))
    assert fast == strict and fast[0] == "refused"
    assert fast[1][0].startswith(f"Invalid trace: nested deeper than {MAX_DEPTH} levels @ ")


@pytest.mark.parametrize("raw", ["1e999", "NaN", "-Infinity"])
def test_a_non_finite_number_in_an_op_value_is_refused_naming_it(raw: str) -> None:
    """``1e999`` (a float that overflows), ``NaN`` and ``-Infinity`` in a commit's value are
    refused at load with their path, not loaded to fail later in a save."""
    data = copy.deepcopy(BASE)
    data["commit_log"][3]["trace"][0]["value"] = ["__HOLE__"]
    text = json.dumps(data).replace('"__HOLE__"', raw)
    with pytest.raises(CheckpointError, match=r"non-finite float .* @ \$\.commit_log\[3\]\.trace\[0\]\.value\[0\]$"):
        Trace.from_json(text)


def test_a_duplicate_key_in_a_narrative_record_is_refused() -> None:
    """``{"text": ..., "text": ...}`` in a record (version 2) or in the columns (version 3):
    refused naming the key, not last-wins."""
    text = json.dumps(BASE_V2).replace('"text": ', '"text": "x", "text": ', 1)
    with pytest.raises(CheckpointError, match=r"^Invalid trace: duplicate key 'text' .* @ \$\.narrative\[0\]\.text$"):
        Trace.from_json(text)
    text = json.dumps(BASE).replace('"text": ', '"text": [], "text": ', 1)
    with pytest.raises(CheckpointError, match=r"^Invalid trace: duplicate key 'text' .* @ \$\.narrative\.text$"):
        Trace.from_json(text)


def test_a_huge_integer_is_refused_even_when_the_interpreter_allows_it() -> None:
    """With the interpreter's digit limit switched off, a 5,000-digit integer parses — and is still
    refused at load (the fast path's proof relies on that limit, so it steps aside)."""
    data = copy.deepcopy(BASE)
    data["commit_log"][3]["trace"][0]["value"] = "__HOLE__"
    text = json.dumps(data).replace('"__HOLE__"', "9" * 5000)
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with pytest.raises(CheckpointError, match=rf"more than {MAX_INT_DIGITS} digits @ \$\.commit_log\[3\]"):
            Trace.from_json(text)
    finally:
        sys.set_int_max_str_digits(before)


@pytest.mark.parametrize("version", sorted(BASES))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_fuzz_the_fast_and_strict_paths_agree(version: int, rng: random.Random) -> None:
    """Mutated trace files of every version the loader reads (the narrative as columns, as
    records, as lines): both paths load the same trace, or refuse with the same message, path
    and detail."""
    text = mutate(BASES[version], rng)
    fast, strict = _both(text)
    assert fast == strict


def test_a_load_leaves_the_collector_on_and_an_application_s_frozen_objects_frozen() -> None:
    """The collector is held during a load and on again after it (also after a refusal); objects
    the application froze (``gc.freeze()`` before forking workers) stay frozen."""
    import gc

    text = json.dumps(BASE)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 1000
        Trace.from_json(text)
        # a frozen object may still die (its count goes down by one); an unfreeze moves them all
        assert gc.isenabled() and gc.get_freeze_count() > frozen * 0.9
    finally:
        gc.unfreeze()
    with pytest.raises(CheckpointError):
        Trace.from_json(text.replace('"version": 3', '"version": 99', 1))
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_a_version_2_narrative_is_emptied_only_once_the_whole_file_is_proven(monkeypatch: pytest.MonkeyPatch) -> None:
    """The version-2 narrative pass empties the list it proves (its dicts freed early), so it runs
    last: a file whose narrative comes before a commit log the strict pass declines (here: every
    log declined) loads through the converter with its whole narrative, not an empty one."""
    import flowchart._record.trace_parsed as passes

    data = copy.deepcopy(BASE_V2)
    text = json.dumps({"narrative": data.pop("narrative"), **data})
    monkeypatch.setattr(passes, "parsed_log", lambda _raw: None)
    loaded = Trace.from_json(text)
    assert loaded.narrative == [NarrativeEntry(**r) for r in BASE_V2["narrative"]]
