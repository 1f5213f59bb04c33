"""Our engine + narrative against footprintjs 9.24.0, chart by chart.

Each test rebuilds, with pyfootprint's public API, the chart described in one
``tests/fixtures/footprintjs/<case>.json`` (run on the published footprintjs package)
and asserts that ``narrative().entries()`` equals footprintjs's entries byte for byte.
Where the port differs on purpose or Python has no equivalent of a JS call, the
expected entries are patched in the test and the reason is given next to the patch.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from counted_twin import CountedTwin

flowchart = pytest.importorskip("flowchart")
if not hasattr(flowchart, "flow_chart"):  # the engine has not landed yet
    pytest.skip("flowchart.flow_chart is not available", allow_module_level=True)

from flowchart import Pausable, Redaction, decide, flow_chart  # noqa: E402
from flowchart.recorders.narrative import NarrativeRecorder, narrative  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures" / "footprintjs"
Entries = list[tuple[str, int, str]]


def reference(case: str, key: str = "entries") -> Entries:
    """footprintjs's entries for ``case`` as ``(type, depth, text)`` tuples."""
    doc = json.loads((FIXTURES / f"{case}.json").read_text(encoding="utf-8"))
    return [(t, d, x) for t, d, x in doc[key]]


def run(chart: Any, rec: NarrativeRecorder | None = None, **kwargs: Any) -> NarrativeRecorder:
    """Run ``chart`` with a narrative recorder (errors are part of the story, not the test).

    The chart runs again with a twin of the recorder told line by line as the run goes (a
    live reader): the narrative told when first read must be that one. And once more with a
    counted twin (as a stream reads it): what it announced must be exactly what it tells.
    """
    rec = rec or narrative()
    live = attrs.evolve(rec)
    live.follow(lambda _entry: None)
    recorders = [rec, live]
    counted = CountedTwin(rec) if rec._log is not None else None  # as a stream counts it
    if counted is not None:
        recorders.append(counted.rec)
    for recorder in recorders:
        # a failing run still has a narrative to compare
        with contextlib.suppress(Exception):
            chart.run(recorders=[recorder], **kwargs)
    assert rec.records() == live.records(), "told when read, the narrative differs from the one told live"
    if counted is not None:
        counted.check(rec)
    return rec


def touch(*_values: Any) -> None:
    """Consume values read from the scope (the read itself is what the chart records)."""


# ── linear stages and value summaries ─────────────────────────────────────────────────


def test_values() -> None:
    """Every value kind summarised in Write/Read/Delete steps across three stages."""

    def seed(scope: Any) -> None:
        scope.s, scope.empty, scope.n, scope.neg, scope.f = "hello", "", 42, -0.5, 1.5
        scope.whole, scope.big, scope.tiny, scope.b, scope.nul = 1.0, 1e21, 1e-7, True, None
        scope.l0, scope.l1, scope.l3, scope.o0 = [], ["a"], [1, 2, 3], {}
        scope.o2 = {"a": 1, "b": 2}
        scope.o6 = dict(zip("abcdef", range(1, 7), strict=True))
        names = ("alpha", "beta", "gamma", "delta")
        scope.owide = {f"{n}_long_key_name": i for i, n in enumerate(names, 1)} | {"eps": 5}
        scope.long, scope.exact80, scope.over80 = "x" * 100, "y" * 78, "z" * 79

    def work(scope: Any) -> None:
        touch(scope.s, scope.o6)
        scope.o2["c"] = 3
        del scope.l0
        scope.n = 43
        touch(scope.nul)

    def tail(scope: Any) -> None:
        touch(scope.n)

    chart = flow_chart("Seed", seed, "seed").add_function("Work", work, "work")
    rec = run(chart.add_function("Tail", tail, "tail").build())
    expected = reference("values")
    # JS `$update('o2', {c: 3})` does not read o2; in Python a nested assignment reads
    # o2 first (the update itself is told by what changed, as in footprintjs)
    i = expected.index(("step", 1, "Step 3: Update o2 = {c}"))
    expected[i : i + 4] = [
        ("step", 1, "Step 3: Read o2 = {a, b}"),
        ("step", 1, "Step 4: Update o2 = {c}"),
        ("step", 1, "Step 5: Delete l0"),
        ("step", 1, "Step 6: Write n = 43"),
        ("step", 1, "Step 7: Read nul = null"),
    ]
    assert rec.entries() == expected


# ── deciders ──────────────────────────────────────────────────────────────────────────


def loan_chart(rules: list[dict[str, Any]], default: Any) -> Any:
    """Seed sets score/dti/tier/ssn; Route decides among approve/review/reject."""

    def seed(scope: Any) -> None:
        scope.score, scope.dti, scope.tier, scope.ssn = 720, 0.5, "gold", "123-45-6789"

    def lane(name: str) -> Callable[[Any], None]:
        def branch(scope: Any) -> None:
            scope.lane = name

        return branch

    return (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Route", lambda scope: decide(scope, rules, default), "route")
        .add_function_branch("approve", "Approve", lane("approve"))
        .add_function_branch("review", "Review", lane("review"))
        .add_function_branch("reject", "Reject", lane("reject"))
        .set_default("reject")
        .end()
        .build()
    )


def _raises(message: str, *reads: str) -> Callable[[Any], bool]:
    def rule(scope: Any) -> bool:
        touch(*(scope[k] for k in reads))
        raise ValueError(message)

    return rule


DECIDE_CASES: dict[str, tuple[list[dict[str, Any]], Any]] = {
    "decide_filter_matched": (
        [
            {
                "when": {"score": {"gte": 700}, "dti": {"lt": 0.43}},
                "then": "approve",
                "label": "Prime",
            },
            {
                "when": {
                    "score": {"gte": 650},
                    "tier": {"in": ["gold", "silver"]},
                    "dti": {"lte": 0.5},
                },
                "then": "review",
                "label": "Near-prime",
            },
        ],
        "reject",
    ),
    "decide_filter_unlabeled": (
        [{"when": {"tier": {"eq": "gold"}, "score": {"ne": 0}}, "then": "approve"}],
        "reject",
    ),
    "decide_default": (
        [
            {"when": {"score": {"gt": 800}}, "then": "approve", "label": "Excellent"},
            {"when": {"tier": {"not_in": ["gold"]}}, "then": "review", "label": "Not gold"},
        ],
        "reject",
    ),
    "decide_default_label": (
        [{"when": {"score": {"lt": 300}}, "then": "approve", "label": "Low"}],
        {"branch": "reject", "label": "Nothing matched"},
    ),
    "decide_function": (
        [
            {
                "when": {"score": {"gte": 700}, "dti": {"lt": 0.43}},
                "then": "approve",
                "label": "Prime",
            },
            {
                "when": lambda s: s.score > 700 and s.ssn != "",
                "then": "review",
                "label": "Near-prime",
            },
        ],
        "reject",
    ),
    "decide_function_unlabeled": (
        [{"when": lambda s: s.tier == "gold", "then": "approve"}],
        "reject",
    ),
    "decide_function_error": (
        [
            {"when": _raises("bad rule", "score"), "then": "approve", "label": "Broken"},
            {"when": _raises("also bad"), "then": "review", "label": "Broken2"},
            {"when": {"score": {"lt": 0}}, "then": "review", "label": "Negative"},
        ],
        "reject",
    ),
    "decide_one_error": (
        [{"when": _raises("bad rule"), "then": "approve", "label": "Broken"}],
        "reject",
    ),
    "decide_empty_filter": ([{"when": {}, "then": "approve", "label": "Empty"}], "reject"),
}


ENGINE_GAPS: dict[str, str] = {}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, marks=pytest.mark.xfail(reason=ENGINE_GAPS[c], strict=True)) if c in ENGINE_GAPS else c
        for c in sorted(DECIDE_CASES)
    ],
)
def test_decide(case: str) -> None:
    """decide() filter and function rules, defaults and errors, worded as footprintjs."""
    rules, default = DECIDE_CASES[case]
    rec = run(loan_chart(rules, default), redaction=Redaction(keys={"ssn"}))
    assert rec.entries() == reference(case)


def plain_decider_chart(description: str | None) -> Any:
    """Seed → decider "Pick mode" returning the mode → branch → After."""

    def seed(scope: Any) -> None:
        scope.mode = "fast"

    def speed(v: int) -> Callable[[Any], None]:
        def branch(scope: Any) -> None:
            scope.speed = v

        return branch

    return (
        flow_chart("Seed", seed, "seed")
        .add_decider_function("Pick mode", lambda s: s.mode, "pick", description=description)
        .add_function_branch("fast", "Fast lane", speed(10))
        .add_function_branch("slow", "Slow lane", speed(1))
        .end()
        .add_function("After", lambda s: touch(s.speed), "after", description="wrap things up")
        .build()
    )


@pytest.mark.parametrize(
    ("case", "description"),
    [("decider_plain", None), ("decider_plain_described", "checked the mode")],
)
def test_plain_decider(case: str, description: str | None) -> None:
    """A decider returning a branch id, with and without a description."""
    assert run(plain_decider_chart(description)).entries() == reference(case)


# ── loops and pauses ──────────────────────────────────────────────────────────────────


def loop_pause_chart() -> Any:
    """The research §9 chart: Seed → Work → Check (loop to Work / pause at Approve)."""

    def seed(scope: Any) -> None:
        scope.count, scope.items = 0, []

    def work(scope: Any) -> None:
        scope.count = scope.count + 1
        scope.items = [*scope.items, "item"]

    def again(scope: Any) -> None:
        scope.note = "looping"

    def ask(scope: Any) -> Any:
        scope.status = "awaiting"
        return {"question": "ok?"}

    def answer(scope: Any, data: Any) -> None:
        scope.approved = data["approved"]
        scope.status = "approved"

    rules = [{"when": {"count": {"lt": 2}}, "then": "again", "label": "Need more"}]
    return (
        flow_chart("Seed", seed, "seed")
        .add_function("Work", work, "work")
        .add_decider_function("Check", lambda s: decide(s, rules, "done"), "check")
        .add_function_branch("again", "Again", again, loop_to="work")
        .add_pausable_function_branch("done", "Approve", Pausable(execute=ask, resume=answer))
        .set_default("done")
        .end()
        .build()
    )


def resume_both_ways(case: str, chart: Any, answer: Any) -> None:
    """Pause, then resume with the same recorder, with a new one (the checkpoint carries the
    count: it goes on as footprintjs's same executor does) and with a new one under another id
    (it starts over, as footprintjs's fresh executor does); compare all four."""
    rec = narrative()
    result = chart.run(recorders=[rec])
    assert result.paused
    assert rec.entries() == reference(case)
    fresh = narrative(id="fresh-executor")
    chart.resume(result.checkpoint, answer, recorders=[fresh])
    assert fresh.entries() == reference(case, "entries_fresh_executor_resume")
    carried = narrative()
    chart.resume(result.checkpoint, answer, recorders=[carried])
    assert carried.entries() == reference(case, "entries_after_same_executor_resume")[len(reference(case)) :]
    chart.resume(result.checkpoint, answer, recorders=[rec])
    assert rec.entries() == reference(case, "entries_after_same_executor_resume")


def test_loop_pause_and_resume() -> None:
    """Loop wording, the default fallback to a pausable branch, pause and both resumes."""
    resume_both_ways("loop_pause", loop_pause_chart(), {"approved": False})


def test_loop_with_described_target() -> None:
    """A described loop target: "On pass N: desc again." and "Looped back: desc (pass N)."."""

    def seed(scope: Any) -> None:
        scope.n = 0

    def tick(scope: Any) -> None:
        scope.n = scope.n + 1

    def stop(scope: Any) -> None:
        scope.done = True

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_function("Tick", tick, "tick", description="count one more")
        .add_decider_function("More?", lambda s: "again" if s.n < 3 else "stop", "more")
        .add_function_branch("again", "Again", lambda s: touch(s.n), loop_to="tick")
        .add_function_branch("stop", "Stop", stop)
        .end()
        .build()
    )
    assert run(chart).entries() == reference("loop_described")


def test_pause_linear_resumed_without_input() -> None:
    """A described pausable stage; its paused half's steps are never told."""

    def seed(scope: Any) -> None:
        scope.x = 1

    def ask(scope: Any) -> Any:
        touch(scope.x)
        scope.status = "awaiting"
        return {"q": "approve?"}

    def done(scope: Any, _data: Any) -> None:
        scope.status = "done"

    chart = (
        flow_chart("Seed", seed, "seed")
        .add_pausable_function("Approve", Pausable(execute=ask, resume=done), "approve", description="get a human ok")
        .add_function("Finish", lambda s: touch(s.status), "finish")
        .build()
    )
    resume_both_ways("pause_linear", chart, None)
