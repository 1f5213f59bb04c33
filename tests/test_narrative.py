"""Exact wording of every narrative sentence, driven by synthetic recorder events.

The expected texts are footprintjs 9.24.0's (see ``tests/fixtures/footprintjs`` for
the runs they were taken from).
"""

from __future__ import annotations

from typing import Any

from flowchart import events as ev
from flowchart.recorders import NarrativeEntry, narrative
from flowchart.recorders.narrative import NarrativeRecorder


def ctx(stage_id: str, visit: int = 0, name: str = "", path: tuple[str, ...] = ()) -> ev.TraversalContext:
    """A traversal context for stage ``stage_id`` on its ``visit``-th runtime id."""
    return ev.TraversalContext("r", stage_id, f"{stage_id}#{visit}", name, path)


def stage(
    rec: NarrativeRecorder,
    sid: str,
    name: str,
    *ops: tuple[Any, ...],
    visit: int = 0,
    description: str | None = None,
    path: tuple[str, ...] = (),
) -> None:
    """Run one linear stage through ``rec``: its ops, then its on_stage_executed."""
    c = ctx(sid, visit, name, path)
    for op in ops:
        if op[0] == "read":
            rec.on_read(ev.ReadEvent(c, op[1], op[2]))
        elif op[0] == "emit":
            rec.on_emit(ev.EmitEvent(c, op[1], op[2]))
        else:
            rec.on_write(ev.WriteEvent(c, op[1], op[2] if len(op) > 2 else None, op[0]))
    rec.on_stage_executed(ev.StageExecutedEvent(c, name, description, "linear"))


def texts(rec: NarrativeRecorder) -> list[str]:
    """The narrative lines, indented two spaces per depth for readable asserts."""
    return ["  " * d + t for _, d, t in rec.entries()]


def test_first_stage_began_and_later_stages_moved_on() -> None:
    """The first stage "began", the next "moved on"; steps count reads and writes."""
    rec = narrative()
    stage(rec, "seed", "Seed", ("set", "count", 0), ("set", "items", []))
    stage(rec, "work", "Work", ("read", "count", 0), ("set", "count", 1), visit=1)
    assert rec.entries() == [
        ("stage", 0, "Stage 1: The process began with Seed."),
        ("step", 1, "Step 1: Write count = 0"),
        ("step", 1, "Step 2: Write items = []"),
        ("stage", 0, "Stage 2: Next, it moved on to Work."),
        ("step", 1, "Step 1: Read count = 0"),
        ("step", 1, "Step 2: Write count = 1"),
    ]


def test_descriptions_replace_names() -> None:
    """A stage description gives "began: desc." / "Next step: desc."."""
    rec = narrative()
    stage(rec, "seed", "Seed", description="seed the state")
    stage(rec, "tail", "Tail", visit=1, description="wrap things up")
    assert rec.lines() == [
        "Stage 1: The process began: seed the state.",
        "Stage 2: Next step: wrap things up.",
    ]


def test_update_and_delete_steps() -> None:
    """Updates print their (partial) value; deletes print only the key."""
    rec = narrative()
    stage(rec, "w", "W", ("update", "o2", {"c": 3}), ("delete", "l0"), ("read", "nul", None))
    assert texts(rec)[1:] == [
        "  Step 1: Update o2 = {c}",
        "  Step 2: Delete l0",
        "  Step 3: Read nul = null",
    ]


def test_emit_lines_take_a_step_number_but_do_not_print_it() -> None:
    """``[emit] name: summary`` sits among the steps and uses up a step number."""
    rec = narrative()
    stage(rec, "s", "S", ("set", "a", 1), ("emit", "app.started", {"user": "u1"}), ("read", "a", 1))
    assert rec.entries()[1:] == [
        ("step", 1, "Step 1: Write a = 1"),
        ("emit", 1, "[emit] app.started: {user}"),
        ("step", 1, "Step 3: Read a = 1"),
    ]


def test_options_drop_step_numbers_and_values() -> None:
    """include_step_numbers / include_values remove "Step N: " and "= v" (emits keep values)."""
    ops = (
        ("read", "msg", "hi"),
        ("update", "obj", {"g": 3}),
        ("delete", "msg"),
        ("emit", "ev", "p"),
    )
    plain = narrative(include_step_numbers=False)
    stage(plain, "w", "W", *ops)
    bare = narrative(include_values=False)
    stage(bare, "w", "W", *ops)
    assert plain.lines()[1:] == [
        'Read msg = "hi"',
        "Update obj = {g}",
        "Delete msg",
        '[emit] ev: "p"',
    ]
    assert bare.lines()[1:] == [
        "Step 1: Read msg",
        "Step 2: Update obj",
        "Step 3: Delete msg",
        '[emit] ev: "p"',
    ]


def test_max_value_length_cuts_values() -> None:
    """max_value_length is passed to the summary of every value."""
    rec = narrative(max_value_length=12)
    stage(rec, "s", "S", ("set", "msg", "a fairly long message here"))
    assert rec.lines()[1] == 'Step 1: Write msg = "a fairly ..."'


def decision(
    rec: NarrativeRecorder,
    chosen: str,
    *,
    evidence: dict[str, Any] | None = None,
    description: str | None = None,
    rationale: str | None = None,
) -> None:
    """Fire a decider ``Route`` (id route) choosing ``chosen``."""
    c = ctx("route", 1, "Route")
    rec.on_read(ev.ReadEvent(c, "score", 720))
    rec.on_decision(ev.DecisionEvent(c, "Route", chosen, chosen.lower(), rationale, description, evidence))
    rec.on_stage_executed(ev.StageExecutedEvent(c, "Route", description, "decider"))


def cond(key: str, op: str, threshold: Any, actual: str, result: bool) -> dict[str, Any]:
    """One filter condition of decide() evidence."""
    return {
        "key": key,
        "op": op,
        "threshold": threshold,
        "actual_summary": actual,
        "result": result,
        "redacted": False,
    }


def test_filter_rule_condition_sentence() -> None:
    """A matched filter rule lists every condition with ✓/✗ and JSON thresholds."""
    conditions = [
        cond("score", "gte", 650, "720", True),
        cond("tier", "in", ["gold", "silver"], '"gold"', True),
        cond("dti", "lt", 0.43, "0.5", False),
    ]
    rule = {"type": "filter", "rule_index": 1, "branch": "review", "matched": True}
    rule |= {"label": "Near-prime", "conditions": conditions}
    rec = narrative()
    stage(rec, "seed", "Seed")
    decision(rec, "Review", evidence={"rules": [rule], "chosen": "review", "default": "reject"})
    assert rec.entries()[1:] == [
        ("stage", 0, "Stage 2: Next, it moved on to Route."),
        ("step", 1, "Step 1: Read score = 720"),
        (
            "condition",
            1,
            '[Condition]: It evaluated Rule 1 "Near-prime": score 720 gte 650 ✓, '
            'tier "gold" in ["gold","silver"] ✓, dti 0.5 lt 0.43 ✗, and chose Review.',
        ),
    ]


def test_function_rule_condition_sentence() -> None:
    """A matched function rule lists the keys it read, redacted ones as [REDACTED]."""
    inputs = [
        {"key": "score", "value_summary": "720", "redacted": False},
        {"key": "ssn", "value_summary": "[REDACTED]", "redacted": True},
    ]
    rule = {"type": "function", "rule_index": 0, "branch": "review", "matched": True}
    rule |= {"label": "Near-prime", "inputs": inputs}
    unlabeled = {**rule, "label": None}
    rec = narrative()
    decision(rec, "Review", evidence={"rules": [rule]})
    decision(rec, "Review", evidence={"rules": [unlabeled]})
    assert [t for k, _, t in rec.entries() if k == "condition"] == [
        '[Condition]: It examined "Near-prime": score=720, ssn=[REDACTED], and chose Review.',
        "[Condition]: It examined: score=720, ssn=[REDACTED], and chose Review.",
    ]


def test_default_fallback_sentences() -> None:
    """No match falls back to default, counting rules that threw and showing a default label."""
    failed = {
        "type": "function",
        "rule_index": 0,
        "branch": "a",
        "matched": False,
        "inputs": [],
        "match_error": "x",
    }
    missed = {"type": "filter", "rule_index": 1, "branch": "a", "matched": False, "conditions": []}
    rec = narrative()
    decision(rec, "Reject", evidence={"rules": [missed]})
    decision(rec, "Reject", evidence={"rules": [failed, missed]})
    decision(rec, "Reject", evidence={"rules": [failed, failed]})
    decision(rec, "Reject", evidence={"rules": [missed], "default_label": "Nothing matched"})
    assert [t for k, _, t in rec.entries() if k == "condition"] == [
        "[Condition]: No rules matched, fell back to default: Reject.",
        "[Condition]: No rules matched (1 rule threw errors), fell back to default: Reject.",
        "[Condition]: No rules matched (2 rules threw errors), fell back to default: Reject.",
        '[Condition]: No rules matched, fell back to default "Nothing matched": Reject.',
    ]


def test_plain_decider_sentences() -> None:
    """Without evidence the sentence uses the decider's description and rationale."""
    rec = narrative()
    decision(rec, "Fast lane")
    decision(rec, "Fast lane", description="checked the mode")
    decision(rec, "Fast lane", rationale="mode is fast")
    decision(rec, "Fast lane", description="checked the mode", rationale="mode is fast")
    assert [t for k, _, t in rec.entries() if k == "condition"] == [
        "[Condition]: A decision was made, and the path taken was Fast lane.",
        "[Condition]: It checked the mode and chose Fast lane.",
        "[Condition]: A decision was made: mode is fast, so the path taken was Fast lane.",
        "[Condition]: It checked the mode: mode is fast, so it chose Fast lane.",
    ]


def test_deciders_never_loop_back_but_linear_stages_do() -> None:
    """A revisited linear stage "looped back (pass k)"; a revisited decider just "moved on"."""
    rec = narrative()
    stage(rec, "seed", "Seed")
    stage(rec, "work", "Work", visit=1)
    decision(rec, "Work")
    rec.on_loop(ev.LoopEvent(ctx("again", 3), "Work", "work", 1))
    stage(rec, "work", "Work", visit=4)
    decision(rec, "Done")
    stage(rec, "tick", "Tick", visit=6, description="count one more")
    stage(rec, "tick", "Tick", visit=7, description="count one more")
    assert [t for k, _, t in rec.entries() if k in ("stage", "loop")] == [
        "Stage 1: The process began with Seed.",
        "Stage 2: Next, it moved on to Work.",
        "Stage 3: Next, it moved on to Route.",
        "On pass 1 through Work.",
        "Stage 4: Looped back to Work (pass 1).",
        "Stage 5: Next, it moved on to Route.",
        "Stage 6: Next step: count one more.",
        "Stage 7: Looped back: count one more (pass 1).",
    ]


def test_loop_sentence_with_description() -> None:
    """A loop target with a description reads "On pass N: desc again."."""
    rec = narrative()
    rec.on_loop(ev.LoopEvent(ctx("more", 3), "Tick", "tick", 2, "count one more"))
    assert rec.lines() == ["On pass 2: count one more again."]


def test_fork_and_selected_sentences() -> None:
    """Fork lists children (always "paths"); selector with and without evidence."""
    rec = narrative()
    c = ctx("pick", 1, "Pick")
    rec.on_read(ev.ReadEvent(c, "amount", 150))  # a selector's reads are never told
    rules = [
        {
            "type": "filter",
            "rule_index": 0,
            "branch": "big",
            "matched": True,
            "label": "Large",
            "conditions": [cond("amount", "gt", 100, "150", True)],
        },
        {
            "type": "function",
            "rule_index": 1,
            "branch": "eu",
            "matched": True,
            "label": "EU",
            "inputs": [{"key": "region", "value_summary": '"eu"', "redacted": False}],
        },
        {"type": "filter", "rule_index": 2, "branch": "vip", "matched": False, "conditions": []},
    ]
    rec.on_selected(ev.SelectedEvent(c, "Pick", ("Big order", "EU rules"), ("big", "eu"), 3, {"rules": rules}))
    rec.on_stage_executed(ev.StageExecutedEvent(c, "Pick", None, "selector"))
    rec.on_selected(ev.SelectedEvent(c, "Pick", ("Big order",), ("big",), 3))
    rec.on_fork(ev.ForkEvent(c, "Pick", ("Big order",)))
    assert rec.lines() == [
        '[Selected]: 2 of 3 paths selected: big "Large" (amount 150 gt 100 ✓); eu "EU" (region="eu").',
        "[Selected]: 1 of 3 paths selected for execution: Big order.",
        "[Parallel]: Forking into 1 parallel paths: Big order.",
    ]


def test_subflow_entry_inputs_exit_and_numbering_restart() -> None:
    """Entering prints Input steps; inner stages restart at Stage 1 with prefixed names."""
    rec = narrative()
    stage(rec, "seed", "Seed")
    mount = ctx("writer", 1, "Writer", ("writer",))
    rec.on_subflow_entry(ev.SubflowEvent(mount, "Writer", "writer", None, {"topic": "cats", "tags": ["x", "y"]}))
    stage(rec, "writer/prep", "Prep", visit=2, path=("writer",))
    rec.on_subflow_exit(ev.SubflowEvent(mount, "Writer", "writer"))
    stage(rec, "publish", "Publish", visit=3)
    assert texts(rec) == [
        "Stage 1: The process began with Seed.",
        "Entering the Writer subflow.",
        '  Input: topic = "cats"',
        "  Input: tags = (2 items)",
        "Stage 1: The process began with writer/Prep.",
        "Exiting the Writer subflow.",
        "Stage 2: Next, it moved on to Publish.",
    ]


def test_subflow_entry_with_description_and_no_values() -> None:
    """A described subflow reads "Entering X: desc."; without values Input shows keys only."""
    rec = narrative(include_values=False)
    mount = ctx("helper", 1, "Helper", ("helper",))
    rec.on_subflow_entry(ev.SubflowEvent(mount, "Helper", "helper", "does the inner work", {"k": 1}))
    assert rec.lines() == ["Entering Helper: does the inner work.", "Input: k"]


def test_names_already_qualified_are_kept() -> None:
    """An engine that already prefixes subflow stage names is not prefixed twice."""
    rec = narrative()
    stage(rec, "writer/deep/start", "writer/deep/Start", path=("writer", "writer/deep"))
    assert rec.lines() == ["Stage 1: The process began with writer/deep/Start."]


def test_break_error_pause_resume_sentences() -> None:
    """Stop, error, pause and resume each get their one-line sentence."""
    rec = narrative()
    c = ctx("guard", 1, "Guard")
    rec.on_break(ev.BreakEvent(c, "Guard", "not allowed"))
    rec.on_error(ev.ErrorEvent(c, "Boom", "Error: kaput"))
    rec.on_error(ev.ErrorEvent(c, "Boom", "recorder broke", channel="recorder"))
    rec.on_pause(ev.PauseEvent(c, "Approve", "approve", {"q": 1}))
    rec.on_resume(ev.ResumeEvent(c, "Approve", "approve", True))
    rec.on_resume(ev.ResumeEvent(c, "Approve", "approve", False))
    assert rec.entries() == [
        ("break", 0, "Execution stopped at Guard."),
        ("error", 0, "[Error]: An error occurred at Boom: Error: kaput."),
        ("pause", 0, "Execution paused at Approve."),
        ("resume", 0, "Execution resumed at Approve with input."),
        ("resume", 0, "Execution resumed at Approve."),
    ]


def test_propagated_break_names_the_mount_unprefixed() -> None:
    """A break propagated out of a subflow names the mount as given."""
    rec = narrative()
    inner = ctx("sf/inside", 2, "Inside", ("sf",))
    rec.on_break(ev.BreakEvent(inner, "Inside", "halt"))
    rec.on_break(ev.BreakEvent(ctx("sf", 1, "Stopper", ("sf",)), "Stopper", "halt", "sf"))
    assert rec.lines() == ["Execution stopped at sf/Inside.", "Execution stopped at Stopper."]


def test_paused_and_failed_stages_operations_are_never_told() -> None:
    """Ops of a stage that paused or raised are dropped, even if its runtime id comes back."""
    rec = narrative()
    c = ctx("approve", 1, "Approve")
    rec.on_write(ev.WriteEvent(c, "status", "awaiting", "set"))
    rec.on_pause(ev.PauseEvent(c, "Approve", "approve", None))
    rec.on_resume(ev.ResumeEvent(c, "Approve", "approve", True))
    stage(rec, "approve", "Approve", ("set", "status", "done"), visit=1)
    assert rec.lines() == [
        "Execution paused at Approve.",
        "Execution resumed at Approve with input.",
        "Stage 1: The process began with Approve.",
        'Step 1: Write status = "done"',
    ]


def test_records_carry_ids_and_clear_resets() -> None:
    """records() keep stage/runtime ids and keys; clear() starts the numbering over."""
    rec = narrative()
    stage(rec, "seed", "Seed", ("set", "a", 1))
    assert rec.records()[1] == NarrativeEntry("step", 1, "Step 1: Write a = 1", "Seed", "seed", "seed#0", None, "a", 1)
    rec.clear()
    assert rec.entries() == []
    stage(rec, "seed", "Seed")
    assert rec.lines() == ["Stage 1: The process began with Seed."]


def test_values_are_summarised_as_they_were_when_read() -> None:
    """A live value mutated after the read still shows as it was at the read."""
    rec = narrative()
    c = ctx("w", 0, "W")
    live = {"a": 1}
    rec.on_read(ev.ReadEvent(c, "o", live))
    live["b"] = 2
    rec.on_write(ev.WriteEvent(c, "o", live, "update"))
    rec.on_stage_executed(ev.StageExecutedEvent(c, "W", None, "linear"))
    assert rec.lines()[1:] == ["Step 1: Read o = {a}", "Step 2: Update o = {a, b}"]
