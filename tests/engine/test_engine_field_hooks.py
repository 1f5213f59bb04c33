"""The field hooks (``take_stage_start``, ``take_emit``, ``take_commit``) and ``emit_owned``.

A recorder may take the three hottest data hooks as fields instead of event objects (the
stream tap does). They must say exactly what the event forms say, at the same points, under
the same rules; ``emit_owned`` hands a payload over without the defensive copy.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowchart import flow_chart
from flowchart.lowlevel import emit_owned


class Events:
    """The event forms, written down as (hook, stage, detail)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []
        self.errors: list[str] = []

    def on_stage_start(self, event: Any) -> None:
        self.seen.append(("start", event.ctx.runtime_stage_id, None))

    def on_emit(self, event: Any) -> None:
        self.seen.append(("emit", event.ctx.runtime_stage_id, (event.name, event.payload)))

    def on_commit(self, event: Any) -> None:
        self.seen.append(("commit", event.ctx.runtime_stage_id, event.commit))

    def on_error(self, event: Any) -> None:
        self.errors.append(f"{event.channel}: {event.message}")


class Fields:
    """The field forms of the same three hooks."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []

    def take_stage_start(self, ctx: Any) -> None:
        self.seen.append(("start", ctx.runtime_stage_id, None))

    def take_emit(self, ctx: Any, name: str, payload: Any) -> None:
        self.seen.append(("emit", ctx.runtime_stage_id, (name, payload)))

    def take_commit(self, ctx: Any, commit: Any) -> None:
        self.seen.append(("commit", ctx.runtime_stage_id, commit))


def _chart() -> Any:
    def seed(scope: Any, ctx: Any) -> None:
        scope.n = 1
        ctx.emit("seeded", {"n": 1})

    def decide(scope: Any, ctx: Any) -> str:
        ctx.emit("deciding", [scope.n])
        return "twice" if scope.n < 3 else "done"

    def twice(scope: Any) -> None:
        scope.n = scope.n * 2

    def done(scope: Any, ctx: Any) -> None:
        ctx.emit("done", None)

    return (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Decide", decide, "decide")
        .add_function_branch("twice", "Twice", twice, loop_to="decide")
        .add_function_branch("done", "Done", done)
        .end()
        .build()
    )


def test_field_hooks_say_what_the_event_hooks_say_in_the_same_order() -> None:
    """Every stage start, emit and commit reaches a field-hook recorder with the same ids,
    names, payloads and commits, in the same order, as it reaches an event recorder."""
    events, fields = Events(), Fields()
    result = _chart().run(recorders=[events, fields])
    assert fields.seen == events.seen
    assert [kind for kind, _, _ in fields.seen].count("commit") == len(result.commit_log)
    assert ("emit", "seed#0", ("seeded", {"n": 1})) in fields.seen


def test_a_failing_field_hook_is_reported_and_the_run_goes_on() -> None:
    """A field hook that raises never breaks the run: it is reported to the other
    recorders' ``on_error`` (channel ``recorder``), naming the hook, as an event hook is."""

    class Broken(Fields):
        def take_commit(self, ctx: Any, commit: Any) -> None:
            raise RuntimeError("disk full")

    events = Events()
    result = _chart().run(recorders=[Broken(), events])
    assert result.state["n"] == 4
    assert events.errors[0] == "recorder: recorder Broken.take_commit raised RuntimeError: disk full"
    assert len(events.errors) == len(result.commit_log)


class AllFields(Fields):
    """Every field hook, the two batch points too."""

    def take_stage_ops(self, ctx: Any, ops: Any) -> None:
        self.seen.append(("ops", ctx.runtime_stage_id, len(ops)))

    def take_stage_executed(self, ctx: Any, name: str, description: Any, stage_type: Any) -> None:
        self.seen.append(("executed", ctx.runtime_stage_id, name))


KIND = {
    "take_stage_start": "start",
    "take_emit": "emit",
    "take_commit": "commit",
    "take_stage_ops": "ops",
    "take_stage_executed": "executed",
}


@pytest.mark.parametrize("hook", list(KIND))
@pytest.mark.parametrize("takers", [1, 2])
def test_every_field_hook_failing_alone_or_beside_another_is_reported_each_time(hook: str, takers: int) -> None:
    """Whether the failing recorder is the point's only taker or one of two (the engine calls
    a lone taker through its own path), each failure is reported once to the others'
    ``on_error`` naming the hook, and a second taker still hears every call, in order.
    (Emits are taken as fields only by a recorder without a batch: it hears them in its batch.)"""

    def broken(self: Any, ctx: Any, *fields: Any) -> None:
        raise RuntimeError("disk full")

    base = Fields if hook == "take_emit" else AllFields
    Broken = type("Broken", (base,), {hook: broken})
    events, healthy, reference = Events(), base(), base()
    _chart().run(recorders=[Broken(), healthy, events] if takers == 2 else [Broken(), events])
    _chart().run(recorders=[reference])
    calls = sum(1 for kind, _, _ in reference.seen if kind == KIND[hook])
    assert calls >= 3
    assert events.errors == [f"recorder: recorder Broken.{hook} raised RuntimeError: disk full"] * calls
    if takers == 2:
        assert healthy.seen == reference.seen


def test_a_batch_recorder_takes_emits_in_its_batch_not_as_fields() -> None:
    """``take_emit`` follows ``on_emit``'s rule: a recorder with ``on_stage_ops`` gets its
    emits in the batch unless it asks for them live (``live_operations``)."""

    class Batched(Fields):
        def __init__(self) -> None:
            super().__init__()
            self.batched: list[str] = []

        def on_stage_ops(self, event: Any) -> None:
            self.batched += [op[1] for op in event.ops if op[0] == "emit"]

    class Live(Batched):
        live_operations = True

    batched, live = Batched(), Live()
    _chart().run(recorders=[batched])
    _chart().run(recorders=[live])
    emitted = ["seeded", "deciding", "deciding", "deciding", "done"]
    assert batched.batched == emitted
    assert [d[0] for kind, _, d in batched.seen if kind == "emit"] == []
    assert [d[0] for kind, _, d in live.seen if kind == "emit"] == emitted


def test_a_field_emit_taker_alone_makes_emits_observed_and_names_filter_them() -> None:
    """A recorder with only ``take_emit`` makes ``ctx.observed`` true, and its
    ``emit_names`` keeps the emits it did not ask for from being made at all."""
    observed: list[bool] = []

    def stage(scope: Any, ctx: Any) -> None:
        observed.append(ctx.observed)
        ctx.emit("wanted", 1)
        ctx.emit("unwanted", 2)

    class Picky(Fields):
        emit_names = frozenset({"wanted"})

    picky = Picky()
    flow_chart("Only", stage, "only").build().run(recorders=[picky])
    assert observed == [True]
    assert [d for kind, _, d in picky.seen if kind == "emit"] == [("wanted", 1)]


def test_emit_owned_hands_the_payload_over_and_ctx_emit_copies_it() -> None:
    """``ctx.emit`` gives recorders a private copy (the stage may change its value later);
    ``emit_owned`` gives them the caller's own object, and neither makes a payload nobody takes."""
    sent: dict[str, Any] = {}

    def stage(scope: Any, ctx: Any) -> None:
        sent["copied"], sent["owned"] = {"n": [1]}, {"n": [2]}
        ctx.emit("copied", sent["copied"])
        emit_owned(ctx, "owned", sent["owned"])
        emit_owned(ctx, "ignored", {"n": 3})

    class Picky(Fields):
        emit_names = frozenset({"copied", "owned"})

    picky = Picky()
    flow_chart("Only", stage, "only").build().run(recorders=[picky])
    got = {d[0]: d[1] for kind, _, d in picky.seen if kind == "emit"}
    assert set(got) == {"copied", "owned"}
    assert got["copied"] == sent["copied"] and got["copied"] is not sent["copied"]
    assert got["owned"] is sent["owned"]


def test_a_stream_builds_no_event_objects_for_its_stage_commit_and_emit_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The stream tap takes stage starts, commits and emits as fields: streaming every kind
    of a chart whose only recorder is the stream builds none of those event objects, and
    still yields every stage, commit and emit."""
    from flowchart._engine import traversal

    built: list[str] = []
    for name in ("StageEvent", "CommitEvent", "EmitEvent"):
        original = getattr(traversal, name)

        def counting(*args: Any, _name: str = name, _original: Any = original) -> Any:
            built.append(_name)
            return _original(*args)

        monkeypatch.setattr(traversal, name, counting)
    kinds = [event.kind for event in _chart().stream(modes=["stages", "updates", "custom"])]
    assert built == []
    assert kinds.count("stage") == 7 and kinds.count("commit") == 7 and kinds.count("emit") == 5


def test_emits_go_in_a_batch_only_for_a_batch_recorder_that_takes_them() -> None:
    """A stage's emits enter its operation batch when some batch recorder takes emits (has
    ``on_emit`` / ``take_emit``, or sets ``batch_emits = True``); a batch recorder that takes
    none (the agent's narrative, which leaves emits out) does not make the engine log them."""

    class Quiet:
        def __init__(self) -> None:
            self.kinds: list[str] = []

        def take_stage_ops(self, ctx: Any, ops: list[Any]) -> None:
            self.kinds += [op[0] for op in ops]

    class Asking(Quiet):
        batch_emits = True

    quiet, asking, live = Quiet(), Asking(), Fields()
    _chart().run(recorders=[quiet, live])
    assert "emit" not in quiet.kinds and [kind for kind, _, _ in live.seen].count("emit") == 5
    _chart().run(recorders=[asking])
    assert asking.kinds.count("emit") == 5


@pytest.mark.parametrize("recorders", [1, 2])
def test_a_run_leaves_no_reference_cycle_holding_its_recorders(recorders: int) -> None:
    """When a run ends, nothing it made points back at itself through the recorders' hooks:
    a recorder (here a narrative with its whole entry list) is freed as soon as its last
    reference goes, without waiting for the cycle collector — one recorder or several."""
    import gc
    import weakref

    from flowchart import narrative

    chart = flow_chart("A", lambda s: setattr(s, "n", 1), "a").add_function(
        "B", lambda s: setattr(s, "n", s.n + 1), "b"
    )
    built = chart.build()
    attached = [narrative() for _ in range(recorders)]
    gc.collect()
    gc.disable()
    try:
        built.run(recorders=attached)
        assert attached[0].lines()[0] == "Stage 1: The process began with A."
        refs = [weakref.ref(recorder) for recorder in attached]
        del attached
        assert [ref() for ref in refs] == [None] * recorders
    finally:
        gc.enable()
