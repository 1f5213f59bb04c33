"""``chart.stream()`` / ``chart.astream()``: a run's recorder events, as typed values, in order.

The law under test: the events a stream yields are the ones recorders see, in the same
order, and the last one carries what ``run()`` returns.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from flowchart import FlowChart, Pausable, RunResult, decide, flow_chart, narrative, select
from flowchart.stream_events import CommitMade, DecisionMade, Final, NarrativeLine


def _seed(scope: Any) -> None:
    scope.count = 0


def _work(scope: Any, ctx: Any) -> None:
    scope.count = scope.count + 1
    ctx.emit("tick", {"n": scope.count})


def _check(scope: Any) -> Any:
    return decide(scope, [{"when": {"count": {"lt": 2}}, "then": "again", "label": "More"}], "done")


def _done(scope: Any) -> str:
    scope.finished = True
    return "finished"


def loop_chart() -> FlowChart:
    """seed → work (emits tick) → check: again ⟲ work | done."""
    return (
        flow_chart("Seed", _seed, "seed")
        .add_function("Work", _work, "work")
        .add_decider_function("Check", _check, "check")
        .add_function_branch("again", "Again", lambda scope: None, loop_to="work")
        .add_function_branch("done", "Done", _done)
        .set_default("done")
        .end()
        .build()
    )


class HookLog:
    """A recorder noting (hook, runtime stage id) for the hooks a stream turns into events."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def _note(self, hook: str, event: Any) -> None:
        self.seen.append((hook, event.ctx.runtime_stage_id))

    def on_stage_start(self, event: Any) -> None:
        self._note("stage", event)

    def on_commit(self, event: Any) -> None:
        self._note("commit", event)

    def on_decision(self, event: Any) -> None:
        self._note("decision", event)

    def on_selected(self, event: Any) -> None:
        self._note("decision", event)

    def on_emit(self, event: Any) -> None:
        self._note("emit", event)

    def on_error(self, event: Any) -> None:
        self._note("error", event)

    def on_pause(self, event: Any) -> None:
        self._note("pause", event)


def test_a_stream_yields_what_a_recorder_sees_in_the_same_order() -> None:
    """Every non-narrative stream event matches, one for one and in order, the hook a
    recorder attached to the same run received."""
    log = HookLog()
    events = list(loop_chart().stream(recorders=[log]))
    streamed = [(e.kind, e.runtime_stage_id) for e in events if e.kind not in ("narrative", "final")]
    assert streamed == log.seen
    assert [k for k, _ in streamed][:3] == ["stage", "commit", "stage"]


def test_the_streamed_narrative_is_the_runs_narrative_line_for_line() -> None:
    """The narrative lines a stream yields are exactly ``narrative().lines()`` of the same run."""
    chart = loop_chart()
    rec = narrative()
    chart.run(recorders=[rec])
    lines = [e.text for e in chart.stream() if isinstance(e, NarrativeLine)]
    assert lines == rec.lines()


def test_narrative_lines_follow_the_event_that_wrote_them() -> None:
    """A stage's narrative lines come right after its commit; a decision's condition line after it."""
    kinds = [(e.kind, e.stage_id) for e in loop_chart().stream(modes=["updates", "narrative", "decisions"])]
    first_check = kinds.index(("decision", "check"))
    assert kinds[first_check - 1] == ("commit", "check")
    assert kinds[first_check + 1] == ("narrative", "check")
    assert kinds[kinds.index(("commit", "seed")) + 1] == ("narrative", "seed")


def test_the_last_event_is_final_and_carries_the_run_result() -> None:
    """``final`` comes last, once, and its result is the RunResult run() returns (same state and log)."""
    chart = loop_chart()
    stream = chart.stream()
    events = list(stream)
    assert [e.kind for e in events].count("final") == 1
    final = events[-1]
    assert isinstance(final, Final)
    assert isinstance(final.result, RunResult)
    assert stream.result is final.result
    plain = chart.run()
    assert final.result.state == plain.state
    assert [c.to_dict() for c in final.result.commit_log] == [c.to_dict() for c in plain.commit_log]
    assert final.result.output == "finished"


def test_every_event_to_dict_is_json_and_the_same_on_every_run() -> None:
    """``to_dict()`` of every event round-trips through JSON, and two runs stream the same dicts
    (the final event's run id aside)."""

    def dicts() -> list[dict[str, Any]]:
        out = [e.to_dict() for e in loop_chart().stream()]
        out[-1].pop("run_id")
        return out

    first = dicts()
    assert json.loads(json.dumps(first)) == first
    assert dicts() == first
    assert first[-1] == {
        "kind": "final",
        "stage": "",
        "stage_id": "",
        "runtime_stage_id": "",
        "paused": False,
        "output": "finished",
    }


def test_a_commit_event_shows_the_ops_of_its_commit() -> None:
    """A commit event carries the stage's commit: its ops as path/verb/value."""
    commits = [e for e in loop_chart().stream(modes="updates") if isinstance(e, CommitMade)]
    assert commits[0].ops == [{"path": ["count"], "verb": "set", "value": 0}]
    assert commits[0].to_dict()["commit"]["trace"] == commits[0].ops


def test_a_decision_event_carries_the_chosen_branch_and_its_evidence() -> None:
    """A decider's event names the chosen branch id and carries the rule evidence."""
    decisions = [e for e in loop_chart().stream(modes="decisions") if isinstance(e, DecisionMade)]
    assert [d.chosen for d in decisions] == [("again",), ("done",)]
    rule = decisions[0].evidence["rules"][0]  # type: ignore[index]
    assert (rule["label"], rule["matched"]) == ("More", True)


def test_a_selector_decision_lists_every_selected_branch() -> None:
    """A selector streams one decision event whose ``chosen`` lists every selected branch."""
    rules = [{"when": {"x": {"gt": 1}}, "then": "a"}, {"when": {"x": {"gt": 2}}, "then": "b"}]
    chart = (
        flow_chart("Seed", lambda scope: scope.__setattr__("x", 5), "seed")
        .add_selector_function("Pick", lambda scope: select(scope, rules), "pick")
        .add_function_branch("a", "A", lambda scope: None)
        .add_function_branch("b", "B", lambda scope: None)
        .end()
        .build()
    )
    decisions = [e for e in chart.stream(modes="decisions") if e.kind == "decision"]
    assert [d.chosen for d in decisions] == [("a", "b")]


def test_ctx_emit_events_stream_as_custom_events() -> None:
    """``ctx.emit(name, payload)`` streams as an ``emit`` event (mode ``custom``) with its payload."""
    emits = [(e.name, e.payload) for e in loop_chart().stream(modes=["custom"]) if e.kind == "emit"]
    assert emits == [("tick", {"n": 1}), ("tick", {"n": 2})]


def test_modes_keep_only_their_kinds_and_always_the_end() -> None:
    """``modes=`` keeps the kinds it names (a mode or a kind name), plus final."""
    assert {e.kind for e in loop_chart().stream(modes=["custom"])} == {"emit", "final"}
    assert {e.kind for e in loop_chart().stream(modes="commit")} == {"commit", "final"}
    assert {e.kind for e in loop_chart().stream(modes=["stages", "decisions"])} == {"stage", "decision", "final"}


def test_an_unknown_mode_is_refused_naming_the_known_ones() -> None:
    """A mistyped mode is a ValueError before anything runs, listing modes and kinds."""
    with pytest.raises(ValueError, match=r"^unknown stream mode 'update': expected one of custom, decisions, "):
        loop_chart().stream(modes=["update"])


def test_an_unknown_run_option_is_refused_before_the_run() -> None:
    """``chart.stream(recorder=...)`` (a typo) is a TypeError naming the option and the known ones."""
    with pytest.raises(TypeError, match=r"^chart.stream\(\) got unknown run option\(s\) recorder: expected env, "):
        loop_chart().stream(recorder=[])


def _boom(scope: Any) -> None:
    scope.partial = 1
    raise RuntimeError("boom")


def test_a_failing_run_streams_its_events_then_raises_its_own_error() -> None:
    """A stage that raises: the stream yields the commit (with the partial write) and an
    ``error`` event, then raises the stage's error unchanged; no final event."""
    chart = flow_chart("Seed", _seed, "seed").add_function("Boom", _boom, "boom").build()
    seen: list[Any] = []
    with pytest.raises(RuntimeError, match=r"^boom$"):
        for event in chart.stream(modes="updates"):
            seen.append(event)
    assert [e.kind for e in seen] == ["commit", "commit", "error"]
    assert seen[1].ops == [{"path": ["partial"], "verb": "set", "value": 1}]
    assert seen[2].message == "RuntimeError: boom"


def _ask(scope: Any) -> Any:
    scope.asked = True
    return {"question": "Approve?"}


def test_a_paused_run_streams_the_question_then_a_final_paused_result() -> None:
    """A pause streams a ``pause`` event with the question, then ``final`` whose result is paused
    and holds the checkpoint to resume from."""
    asking = Pausable(execute=_ask, resume=lambda scope, answer: None)
    chart = flow_chart("Seed", _seed, "seed").add_pausable_function("Ask", asking, "ask").build()
    events = list(chart.stream(modes=[]))
    assert [e.kind for e in events] == ["pause", "final"]
    assert events[0].question == {"question": "Approve?"}
    assert events[1].result.paused and events[1].result.checkpoint is not None
    assert events[1].to_dict()["paused"] is True
    assert events[1].to_dict()["output"] == {"question": "Approve?"}


def test_redacted_values_are_hidden_in_streamed_commits_and_narrative() -> None:
    """With ``redaction=``, commit events and narrative lines show the placeholders, never the value."""
    from flowchart import Redaction

    chart = flow_chart("Seed", lambda scope: scope.__setattr__("ssn", "123-45-6789"), "seed").build()
    events = [e.to_dict() for e in chart.stream(redaction=Redaction(keys={"ssn"}))]
    text = json.dumps(events)
    assert "123-45-6789" not in text
    assert events[1]["commit"]["trace"][0]["value"] == "REDACTED"


def test_subflow_stages_stream_with_their_prefixed_ids() -> None:
    """Stages inside a subflow stream under ``mount/stage`` ids, between the mount's neighbours."""
    inner = flow_chart("In", lambda scope: scope.__setattr__("y", 1), "in").build()
    chart = flow_chart("Seed", _seed, "seed").add_subflow_chart_next("sf", inner, mount_name="Sub").build()
    stages = [e.stage_id for e in chart.stream(modes="stages")][:-1]
    assert stages == ["seed", "sf/in"]


async def _wait_a_little(scope: Any) -> None:
    await asyncio.sleep(0)
    scope.waited = True


def test_astream_yields_the_same_events_as_stream() -> None:
    """``async for`` over ``astream`` yields the same event dicts as the sync ``stream``."""
    chart = loop_chart()

    async def collect() -> list[dict[str, Any]]:
        return [e.to_dict() for e in [event async for event in chart.astream()]]

    asynced = asyncio.run(collect())
    synced = [e.to_dict() for e in chart.stream()]
    asynced[-1].pop("run_id")
    synced[-1].pop("run_id")
    assert asynced == synced


def test_a_chart_with_async_stages_streams_from_sync_code() -> None:
    """A chart that awaits streams through the sync iterator (its own event loop) to its final event."""
    chart = flow_chart("Seed", _seed, "seed").add_function("Wait", _wait_a_little, "wait").build()
    events = list(chart.stream(modes="updates"))
    assert [e.kind for e in events] == ["commit", "commit", "final"]
    assert events[-1].result.state == {"count": 0, "waited": True}


def test_stream_works_inside_a_running_event_loop() -> None:
    """The sync ``stream()`` called from a coroutine (a notebook, a handler) still streams an
    awaiting chart to its end, and ``astream`` shares the running loop."""
    chart = flow_chart("Seed", _seed, "seed").add_function("Wait", _wait_a_little, "wait").build()

    async def inside() -> tuple[list[str], list[str]]:
        synced = [e.kind for e in chart.stream(modes="updates")]
        asynced = [e.kind async for e in chart.astream(modes="updates")]
        return synced, asynced

    synced, asynced = asyncio.run(inside())
    assert synced == asynced == ["commit", "commit", "final"]


def test_result_before_the_end_is_refused() -> None:
    """``stream.result`` before the final event says the run has not ended."""
    from flowchart import RunError

    stream = loop_chart().stream()
    with pytest.raises(RunError, match=r"^stream.result: the run has not ended"):
        _ = stream.result
