"""A lone surrogate (``"\\ud800"``) is valid JSON but not Unicode text: every loader refuses
it where it is, naming the path, so nothing loads that later fails to save, encode or show.
An escaped surrogate PAIR is an ordinary character and loads as one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowchart import Checkpoint, CheckpointError, Pausable, Trace, TraceError, flow_chart, narrative
from flowchart._core.fingerprint import spec_fingerprint


def _saved_trace(tmp_path: Path) -> Path:
    chart = flow_chart("Write", lambda scope: setattr(scope, "x", "hi"), "write").build()
    path = tmp_path / "run.trace.json"
    chart.run(recorders=[narrative()]).trace().save(path)
    return path


def test_a_lone_surrogate_in_a_traces_narrative_is_refused_by_path(tmp_path: Path) -> None:
    """The narrative's text with ``\\ud800`` is a ``TraceError`` at load (it loaded, then
    ``Trace.save`` and the viewers raised ``UnicodeEncodeError``)."""
    path = _saved_trace(tmp_path)
    text = path.read_text()
    path.write_text(text.replace("Stage 1: The process", "Stage 1: \\ud800 The process"))
    with pytest.raises(
        TraceError, match=r"^Invalid trace: a lone surrogate in a string .* @ \$\.narrative\.text\[0\]$"
    ):
        Trace.load(path)


def test_a_lone_surrogate_in_a_refingerprinted_chart_spec_is_a_trace_error(tmp_path: Path) -> None:
    """A chart spec edited to hold ``\\udc00`` (and given a matching fingerprint) is a ``TraceError``,
    not a ``UnicodeEncodeError`` from fingerprinting it."""
    path = _saved_trace(tmp_path)
    data = json.loads(path.read_text())
    data["chart_spec"]["name"] = "W"  # placeholder, replaced by the escape in the text below
    text = json.dumps(data).replace('"name": "W"', '"name": "W\\udc00"')
    path.write_text(text.replace(data["chart_fingerprint"], spec_fingerprint({**data["chart_spec"], "name": "W"})))
    with pytest.raises(TraceError, match=r"lone surrogate .* @ \$\.chart_spec\.name$"):
        Trace.load(path)


def test_a_lone_surrogate_in_a_key_is_refused_too(tmp_path: Path) -> None:
    """An object key is a string too: ``{"\\ud83d": 1}`` in the state is refused at the key."""
    path = _saved_trace(tmp_path)
    path.write_text(path.read_text().replace('"initial_state":{}', '"initial_state":{"\\ud83d":1}'))
    with pytest.raises(TraceError, match=r"lone surrogate .* @ \$\.initial_state\[key\]$"):
        Trace.load(path)


def test_a_checkpoint_with_a_lone_surrogate_is_refused_and_a_pair_loads() -> None:
    """Checkpoints go through the same policy; a surrogate pair (an emoji written escaped) loads."""
    chart = flow_chart(
        "Ask", Pausable(execute=lambda scope: {"q": "ok?"}, resume=lambda scope, given: None), "ask"
    ).build()
    text = chart.run().checkpoint.to_json()  # type: ignore[union-attr]
    with pytest.raises(CheckpointError, match=r"lone surrogate .* @ \$\.pause_data\.q$"):
        Checkpoint.from_json(text.replace('"ok?"', '"ok\\udfff"'))
    paired = Checkpoint.from_json(text.replace('"ok?"', '"ok\\ud83d\\ude00"'))
    assert paired.pause_data == {"q": "ok\U0001f600"}
    assert Checkpoint.from_json(paired.to_json()) == paired


def test_raw_surrogate_bytes_are_refused_like_escapes() -> None:
    """Bytes that encode a surrogate directly (CESU-style ``\\xed\\xa0\\x80``) are refused as well."""
    chart = flow_chart(
        "Ask", Pausable(execute=lambda scope: {"q": "ok?"}, resume=lambda scope, given: None), "ask"
    ).build()
    raw = chart.run().checkpoint.to_json().encode().replace(b'"ok?"', b'"ok\xed\xa0\x80"')  # type: ignore[union-attr]
    with pytest.raises(CheckpointError, match=r"(lone surrogate|not JSON)"):
        Checkpoint.from_json(raw)
