"""``Trace.load`` holds the file once: the standard path decodes the bytes and lets them go
before the parse; orjson reads only texts up to ``fastjson.READ_MAX`` (its parse holds the text,
its own copy and the values at once). ``Trace.save`` holds the cycle collector while it writes."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import attrs
import pytest

from flowchart import Trace, flow_chart, narrative
from flowchart._core import fastjson
from flowchart._core.errors import CheckpointError
from flowchart._core.untrusted import decoded


def _big_trace(passes: int = 600) -> Trace:
    pad = "x" * 2000

    def work(scope: Any, ctx: Any) -> None:
        scope.n = getattr(scope, "n", 0) + 1
        scope.blob = f"{scope.n:06d}{pad}"
        if scope.n >= passes:
            ctx.stop()

    chart = flow_chart("Work", work, "work").loop_to("work").build()
    return chart.run(recorders=[narrative()], max_iterations=passes + 1).trace()


def _peak_over_kept(path: Path) -> tuple[int, Trace]:
    """Bytes the load held at its peak beyond what the loaded trace keeps (after a first load,
    which builds what the converter builds once)."""
    Trace.load(path)
    tracemalloc.start()
    try:
        trace = Trace.load(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - kept, trace


@pytest.mark.parametrize("orjson_installed", [False, True], ids=["json", "orjson past READ_MAX"])
def test_a_big_file_is_held_once_while_it_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, orjson_installed: bool
) -> None:
    """A 1.7 MB trace (one byte a character): beyond what the trace keeps, the load holds the text
    once and the parsed values it frees at its peak (1.4–1.6× the file) — not the bytes and the
    text together (2.2× before) — and with orjson installed a file past ``READ_MAX`` takes the
    same path, to the same trace."""
    path = _big_trace().save(tmp_path / "big.json")
    size = path.stat().st_size
    assert size > 1_500_000
    monkeypatch.setattr(fastjson, "READ_MAX", size - 1)  # the file is past it
    if orjson_installed:
        pytest.importorskip("orjson")
        held, trace = _peak_over_kept(path)
    else:
        with fastjson.stdlib_only():
            held, trace = _peak_over_kept(path)
    assert held < 1.85 * size, f"held {held:,} bytes beyond the trace for a {size:,}-byte file"
    assert trace == Trace.from_dict(json.loads(path.read_text(encoding="utf-8")))


def test_orjson_reads_up_to_read_max_and_no_further(monkeypatch: pytest.MonkeyPatch) -> None:
    """``loads_canonical`` reads a canonical text of ``READ_MAX`` bytes and steps aside for one byte more."""
    pytest.importorskip("orjson")
    text = json.dumps(["x" * 100], separators=(",", ":")).encode()
    monkeypatch.setattr(fastjson, "READ_MAX", len(text))
    assert fastjson.loads_canonical(text) == (["x" * 100],)
    monkeypatch.setattr(fastjson, "READ_MAX", len(text) - 1)
    assert fastjson.loads_canonical(text) is None


@pytest.mark.parametrize(
    "raw",
    [
        '{"a": "é"}'.encode(),
        b"\xef\xbb\xbf" + b'{"a": 1}',  # a UTF-8 byte order mark
        '{"a": "ü"}'.encode("utf-16"),
        b'{"a": "\\ud800"}',
    ],
    ids=["utf-8", "utf-8 with a BOM", "utf-16", "an escaped lone surrogate"],
)
def test_decoded_is_the_text_json_loads_parses(raw: bytes) -> None:
    """``untrusted.decoded`` decodes as ``json.loads`` does bytes (the encoding detected, lone
    surrogates kept): parsing its text gives what parsing the bytes gives."""
    text = decoded(raw)
    assert isinstance(text, str) and json.loads(text) == json.loads(raw)


def test_a_file_that_is_not_utf_8_is_refused_as_before(tmp_path: Path) -> None:
    """Bytes that are not text in their detected encoding stay bytes, and the parse refuses them
    with its own words, orjson installed or not."""
    path = tmp_path / "bad.json"
    path.write_bytes(b'{"a": "\xff"}')
    assert decoded(path.read_bytes()) == path.read_bytes()
    with pytest.raises(CheckpointError, match=r"^Invalid trace: not JSON \('utf-8' codec can't decode byte 0xff"):
        Trace.load(path)
    with fastjson.stdlib_only(), pytest.raises(CheckpointError, match=r"^Invalid trace: not JSON \('utf-8' codec"):
        Trace.load(path)


def test_a_save_runs_no_collection_and_leaves_the_collector_as_it_was(tmp_path: Path) -> None:
    """Writing a trace makes a dict per commit and per op and frees them (no cycle): the cycle
    collector is held meanwhile — no collection starts during a save of a 600-commit trace
    (each used to walk every object the process holds) — and is on again after it, also after
    a save that fails; held by the application, it stays held."""
    trace = _big_trace()
    started: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(count)
    try:
        trace.save(tmp_path / "t.json")
        trace.to_json()
    finally:
        gc.callbacks.remove(count)
    assert started == [] and gc.isenabled()
    trace = attrs.evolve(trace, initial_state={"bad": float("nan")})
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        trace.save(tmp_path / "t.json")
    assert gc.isenabled()
    gc.disable()
    try:
        trace = attrs.evolve(trace, initial_state={})
        trace.save(tmp_path / "t.json")
        assert not gc.isenabled()
    finally:
        gc.enable()
