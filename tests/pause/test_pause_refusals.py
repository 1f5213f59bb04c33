"""What a pause or a resume refuses, and when: before anything runs, naming what is wrong.

A checkpoint from another chart, a frame that names a stage the chart does not have (or
has as another kind), pause data that is not JSON-safe, two fork children pausing at
once — each is refused with an error that names the stage or field, and no stage body
runs on a refused resume.
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import pause_charts
import pytest

from flowchart import Checkpoint, CheckpointError, Pausable, Redaction, RunError, flow_chart


def checkpoint_of(chart: str) -> Checkpoint:
    """The first checkpoint of ``pause_charts.CHARTS[chart]``."""
    result = pause_charts.CHARTS[chart]([]).run()
    assert result.checkpoint is not None
    return result.checkpoint


def test_a_checkpoint_from_another_chart_is_refused_naming_both_fingerprints() -> None:
    """Resuming on a chart of another structure is refused before any stage runs."""
    cp = checkpoint_of("linear")
    calls: list[str] = []
    other = pause_charts.twice(calls)
    with pytest.raises(CheckpointError) as info:
        other.resume(cp, "yes")
    expected = (
        f"Checkpoint belongs to another chart: its fingerprint is {cp.chart_fingerprint[:16]}… "
        f"but this chart's is {other.fingerprint[:16]}…; resume it on the chart that paused "
        "(same stages, same structure)"
    )
    assert str(info.value) == expected
    assert info.value.path == "$.chart_fingerprint"
    assert calls == []


def test_resume_needs_a_checkpoint_object() -> None:
    """A dict or JSON text is not a checkpoint: load it with ``Checkpoint.from_json`` first."""
    chart = pause_charts.linear([])
    cp = checkpoint_of("linear")
    for wrong in (cp.to_dict(), cp.to_json()):
        with pytest.raises(CheckpointError, match=r"^resume\(\) needs a Checkpoint \(e\.g\. Checkpoint\.from_json"):
            chart.resume(wrong, "yes")  # type: ignore[arg-type]


def edited(chart: str, change: Any) -> Checkpoint:
    """A checkpoint of ``chart`` loaded back after ``change(data)`` edited its dict."""
    data = checkpoint_of(chart).to_dict()
    change(data)
    return Checkpoint.from_dict(data)


def set_frame(index: int, **fields: Any) -> Any:
    """An edit that sets ``fields`` of frame ``index`` (and the top-level copies of the leaf's)."""

    def change(data: dict[str, Any]) -> None:
        data["frames"][index].update(fields)
        if index in (-1, len(data["frames"]) - 1):
            for key in ("stage_id", "invoker_stage_id", "continuation_stage_id"):
                if key in fields:
                    data["paused_stage_id" if key == "stage_id" else key] = fields[key]

    return change


UNKNOWN = [
    (
        "linear",
        set_frame(0, stage_id="nope"),
        "Cannot resume: paused stage 'nope' is not in chart 'Seed' @ $.frames[0].stage_id",
    ),
    (
        "decider_next",
        set_frame(0, continuation_stage_id="gone"),
        "Cannot resume: stage 'gone' is not in chart 'Seed' @ $.frames[0].continuation_stage_id",
    ),
    (
        "decider_next",
        set_frame(0, invoker_stage_id="who"),
        "Cannot resume: stage 'who' is not in chart 'Seed' @ $.frames[0].invoker_stage_id",
    ),
    (
        "nested",
        set_frame(2, stage_id="outer/mid/nope"),
        "Cannot resume: paused stage 'outer/mid/nope' is not in chart 'Seed' (inside subflow 'outer/mid') "
        "@ $.frames[2].stage_id",
    ),
    (
        "nested",
        set_frame(2, stage_id="outer/ask"),
        "Cannot resume: paused stage 'outer/ask' is not in chart 'Seed' (inside subflow 'outer/mid') "
        "@ $.frames[2].stage_id",
    ),
    (
        "selector",
        set_frame(0, stage_id="nowhere"),
        "Cannot resume: stage 'nowhere' is not in chart 'Seed' @ $.frames[0].stage_id",
    ),
]


@pytest.mark.parametrize(("chart", "change", "message"), UNKNOWN)
def test_a_frame_naming_an_unknown_stage_is_refused_before_anything_runs(chart: str, change: Any, message: str) -> None:
    """Every frame's stage, continuation and invoker must exist on its level of the chart."""
    cp = edited(chart, change)
    calls: list[str] = []
    with pytest.raises(CheckpointError) as info:
        pause_charts.CHARTS[chart](calls).resume(cp, "yes")
    assert str(info.value) == message
    assert info.value.path == message.rsplit(" @ ", 1)[1]
    assert calls == []


KINDS = [
    (
        "linear",
        set_frame(0, stage_id="done"),
        "Cannot resume: stage 'done' is a stage, but the checkpoint has it as a pausable stage @ $.frames[0].kind",
    ),
    (
        "subflow",
        lambda d: d.update(
            frames=[{**d["frames"][0], "stage_id": "seed"}, {**d["frames"][1], "stage_id": "seed/ask"}],
            paused_stage_id="seed/ask",
            subflow_path=["seed"],
            subflow_states={"seed": d["subflow_states"]["sf"]},
            subflow_args={"seed": d["subflow_args"]["sf"]},
        ),
        "Cannot resume: stage 'seed' is a stage, but the checkpoint has it as a subflow mount @ $.frames[0].kind",
    ),
    (
        "selector",
        set_frame(0, stage_id="done"),
        "Cannot resume: stage 'done' is a stage, but the checkpoint has it as a fork or selector @ $.frames[0].kind",
    ),
    (
        "selector",
        set_frame(1, stage_id="seed"),
        "Cannot resume: stage 'seed' is a stage, but the checkpoint has it as a pausable stage @ $.frames[1].kind",
    ),
]


@pytest.mark.parametrize(("chart", "change", "message"), KINDS)
def test_a_frame_naming_a_stage_of_another_kind_is_refused(chart: str, change: Any, message: str) -> None:
    """A stage frame must be pausable, a mount frame a subflow, a fork frame a fork or selector."""
    cp = edited(chart, change)
    with pytest.raises(CheckpointError) as info:
        pause_charts.CHARTS[chart]([]).resume(cp, "yes")
    assert str(info.value) == message


def test_a_paused_child_must_belong_to_the_fork_frame_above_it() -> None:
    """The frame after a fork frame must name one of that fork's children or branches."""
    calls: list[str] = []
    chart = (
        flow_chart("Seed", pause_charts.plain(calls, "seed"), "seed")
        .add_selector_function("Pick", lambda s: ["p"], "pick")
        .add_pausable_function_branch("p", "P", pause_charts.asking(calls, "p"))
        .end()
        .add_pausable_function("Later", pause_charts.asking(calls, "later"), "later")
        .build()
    )
    data = chart.run().checkpoint.to_dict()  # type: ignore[union-attr]
    set_frame(1, stage_id="later")(data)
    calls.clear()
    with pytest.raises(CheckpointError) as info:
        chart.resume(Checkpoint.from_dict(data), "yes")
    assert str(info.value) == "Cannot resume: stage 'later' is not a child of 'pick' @ $.frames[1].stage_id"
    assert calls == []


def test_an_edited_in_memory_checkpoint_is_checked_like_a_loaded_one() -> None:
    """A Checkpoint object changed in memory gets the same consistency and JSON checks."""
    chart = pause_charts.linear([])
    cp = chart.run().checkpoint
    assert cp is not None
    cp = attrs.evolve(cp, paused_stage_id="done")
    with pytest.raises(CheckpointError, match=r"^Invalid checkpoint: the last frame is 'ask' but paused_stage_id"):
        chart.resume(cp, "yes")
    cp = chart.run().checkpoint
    assert cp is not None
    cp.shared_state["when"] = {1, 2}
    with pytest.raises(CheckpointError) as info:
        chart.resume(cp, "yes")
    assert str(info.value) == "Invalid checkpoint: expected a JSON value: a set is not JSON-safe @ $.shared_state.when"


def test_pause_data_that_is_not_json_safe_is_refused_at_the_pause_naming_the_stage() -> None:
    """A bad pause value fails the run when it pauses (not later, when someone saves it)."""
    calls: list[str] = []

    def execute(scope: Any) -> Any:
        calls.append("execute")
        scope.asked = True
        return {"question": "ok?", "callback": print}

    chart = (
        flow_chart("Seed", pause_charts.plain(calls, "seed"), "seed")
        .add_pausable_function("Ask", Pausable(execute, lambda s, i: None), "ask")
        .build()
    )
    with pytest.raises(CheckpointError) as info:
        chart.run()
    assert str(info.value) == (
        "Stage 'ask' paused with pause data that is not JSON-safe: a function (print) is not JSON-safe "
        "at pause_data.callback. Return JSON-safe data from execute()."
    )
    assert info.value.path == "$.pause_data.callback"
    assert calls == ["seed", "execute"]


def test_bad_pause_data_inside_a_subflow_names_the_full_stage_id() -> None:
    """Inside a subflow the refusal names the stage by its full id."""
    inner = flow_chart("Ask", Pausable(lambda s: {1, 2}, lambda s, i: None), "ask").build()
    chart = flow_chart("Seed", lambda s: None, "seed").add_subflow_chart_next("sf", inner).build()
    with pytest.raises(CheckpointError, match=r"^Stage 'sf/ask' paused with pause data that is not JSON-safe: a set"):
        chart.run()


def test_resume_input_that_is_not_json_safe_is_refused_before_anything_runs() -> None:
    """The resume input is validated first: it may end up in state."""
    calls: list[str] = []
    chart = pause_charts.linear(calls)
    cp = chart.run().checkpoint
    calls.clear()
    with pytest.raises(TypeError, match=r"^resume input is not JSON-safe: a set is not JSON-safe at input\.x$"):
        chart.resume(cp, {"x": {1}})  # type: ignore[arg-type]
    assert calls == []


def test_two_fork_children_pausing_at_once_is_refused() -> None:
    """A run pauses at one stage at a time: a second paused child is an error, never dropped."""
    calls: list[str] = []
    chart = (
        flow_chart("Seed", pause_charts.plain(calls, "seed"), "seed")
        .add_selector_function("Pick", lambda s: ["p", "a", "q"], "pick")
        .add_pausable_function_branch("p", "P", pause_charts.asking(calls, "p"))
        .add_function_branch("a", "A", pause_charts.plain(calls, "a"))
        .add_pausable_function_branch("q", "Q", pause_charts.asking(calls, "q"))
        .end()
        .build()
    )
    with pytest.raises(RunError) as info:
        chart.run()
    assert str(info.value) == (
        "Children 'p', 'q' of 'pick' all paused, but a run pauses at one stage at a time: let at most one "
        "child of a fork or selector pause (the others' execute returns None)"
    )
    assert info.value.stage_id == "pick"


def test_two_paused_subflow_children_are_refused_too() -> None:
    """Two subflow fork children that each pause inside are refused the same way."""
    calls: list[str] = []
    chart = (
        flow_chart("Seed", pause_charts.plain(calls, "seed"), "seed")
        .add_subflow_chart("s1", pause_charts.inner(calls, "one"))
        .add_subflow_chart("s2", pause_charts.inner(calls, "two"))
        .build()
    )
    with pytest.raises(RunError, match=r"^Children 's1', 's2' of 'seed' all paused"):
        chart.run()


def test_a_failed_fail_fast_selector_fails_even_when_a_sibling_paused() -> None:
    """With ``fail_fast`` the failure wins over the pause: the run fails, it does not pause."""

    def boom(scope: Any) -> None:
        raise ValueError("boom")

    chart = (
        flow_chart("Seed", lambda s: None, "seed")
        .add_selector_function("Pick", lambda s: ["p", "bad"], "pick", fail_fast=True)
        .add_pausable_function_branch("p", "P", pause_charts.asking([], "p"))
        .add_function_branch("bad", "Bad", boom)
        .end()
        .build()
    )
    with pytest.raises(ValueError, match=r"^boom$"):
        chart.run()


def test_redaction_hides_values_in_the_log_but_not_in_the_checkpoint() -> None:
    """A checkpoint must resume, so it keeps the real values a redaction hides in the log."""

    def execute(scope: Any) -> Any:
        scope.ssn = "123-45-6789"
        return "confirm?"

    def resume(scope: Any, answer: Any) -> None:
        scope.confirmed = f"{answer} {scope.ssn[-4:]}"

    chart = flow_chart("Ask", Pausable(execute, resume), "ask").build()
    paused = chart.run(redaction=Redaction(keys={"ssn"}))
    assert paused.commit_log[0].to_dict()["trace"][0]["value"] == "REDACTED"
    cp = Checkpoint.from_json(paused.checkpoint.to_json())  # type: ignore[union-attr]
    assert cp.shared_state == {"ssn": "123-45-6789"}
    assert "123-45-6789" in paused.checkpoint.to_json()  # type: ignore[union-attr]
    done = chart.resume(cp, "yes", redaction=Redaction(keys={"ssn"}))
    assert done.state["confirmed"] == "yes 6789"


def test_fingerprint_message_shows_sixteen_hex_digits_each() -> None:
    """The refusal shows a readable prefix of both fingerprints."""
    cp = checkpoint_of("root")
    with pytest.raises(CheckpointError) as info:
        pause_charts.linear([]).resume(cp)
    assert len(re.findall(r"[0-9a-f]{16}…", str(info.value))) == 2
