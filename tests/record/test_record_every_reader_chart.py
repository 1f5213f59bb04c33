"""Every reader of a chart run hides what the run's redaction hides.

The probe (``record_probe``): a chart with a decider, a subflow fed the hidden keys, a loop
and a pausable stage writes ``SECRET`` under a hidden key, a key a pattern hides and a hidden
field; the run is recorded live and in a SQLite store, resumed from the store, and read
through every reader the project has. The secret shows only where it is documented to:
the checkpoint (a resume token, docs/pause-resume.md) and the store's raw columns a resume
needs (the input, the checkpoint).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from record_probe import CHART_RULE, SECRET, Everything, cli, leaking, probe_chart, stored_rows

from flowchart import Redaction, causal_chain, flow_chart, narrative
from flowchart import cli as flowchart_cli
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace

#: what the store keeps raw, documented: a paused run's checkpoint resumes it (docs/pause-resume.md)
RAW_COLUMNS = ("runs.checkpoint",)


def test_the_run_start_event_shows_the_input_as_the_rule_shows_it() -> None:
    """``on_run_start``'s payload (the run input) carries a hidden input key as ``[REDACTED]``;
    a run that hides nothing hands over the input itself."""
    starts: list[Any] = []

    class Starts:
        def on_run_start(self, event: Any) -> None:
            starts.append(event.payload)

    chart = flow_chart("Echo", lambda scope, ctx: None, "echo").build()
    chart.run({"ssn": SECRET, "name": "Ann"}, recorders=[Starts()], redaction=Redaction(keys=["ssn"]))
    chart.run({"ssn": SECRET}, recorders=[Starts()])
    assert starts == [{"ssn": "[REDACTED]", "name": "Ann"}, {"ssn": SECRET}]


def test_a_stored_subflows_initial_state_is_stored_redacted(tmp_path: Path) -> None:
    """The subflow logs a store keeps (``segments.subflows``) hold the subflow's mapped input
    under the run's rule, as a trace does: no column but the resume token holds the secret."""
    store = SqliteStore(tmp_path / "runs.db")
    probe_chart().run(store=store, run_id="r", redaction=CHART_RULE)
    (sub,) = store.get("r").subflows.values()
    assert sub.initial_state == {"ssn": "REDACTED", "token": "REDACTED"}
    assert leaking(stored_rows(tmp_path / "runs.db", skip=RAW_COLUMNS)) == []


def _traces(tmp_path: Path, store: SqliteStore, live: Any) -> dict[str, Path]:
    paths = {"live paused": tmp_path / "paused.json", "stored": tmp_path / "stored.json"}
    live.trace().save(paths["live paused"])
    record_trace(store.get("r")).save(paths["stored"])
    return paths


@pytest.mark.parametrize("ops", [False, True], ids=["read-write-events", "stage-ops"])
def test_no_reader_of_a_chart_run_shows_a_hidden_value(tmp_path: Path, ops: bool) -> None:
    """Commit log, narrative (lines, entries, records, per step), every recorder hook, the
    trace (live, stored, saved files), causal chains, the stream's events, every stored
    column but the checkpoint, and the ``flowchart`` commands (narrate, replay, why, diff,
    view's HTML) — across a run that pauses and its resume from the store."""
    store = SqliteStore(tmp_path / "runs.db")
    chart = probe_chart()
    seen, told = Everything(without=() if ops else ("on_stage_ops",)), narrative()
    paused = chart.run(recorders=[told, seen], redaction=CHART_RULE, store=store, run_id="r")
    assert paused.paused and paused.state["ssn"] == SECRET  # the live state keeps the real value
    readings: list[tuple[str, Any]] = [
        ("commit log", [c.to_dict() for c in paused.commit_log]),
        ("narrative lines", told.lines()),
        ("narrative entries", told.entries()),
        ("narrative records", [repr(r) for r in told.records()]),
        *((f"step {c.runtime_stage_id}", repr(told.entries_for_step(c.runtime_stage_id))) for c in paused.commit_log),
        ("causal chain", causal_chain(paused.commit_log, "seen").format()),
        ("trace", paused.trace().to_json()),
        ("trace why", paused.trace().why("seen").format()),
    ]
    resumed_told = narrative()
    done = chart.resume_run("r", {"ok": True}, recorders=[resumed_told, seen], store=store)  # the stored rule
    readings += [
        ("resumed narrative", resumed_told.lines()),
        ("resumed commit log", [c.to_dict() for c in done.commit_log]),
        ("resumed trace", done.trace().to_json()),
        *seen.readings(),
        *stored_rows(tmp_path / "runs.db", skip=RAW_COLUMNS),
        *((f"stream {e.kind}", e.to_dict()) for e in chart.stream(redaction=CHART_RULE) if e.kind != "final"),
    ]
    for name, path in _traces(tmp_path, store, paused).items():
        page = tmp_path / f"{name}.html"
        readings += [
            (f"{name} file", path.read_text(encoding="utf-8")),
            (f"{name} narrate", cli(flowchart_cli.main, "narrate", str(path))),
            (f"{name} replay", cli(flowchart_cli.main, "replay", str(path))),
            (f"{name} why", cli(flowchart_cli.main, "why", str(path), "seen")),
            (f"{name} diff", cli(flowchart_cli.main, "diff", str(path), "-1", "3")),
            (f"{name} view", cli(flowchart_cli.main, "view", str(path), "-o", str(page)) + page.read_text("utf-8")),
        ]
    assert leaking(readings) == []
    assert SECRET in paused.checkpoint.to_json()  # the resume token keeps it, as documented


def test_a_fork_childs_hidden_key_is_hidden_where_a_later_stage_reads_runs() -> None:
    """Fork children write into ``runs/<child>``, map items into ``runs/<map>/<index>``; a later
    stage that reads ``runs`` whole gets a read event (``on_read``, ``on_stage_ops``) whose value
    hides each child's hidden keys and fields, as the commit log does (``redacted: True``)."""

    def secret(scope: Any) -> None:
        scope.ssn = SECRET
        scope.profile = {"card": SECRET, "name": "Ann"}

    def item(scope: Any, ctx: Any) -> None:
        scope.ssn = f"{SECRET}-{ctx.item}"

    def read_runs(scope: Any) -> None:
        _ = scope.runs

    chart = (
        flow_chart("Seed", lambda scope: setattr(scope, "items", [1]), "seed")
        .add_list_of_function([("x", "X", secret), ("y", "Y", lambda scope: setattr(scope, "n", 1))])
        .add_map("Map", item, "m", items=lambda state: state["items"], into="out")
        .add_function("After", read_runs, "after")
        .build()
    )
    for without in (("on_stage_ops",), ()):
        seen = Everything(without=without)
        chart.run(recorders=[seen], redaction=CHART_RULE)
        assert leaking(seen.readings()) == []
    reads: list[Any] = []

    class Reads:
        def on_read(self, event: Any) -> None:
            if event.key == "runs":
                reads.append((event.value, event.redacted))

    chart.run(recorders=[Reads()], redaction=CHART_RULE)
    x = {"ssn": "[REDACTED]", "profile": {"card": "[REDACTED]", "name": "Ann"}}
    assert reads == [({"x": x, "y": {"n": 1}, "m": {"0": {"ssn": "[REDACTED]"}}}, True)]
