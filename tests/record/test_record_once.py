"""What fails, pauses or is answered shows exactly once — across run, stream, a store and resume.

And a failed run's record stays a record: its stored trace is a failed run's (not a paused
one's), and undoing a failed commit on retry restores the real values the run's redaction
hid in the log.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from record_probe import CHART_RULE, SECRET, Everything, leaking, probe_agent

from flowchart import failed_checkpoint, flow_chart, narrative
from flowchart.store import MemoryStore
from flowchart.store.export import record_trace
from governance import check_in_approved

MESSAGE = "KABOOM-7"


def _boom(scope: Any) -> None:
    raise ValueError(MESSAGE)


def _failing_chart() -> Any:
    inner = flow_chart("In", lambda scope: setattr(scope, "a", 1), "in").add_function("Boom", _boom, "boom").build()
    return (
        flow_chart("A", lambda scope: setattr(scope, "x", 1), "a")
        .add_subflow_chart_next("sf", inner, mount_name="Sub")
        .build()
    )


def _count(value: Any) -> int:
    return json.dumps(value, ensure_ascii=False).count(MESSAGE)


def test_a_failure_inside_a_subflow_is_told_once_by_every_reader() -> None:
    """One ``on_error`` (at the inner stage, not again at the mount), one ``[Error]`` narrative
    line, one ``error`` stream event; the stored run's trace is failed — not paused, no
    checkpoint — and holds the error once in ``failure`` besides its narrative line."""
    seen, told, store = Everything(), narrative(), MemoryStore()
    with pytest.raises(ValueError, match=rf"^{MESSAGE}$"):
        _failing_chart().run(recorders=[seen, told], store=store, run_id="f")
    assert [hook for hook, event in seen.seen if hook == "on_error"] == ["on_error"]
    assert len([line for line in told.lines() if MESSAGE in line]) == 1
    kinds: list[str] = []
    with pytest.raises(ValueError):
        kinds.extend(e.kind for e in _failing_chart().stream() if MESSAGE in json.dumps(e.to_dict()))
    assert kinds == ["error", "narrative"]
    trace = record_trace(store.get("f"))
    assert (trace.paused, trace.checkpoint, trace.failure.runtime_stage_id) == (False, None, "sf/boom#3")
    body = {k: v for k, v in trace.to_dict().items() if k != "narrative"}
    assert _count(body) == 1 and len([line for line in trace.narrative_lines if MESSAGE in line]) == 1


def _seed(scope: Any) -> None:
    scope.ssn = SECRET


def _flaky(state: dict[str, bool]) -> Any:
    def stage(scope: Any) -> None:
        scope.tok_seen = scope.ssn  # what the re-run reads must be the real value (hidden: ^tok)
        scope.ssn = "changed"
        if state["fail"]:
            raise ValueError("not yet")

    return stage


def test_retrying_a_failed_stage_that_overwrote_a_hidden_key_restores_its_real_value() -> None:
    """The undo of a failed commit (``Checkpoint.recovery.restore``) holds the real value of a
    hidden key it overwrote — the log holds ``"REDACTED"`` — so the re-run reads the real
    value (stored ``resume_run`` and a live ``failed_checkpoint`` alike); the trace of the
    failed run and the ``on_resume`` event (its ``recovery``) still hide it."""
    state = {"fail": True}
    chart = flow_chart("Seed", _seed, "seed").add_function("Flaky", _flaky(state), "flaky").build()
    store = MemoryStore()
    with pytest.raises(ValueError):
        chart.run(store=store, run_id="r", redaction=CHART_RULE)
    with pytest.raises(ValueError) as caught:
        chart.run(redaction=CHART_RULE)
    checkpoint = failed_checkpoint(caught.value)
    assert checkpoint is not None and checkpoint.recovery is not None
    assert checkpoint.recovery.restore == {"ssn": SECRET}
    assert leaking([("failed trace", record_trace(store.get("r")).to_json())]) == []
    state["fail"] = False
    seen = Everything()
    assert chart.resume_run("r", store=store, recorders=[seen]).state == {"ssn": "changed", "tok_seen": SECRET}
    (resumed,) = [event for hook, event in seen.seen if hook == "on_resume"]
    assert resumed.recovery.restore == {"ssn": "[REDACTED]"}  # an event: shown as events show the key
    assert leaking(seen.readings()) == []
    assert chart.resume(checkpoint, redaction=CHART_RULE).state == {"ssn": "changed", "tok_seen": SECRET}


def test_a_pause_and_its_answer_are_told_once_across_run_store_and_resume() -> None:
    """An agent's check-in: one ``on_pause`` and one ``pause.request`` when it pauses, none on
    resume; the answer is one ``human_decisions`` row written by one commit, told in one
    narrative sentence; the paused call is written once and cleared once."""
    seen, store = Everything(without=("on_stage_ops",)), MemoryStore()
    agent = probe_agent(store, recorders=[seen], turns=1)
    paused = agent.run("pay")
    pauses = [hook for hook, e in seen.seen if hook == "on_pause"]
    requests = [e.name for hook, e in seen.seen if hook == "on_emit" and e.name in ("pause.request", "checkin.request")]
    assert (pauses, requests) == (["on_pause"], ["checkin.request", "pause.request"])
    seen.seen.clear()
    agent.resume_run(paused.run_id, check_in_approved(request=paused.check_in, by="alice"))
    assert [hook for hook, e in seen.seen if hook == "on_pause"] == []
    record = store.get(paused.run_id)
    writes = [c.runtime_stage_id for c in record.commit_log if "human_decisions" in c.written_keys]
    assert len(writes) == 1 and len(record.commit_log[-1].trace) > 0
    assert [line for line in record.narrative if "alice approved" in line] == ["alice approved pay(card=[REDACTED])"]
    paused_call = [
        (c.runtime_stage_id, op.verb) for c in record.commit_log for op in c.trace if op.path[0] == "paused_tool_call"
    ]
    assert [verb for _rid, verb in paused_call] == ["set", "delete"]


def test_a_stream_tells_a_pause_once() -> None:
    """A chart that pauses and an agent whose check-in pauses: one ``pause`` event each, then
    ``final``; the pause's question is the pause data (the chart's, the agent's request)."""
    from record_probe import probe_chart

    chart_kinds = [e.kind for e in probe_chart().stream(redaction=CHART_RULE)]
    agent_events = list(probe_agent(turns=1).stream("pay"))
    assert chart_kinds.count("pause") == 1 and chart_kinds[-1] == "final"
    pauses = [e for e in agent_events if e.kind == "pause"]
    assert len(pauses) == 1 and agent_events[-1].kind == "final"
    assert pauses[0].question["check_in"]["id"] == agent_events[-1].result.check_in.id
