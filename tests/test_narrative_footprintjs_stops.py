"""Our engine + narrative against footprintjs 9.24.0: stops, errors, emits, options.

Same method as ``test_narrative_footprintjs.py`` (whose helpers this file reuses):
rebuild each fixture's chart, run it with ``narrative()``, compare entries byte for byte.
"""

from __future__ import annotations

from typing import Any

import pytest

flowchart = pytest.importorskip("flowchart")
if not hasattr(flowchart, "flow_chart"):  # the engine has not landed yet
    pytest.skip("flowchart.flow_chart is not available", allow_module_level=True)

from test_narrative_footprintjs import reference, run, touch  # noqa: E402
from test_narrative_footprintjs_flow import setter  # noqa: E402

from flowchart import Redaction, flow_chart  # noqa: E402
from flowchart.recorders.narrative import narrative  # noqa: E402

# ── stops, errors, emits, redaction, options ──────────────────────────────────────────


def test_stop() -> None:
    """ctx.stop() ends the run: "Execution stopped at X." after the stage's own steps."""

    def guard(scope: Any, ctx: Any) -> None:
        touch(scope.a)
        scope.blocked = True
        ctx.stop("not allowed")

    chart = (
        flow_chart("Seed", setter(a=1), "seed", description="seed the state")
        .add_function("Guard", guard, "guard")
        .add_function("Never", setter(never=True), "never")
        .build()
    )
    assert run(chart).entries() == reference("break_stop")


@pytest.mark.parametrize(
    "propagate",
    [
        True,
        False,
    ],
)
def test_stop_inside_a_subflow(propagate: bool) -> None:
    """A stop in a subflow is told at the inner stage, and at the mount when propagated."""

    def inside(scope: Any, ctx: Any) -> None:
        scope["in"] = 1
        ctx.stop("halt")

    inner = flow_chart("Inside", inside, "inside").add_function("InsideNever", setter(nope=1), "inside-never").build()
    chart = (
        flow_chart("Seed", setter(a=1), "seed")
        .add_subflow_chart_next("sf", inner, mount_name="Stopper", propagate_break=propagate)
        .add_function("After", setter(after=1), "after")
        .build()
    )
    case = "subflow_break_propagate" if propagate else "subflow_break_contained"
    assert run(chart).entries() == reference(case)


class Error(Exception):  # named as JavaScript's Error, so the message reads the same
    """An exception whose ``Type: message`` text reads as JavaScript's ``Error: message``."""


def test_error() -> None:
    """A raising stage: no Stage line, its steps untold, then [Error]."""

    def boom(scope: Any) -> None:
        touch(scope.a)
        scope.half = True
        raise Error("kaput")

    chart = (
        flow_chart("Seed", setter(a=1), "seed")
        .add_function("Boom", boom, "boom")
        .add_function("Never", setter(never=True), "never")
        .build()
    )
    assert run(chart).entries() == reference("error")


def test_error_inside_a_subflow() -> None:
    """An error in a subflow names the prefixed stage, then the subflow is exited."""

    def bad(_scope: Any) -> None:
        raise Error("inner fail")

    inner = flow_chart("Fine", setter(ok=1), "fine").add_function("Bad", bad, "bad").build()
    chart = flow_chart("Seed", setter(a=1), "seed").add_subflow_chart_next("sf", inner, mount_name="Fragile").build()
    assert run(chart).entries() == reference("subflow_error")


def test_emit() -> None:
    """Emits sit among the steps with their payload summary, using up step numbers."""

    def seed(scope: Any, ctx: Any) -> None:
        scope.a = 1
        ctx.emit("app.started", {"user": "u1", "tier": "gold"})
        touch(scope.a)
        ctx.emit("app.note", "hello")
        ctx.emit("app.count", 3)
        ctx.emit("app.list", [1, 2])

    def after(scope: Any, ctx: Any) -> None:
        ctx.emit("app.secret.token", {"t": "abc"})
        scope.b = 2

    chart = flow_chart("Seed", seed, "seed").add_function("Next", after, "next").build()
    expected = reference("emit")
    # footprintjs's emitPatterns redaction has no counterpart in our Redaction (yet)
    i = expected.index(("emit", 1, '[emit] app.secret.token: "[REDACTED]"'))
    expected[i] = ("emit", 1, "[emit] app.secret.token: {t}")
    assert run(chart).entries() == expected


def test_redaction() -> None:
    """Redacted keys (exact and by pattern) print as "[REDACTED]" in reads and writes."""

    def seed(scope: Any) -> None:
        scope.ssn, scope.name, scope.apiKey = "123-45-6789", "Ann", "k-1"
        scope.card = {"num": "4111", "exp": "12/30"}

    def use(scope: Any) -> None:
        touch(scope.ssn, scope.apiKey, scope.card)
        scope.copy = "x"
        scope.ssn = "changed"
        del scope.apiKey

    chart = flow_chart("Seed", seed, "seed").add_function("Use", use, "use").build()
    rec = run(chart, redaction=Redaction(keys={"ssn"}, patterns=[r"(?i)key"]))
    expected = reference("redaction")
    # JS `$update('ssn', 'changed')` is an update; Python has no update of a scalar
    i = expected.index(("step", 1, 'Step 5: Update ssn = "[REDACTED]"'))
    expected[i] = ("step", 1, 'Step 5: Write ssn = "[REDACTED]"')
    assert rec.entries() == expected


def options_chart() -> Any:
    """Seed writes msg/obj; Work reads, merges, deletes and emits."""

    def work(scope: Any, ctx: Any) -> None:
        touch(scope.msg)
        scope.obj["gamma"] = 3
        del scope.msg
        ctx.emit("ev", "payload text")

    seed = setter(msg="a fairly long message here", obj={"alpha": 1, "beta": 2})
    return flow_chart("Seed", seed, "seed").add_function("Work", work, "work").build()


#: the Work stage's steps in Python: the nested assignment reads ``obj`` first (JS
#: ``$update`` does not read); the update itself is told by what changed, ``{gamma}``
WORK_STEPS = {
    "options_no_steps": [
        'Read msg = "a fairly long message here"',
        "Read obj = {alpha, beta}",
        "Update obj = {gamma}",
        "Delete msg",
    ],
    "options_no_values": [
        "Step 1: Read msg",
        "Step 2: Read obj",
        "Step 3: Update obj",
        "Step 4: Delete msg",
    ],
    "options_short": [
        'Step 1: Read msg = "a fairly ..."',
        "Step 2: Read obj = {2 keys}",
        "Step 3: Update obj = {gamma}",
        "Step 4: Delete msg",
    ],
}


@pytest.mark.parametrize(
    ("case", "options"),
    [
        ("options_no_steps", {"include_step_numbers": False}),
        ("options_no_values", {"include_values": False}),
        ("options_short", {"max_value_length": 12}),
    ],
)
def test_options(case: str, options: dict[str, Any]) -> None:
    """include_step_numbers, include_values and max_value_length as in footprintjs."""
    rec = run(options_chart(), narrative(**options))
    expected = reference(case)
    work = expected.index(("stage", 0, "Stage 2: Next, it moved on to Work."))
    expected[work + 1 : -1] = [("step", 1, text) for text in WORK_STEPS[case]]
    assert rec.entries() == expected
