"""One record at the centre: a run's evidence is one frozen ``Record`` — the same value from a
live result, a trace file, a stored run and an agent's snapshot — and ``record.shown()`` is the
one place its redaction is applied, giving the distinct ``ShownRecord`` every reader takes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import attrs
import pytest

from agent import Agent
from agent.providers import scripted
from flowchart import Pausable, Record, Redaction, ShownRecord, Trace, failed_run, flow_chart, narrative
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace

RULE = Redaction(keys={"ssn", "card"})


def _chart() -> Any:
    inner = flow_chart("Check", lambda scope: setattr(scope, "checked", scope.card[-4:]), "check").build()
    return (
        flow_chart("Intake", lambda scope, ctx: setattr(scope, "card", ctx.args["ssn"] + "!"), "intake")
        .add_subflow_chart_next("verify", inner, input_mapper=lambda parent: {"card": parent["card"]})
        .add_pausable_function(
            "Approve", Pausable(execute=lambda scope: {"q": "ok?"}, resume=lambda s, given: None), "approve"
        )
        .build()
    )


def test_a_result_a_trace_and_a_stored_run_are_one_record(tmp_path: Path) -> None:
    """``result.record``, ``trace.record`` (of the saved file) and ``store.get(id).record`` hold the
    same run: id, chart, commits, narrative and status; each is a frozen ``Record``."""
    store = SqliteStore(tmp_path / "runs.db")
    result = _chart().run({"ssn": "123-45-6789"}, redaction=RULE, store=store, recorders=[narrative()])
    saved = Trace.load(result.trace().save(tmp_path / "run.trace.json"))
    records = [result.record, saved.record, store.get(result.run_id).record]
    for record in records:
        assert isinstance(record, Record) and record.status == "paused"
        assert (record.run_id, record.chart_fingerprint) == (result.run_id, _chart().fingerprint)
        assert [c.runtime_stage_id for c in record.commits] == ["intake#0", "verify#1", "approve#3"]
        assert record.narrative is not None and record.narrative[0].text == "Stage 1: The process began with Intake."
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        result.record.run_id = "other"  # type: ignore[misc]


def test_shown_hides_what_the_run_hides_once_and_only_there(tmp_path: Path) -> None:
    """The record keeps the real input, starting states and checkpoint (a resume needs them);
    ``shown()`` hides them under the run's rule — input, the checkpoint's state and run input,
    each subflow's starting state — and the commits stay as the engine wrote them."""
    result = _chart().run({"ssn": "123-45-6789"}, redaction=RULE)
    record = result.record
    assert record.input == {"ssn": "123-45-6789"}
    assert record.checkpoint is not None and record.checkpoint.shared_state["card"] == "123-45-6789!"
    shown = record.shown()
    assert isinstance(shown, ShownRecord) and not isinstance(shown, Record)
    assert shown.input == {"ssn": "REDACTED"}
    assert shown.checkpoint is not None
    assert shown.checkpoint.shared_state["card"] == "REDACTED" and shown.checkpoint.run_input == {"ssn": "REDACTED"}
    assert [sub.initial_state for sub in shown.subflows.values()] == [{"card": "REDACTED"}]
    assert shown.commits == record.commits and shown.commits[0].trace[0].value == "REDACTED"
    assert record.checkpoint.shared_state["card"] == "123-45-6789!"  # the record itself is untouched


def test_showing_a_shown_record_again_changes_nothing(tmp_path: Path) -> None:
    """A trace file holds a shown record: its record shown again writes the same file."""
    text = _chart().run({"ssn": "1"}, redaction=RULE, recorders=[narrative()]).trace().to_json()
    trace = Trace.from_json(text)
    assert Trace.of(trace.record.shown()).to_json() == text


def test_a_stored_runs_trace_is_its_record_shown(tmp_path: Path) -> None:
    """``record_trace`` of a stored run and the live result's trace tell the same record: same log,
    same hidden input, same narrative (the store built a stand-in result before)."""
    store = SqliteStore(tmp_path / "runs.db")
    result = _chart().run({"ssn": "123-45-6789"}, redaction=RULE, store=store, recorders=[narrative()])
    live, stored = result.trace().to_dict(), record_trace(store.get(result.run_id)).to_dict()
    for key in ("run_id", "chart_spec", "run_input", "commit_log", "narrative", "redacted_paths"):
        assert stored[key] == live[key], key
    assert stored["checkpoint"]["shared_state"]["card"] == "REDACTED"


def test_a_failed_runs_shown_record_tells_the_failure_once_without_a_checkpoint(tmp_path: Path) -> None:
    """A stored failed run keeps its retry point, but its shown record carries the failure and no
    checkpoint: a failure is not a pause."""

    def boom(scope: Any) -> None:
        raise RuntimeError("ledger closed")

    store = SqliteStore(tmp_path / "runs.db")
    chart = flow_chart("Intake", lambda scope: setattr(scope, "x", 1), "intake").add_function("Boom", boom, "boom")
    with pytest.raises(RuntimeError, match=r"^ledger closed$") as caught:
        chart.build().run(store=store, run_id="f1")
    stored = store.get("f1").record
    assert stored.status == "failed" and stored.checkpoint is not None
    shown = stored.shown()
    assert shown.checkpoint is None and shown.failure is not None and shown.failure.message == "ledger closed"
    found = failed_run(caught.value)
    assert found is not None and found[0].record.status == "failed"


def test_an_agents_snapshot_is_its_last_record() -> None:
    """``agent.last_snapshot().record`` is the record of the agent's last run."""
    agent = Agent.create(provider=scripted(["hello"]), model="m").build()
    assert agent.run("hi") == "hello"
    record = agent.last_snapshot().record
    assert isinstance(record, Record) and record.final_state["final_content"] == "hello"


def test_mypy_refuses_a_reader_handed_the_raw_record(tmp_path: Path) -> None:
    """A reader typed to take a ``ShownRecord`` cannot be handed a ``Record``: the type checker
    says so (a leak is a type error before it is a test failure)."""
    source = tmp_path / "reader.py"
    source.write_text(
        textwrap.dedent(
            """
            from flowchart import Record, ShownRecord

            def read(shown: ShownRecord) -> str:
                return shown.run_id

            def leak(record: Record) -> str:
                return read(record)

            def fine(record: Record) -> str:
                return read(record.shown())
            """
        )
    )
    # in a process of its own: mypy raises the interpreter's recursion limit where it runs
    found = subprocess.run(
        [sys.executable, "-m", "mypy", str(source), "--no-incremental", "--follow-imports=silent"],
        capture_output=True,
        text=True,
        check=False,
        cwd=Path(__file__).resolve().parents[2],
    )
    out = found.stdout
    assert found.returncode == 1, out
    assert 'Argument 1 to "read" has incompatible type "Record"; expected "ShownRecord"' in out
    assert out.count("error:") == 1


def test_a_trace_and_a_stored_run_are_frozen_values(tmp_path: Path) -> None:
    """A ``Trace`` (loaded or made) and a ``RunRecord`` refuse rebinding a field (they were
    mutable before: ``trace.run_id = ...`` silently changed the file a reader would save); a
    changed copy is made with ``attrs.evolve``, and a loaded trace's lazily built narrative
    still reads the same records."""
    store = SqliteStore(tmp_path / "runs.db")
    result = _chart().run({"ssn": "123-45-6789"}, redaction=RULE, store=store, recorders=[narrative()])
    saved = Trace.load(result.trace().save(tmp_path / "run.trace.json"))
    stored = store.get(result.run_id)
    for value, field in ((result.trace(), "run_id"), (saved, "narrative"), (stored, "narrative_records")):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(value, field, None)
    assert attrs.evolve(saved, run_id="copy").narrative == saved.narrative == result.trace().narrative
