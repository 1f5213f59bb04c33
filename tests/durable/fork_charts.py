"""A chart with a loop, a decider, a subflow and a parallel fork, whose stages can be told
to write a patch at a given runtime id (the oracle a fork is checked against)."""

from __future__ import annotations

from typing import Any

from flowchart import FlowChart, flow_chart

#: the patch the oracle run writes, and where: ``{"after": rid}`` at the end of that stage's
#: body, ``{"before": rid}`` at its start
INJECT: dict[str, Any] = {}


def _inject(scope: Any, ctx: Any, when: str) -> None:
    if INJECT.get(when) == ctx.runtime_stage_id:
        for key, value in INJECT["patch"].items():
            scope[key] = value


def stage(body: Any) -> Any:
    def run(scope: Any, ctx: Any) -> Any:
        _inject(scope, ctx, "before")
        out = body(scope)
        _inject(scope, ctx, "after")
        return out

    run.__name__ = body.__name__
    return run


def seed(scope: Any) -> None:
    scope.n = 0
    scope.total = 0
    scope.limit = 3


def work(scope: Any) -> None:
    scope.n = scope.n + 1
    scope.total = scope.total + scope.n


def check(scope: Any) -> str:
    return "again" if scope.n < scope.limit else "done"


def again(scope: Any) -> None:
    scope.laps = scope.get("laps", 0) + 1


def double(scope: Any) -> None:
    scope.t = scope.t * 2


def inc(scope: Any) -> None:
    scope.t = scope.t + 1


def after(scope: Any) -> None:
    scope.stage = "after"


def child_x(scope: Any) -> None:
    scope.out = scope.total + 1


def child_y(scope: Any) -> None:
    scope.out = scope.n * 10


def final(scope: Any) -> None:
    runs = scope.get("runs", {})
    scope.result = scope.total + scope.get("doubled", 0) + runs["x"]["out"] + runs["y"]["out"]


def inner() -> FlowChart:
    return flow_chart("Double", stage(double), "double").add_function("Inc", stage(inc), "inc").build()


def big_chart() -> FlowChart:
    """seed → work → check (again: loop to work | done: subflow Sub) → after (fork x, y) → final."""
    return (
        flow_chart("Seed", stage(seed), "seed")
        .add_function("Work", stage(work), "work")
        .add_decider_function("Check", stage(check), "check")
        .add_function_branch("again", "Again", stage(again), loop_to="work")
        .add_subflow_chart_branch(
            "done",
            inner(),
            mount_name="Sub",
            input_mapper=lambda s: {"t": s["total"]},
            output_mapper=lambda inner_state, parent: {"doubled": inner_state["t"]},
        )
        .end()
        .add_function("After", stage(after), "after")
        .add_list_of_function([("x", "X", stage(child_x)), ("y", "Y", stage(child_y))])
        .add_function("Final", stage(final), "final")
        .build()
    )
