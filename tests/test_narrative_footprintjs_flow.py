"""Our engine + narrative against footprintjs 9.24.0: forks, selectors, subflows, stops.

Same method as ``test_narrative_footprintjs.py`` (whose helpers this file reuses):
rebuild each fixture's chart, run it with ``narrative()``, compare entries byte for byte.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

flowchart = pytest.importorskip("flowchart")
if not hasattr(flowchart, "flow_chart"):  # the engine has not landed yet
    pytest.skip("flowchart.flow_chart is not available", allow_module_level=True)

from test_narrative_footprintjs import reference, resume_both_ways, run, touch  # noqa: E402

from flowchart import Pausable, flow_chart, select  # noqa: E402


def setter(**values: Any) -> Callable[[Any], None]:
    """A stage body that writes ``values`` in order."""

    def body(scope: Any) -> None:
        for key, value in values.items():
            scope[key] = value

    return body


# ── fork and selector ─────────────────────────────────────────────────────────────────


def test_fork() -> None:
    """A fork after a stage: the parent's line, [Parallel], then each child's stage."""

    def prep(scope: Any) -> None:
        touch(scope.x)
        scope.ready = True

    def alpha(scope: Any) -> None:
        touch(scope.x)
        scope.a = "A"

    def gamma(_scope: Any, ctx: Any) -> None:
        ctx.emit("gamma.done", {"ok": True})

    chart = (
        flow_chart("Seed", setter(x=1), "seed")
        .add_function("Prep", prep, "prep")
        .add_list_of_function([("a", "Alpha", alpha), ("b", "Beta", setter(b="B")), ("c", "Gamma", gamma)])
        .add_function("Join", setter(joined=True), "join")
        .build()
    )
    assert run(chart).entries() == reference("fork")


def selector_chart(pick: Callable[[Any], Any]) -> Any:
    """Seed → selector Pick over big/eu/vip → Done."""
    return (
        flow_chart("Seed", setter(amount=150, region="eu", vip=False), "seed")
        .add_selector_function("Pick", pick, "pick")
        .add_function_branch("big", "Big order", setter(bigFlag=True))
        .add_function_branch("eu", "EU rules", setter(vat=0.2))
        .add_function_branch("vip", "VIP", setter(perk="gift"))
        .end()
        .add_function("Done", setter(finished=True), "done")
        .build()
    )


def _pick_plain(scope: Any) -> list[str]:
    touch(scope.amount)
    return ["big", "eu"]


SELECT_CASES: dict[str, Callable[[Any], Any]] = {
    "select_evidence": lambda s: select(
        s,
        [
            {"when": {"amount": {"gt": 100}}, "then": "big", "label": "Large"},
            {"when": lambda sc: sc.region == "eu", "then": "eu", "label": "EU"},
            {"when": {"vip": {"eq": True}}, "then": "vip", "label": "VIP customer"},
            {"when": lambda sc: sc.amount > 10, "then": "vip"},
        ],
    ),
    "select_plain": _pick_plain,
    "select_one": lambda s: select(s, [{"when": {"amount": {"gt": 100}, "region": {"eq": "eu"}}, "then": "big"}]),
}


@pytest.mark.parametrize("case", sorted(SELECT_CASES))
def test_selector(case: str) -> None:
    """[Selected] with and without select() evidence; the selector gets no Stage line."""
    assert run(selector_chart(SELECT_CASES[case])).entries() == reference(case)


# ── subflows ──────────────────────────────────────────────────────────────────────────


def test_nested_subflows() -> None:
    """Entry with Input lines, numbering restarting per subflow, prefixed inner names."""
    deep = (
        flow_chart("DeepStart", lambda s: (touch(s.depth), setter(deepDone=True)(s)), "deep-start")
        .add_function("DeepEnd", setter(deepEnd=1), "deep-end")
        .build()
    )

    def polish(scope: Any) -> None:
        touch(scope.draft)
        scope.draft = "v2"

    inner = (
        flow_chart("Prep", lambda s: (touch(s.topic), setter(draft="v1")(s)), "prep")
        .add_function("Polish", polish, "polish")
        .add_subflow_chart_next("deep", deep, mount_name="Deep", input_mapper=lambda p: {"depth": 2})
        .add_function("Finish", setter(final="ok"), "finish")
        .build()
    )
    chart = (
        flow_chart("Seed", setter(topic="cats", meta={"a": 1, "b": 2}), "seed")
        .add_subflow_chart_next(
            "writer",
            inner,
            mount_name="Writer",
            input_mapper=lambda p: {"topic": p["topic"], "meta": p["meta"], "tags": ["x", "y"]},
            output_mapper=lambda out, parent: {"article": out["draft"]},
        )
        .add_function("Publish", lambda s: (touch(s.article), setter(published=True)(s)), "publish")
        .build()
    )
    assert run(chart).entries() == reference("subflow")


def test_described_subflow() -> None:
    """A subflow whose root has a description: "Entering X: desc." and "began: desc."."""
    inner = flow_chart("Step one", setter(k=1), "one", description="does the inner work").build()
    chart = (
        flow_chart("Seed", setter(go=True), "seed")
        .add_subflow_chart_next("helper", inner, mount_name="Helper")
        .add_function("After", setter(after=1), "after")
        .build()
    )
    assert run(chart).entries() == reference("subflow_described")


def test_decider_and_loop_inside_a_subflow() -> None:
    """Condition, loop and fork sentences inside a subflow use prefixed names."""
    rules = [{"when": {"i": {"lt": 2}}, "then": "more", "label": "Below two"}]
    inner = (
        flow_chart("Start", setter(i=0), "start")
        .add_function("Inc", lambda s: setter(i=s.i + 1)(s), "inc")
        .add_decider_function("Enough", lambda s: flowchart.decide(s, rules, "fan"), "enough")
        .add_function_branch("more", "More", setter(m=True), loop_to="inc")
        .add_function_branch("fan", "Fan", setter(f=True))
        .set_default("fan")
        .end()
        .build()
    )
    chart = (
        flow_chart("Seed", setter(x=1), "seed")
        .add_subflow_chart_next("sf", inner, mount_name="Inner")
        .add_function("Mid", setter(mid=1), "mid")
        .add_list_of_function([("p", "P", setter(p=1)), ("q", "Q", setter(q=1))])
        .build()
    )
    assert run(chart).entries() == reference("subflow_inner_control")


def test_subflow_branch_reentered_by_a_loop() -> None:
    """Re-entering a subflow restarts its numbering, but its stages still "loop back"."""
    small = flow_chart("Hello", setter(h=1), "hello").add_function("Bye", setter(b=1), "bye").build()
    chart = (
        flow_chart("Seed", setter(n=0), "seed")
        .add_function("Count", lambda s: setter(n=s.n + 1)(s), "count")
        .add_decider_function("Route", lambda s: "sub" if s.n < 3 else "end", "route")
        .add_subflow_chart_branch("sub", small, mount_name="Small")
        .add_function_branch("end", "End", setter(end=True))
        .end()
        .add_function("Gate", lambda s: touch(s.n), "gate")
        .add_decider_function("Again?", lambda s: "loop" if s.n < 3 else "stop", "again-q")
        .add_function_branch("loop", "Loop", setter(looped=True), loop_to="count")
        .add_function_branch("stop", "Stop", setter(stopped=True))
        .end()
        .build()
    )
    assert run(chart).entries() == reference("subflow_branch_loop")


def test_fork_and_selector_inside_a_subflow() -> None:
    """Fork children and selected names are prefixed; select evidence uses branch ids."""
    rules = [
        {"when": {"v": {"gt": 1}}, "then": "one", "label": "Big v"},
        {"when": {"v": {"gt": 10}}, "then": "two"},
    ]
    inner = (
        flow_chart("Start", setter(v=5), "start")
        .add_list_of_function([("l", "Left", setter(l=1)), ("r", "Right", setter(r=1))])
        .add_selector_function("Choose", lambda s: select(s, rules), "choose")
        .add_function_branch("one", "One", setter(one=True))
        .add_function_branch("two", "Two", setter(two=True))
        .end()
        .build()
    )
    chart = (
        flow_chart("Seed", setter(a=1), "seed")
        .add_subflow_chart_next("par", inner, mount_name="Par")
        .add_function("After", setter(after=1), "after")
        .build()
    )
    assert run(chart).entries() == reference("subflow_parallel")


def test_pause_inside_a_subflow() -> None:
    """Pause at a subflow stage; resume re-enters the subflow (no Input lines)."""

    def ask(scope: Any) -> Any:
        scope.asked = True
        return {"q": "ok?"}

    def answer(scope: Any, data: Any) -> None:
        scope.answer = data

    inner = (
        flow_chart("Prep", setter(h="h1"), "prep")
        .add_pausable_function("Ask", Pausable(execute=ask, resume=answer), "ask")
        .add_function("Wrap", lambda s: touch(s.answer), "wrap")
        .build()
    )
    chart = (
        flow_chart("Seed", setter(topic="T"), "seed")
        .add_subflow_chart_next(
            "agent",
            inner,
            mount_name="Agent",
            input_mapper=lambda p: {"topic": p["topic"]},
            output_mapper=lambda out, parent: {"result": out["answer"]},
        )
        .add_function("Done", lambda s: touch(s.result), "done")
        .build()
    )
    resume_both_ways("subflow_pause", chart, "yes")
