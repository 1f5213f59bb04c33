"""Charts with a pause in every place one may happen, shared by the in-process tests and
the fresh interpreter of the subprocess test (both import this module by name).

Every stage appends its label to ``calls`` (``"ask:execute"``, ``"ask:resume"``, the
mappers as ``"sf:input_mapper"``), so a test can assert exactly what ran, and how often.
Each factory builds a NEW chart: two calls give two charts with one fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flowchart import FlowChart, Pausable, flow_chart

Calls = list[str]


def plain(calls: Calls, label: str, key: str | None = None, value: Any = True) -> Callable[[Any], None]:
    """A stage that records ``label`` and writes ``key = value`` (``key`` defaults to the label)."""

    def fn(scope: Any) -> None:
        calls.append(label)
        scope[key or label] = value

    fn.__name__ = label
    return fn


def counter(calls: Calls, label: str, key: str) -> Callable[[Any], None]:
    """A stage that records ``label`` and adds one to ``key``."""

    def fn(scope: Any) -> None:
        calls.append(label)
        scope[key] = getattr(scope, key, 0) + 1

    return fn


def asking(calls: Calls, label: str) -> Pausable:
    """A pausable that writes ``<label>_asked`` and pauses with ``{"question": label, "n": ...}``;
    its resume writes ``<label>_answer`` (the resume input) and appends it to ``answers``."""

    def execute(scope: Any) -> Any:
        calls.append(f"{label}:execute")
        scope[f"{label}_asked"] = getattr(scope, f"{label}_asked", 0) + 1
        return {"question": label, "n": scope[f"{label}_asked"]}

    def resume(scope: Any, answer: Any) -> None:
        calls.append(f"{label}:resume")
        scope[f"{label}_answer"] = answer
        scope.answers = [*getattr(scope, "answers", []), answer]

    return Pausable(execute=execute, resume=resume)


def linear(calls: Calls) -> FlowChart:
    """seed → ask (pausable) → done."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_pausable_function("Ask", asking(calls, "ask"), "ask")
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def root(calls: Calls) -> FlowChart:
    """ask (the root stage is pausable) → done."""
    return flow_chart("Ask", asking(calls, "ask"), "ask").add_function("Done", plain(calls, "done"), "done").build()


def decider_next(calls: Calls) -> FlowChart:
    """seed → check ─ 'ask' (pausable) | 'skip' ─ then the decider's own next: after → done."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_decider_function("Check", lambda s: (calls.append("check"), "ask")[1], "check")
        .add_pausable_function_branch("ask", "Ask", asking(calls, "ask"))
        .add_function_branch("skip", "Skip", plain(calls, "skip"))
        .end()
        .add_function("After", plain(calls, "after"), "after")
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def decider_end(calls: Calls) -> FlowChart:
    """seed → check ─ 'ask' (pausable) | 'skip'; nothing after the decider: the run ends."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_decider_function("Check", lambda s: (calls.append("check"), "ask")[1], "check")
        .add_pausable_function_branch("ask", "Ask", asking(calls, "ask"))
        .add_function_branch("skip", "Skip", plain(calls, "skip"))
        .end()
        .build()
    )


def decider_loop(calls: Calls) -> FlowChart:
    """seed → work → check ─ again | ask (pausable) | stop (ctx.stop) ─ then loop_to('work').

    ``work`` counts ``n``; ``check`` picks 'again' for n < 2, 'ask' for n == 2, 'stop' after.
    """

    def check(scope: Any) -> str:
        calls.append("check")
        return "again" if scope.n < 2 else "ask" if scope.n == 2 else "stop"

    def stop(scope: Any, ctx: Any) -> None:
        calls.append("stop")
        ctx.stop("enough")

    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_function("Work", counter(calls, "work", "n"), "work")
        .add_decider_function("Check", check, "check")
        .add_function_branch("again", "Again", plain(calls, "again"))
        .add_pausable_function_branch("ask", "Ask", asking(calls, "ask"))
        .add_function_branch("stop", "Stop", stop)
        .end()
        .loop_to("work")
        .build()
    )


def branch_loop(calls: Calls) -> FlowChart:
    """seed → work → check ─ 'ask' (pausable, loop_to('work')) | 'done'; n == 1 asks, then done."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_function("Work", counter(calls, "work", "n"), "work")
        .add_decider_function("Check", lambda s: (calls.append("check"), "ask" if s.n < 2 else "done")[1], "check")
        .add_pausable_function_branch("ask", "Ask", asking(calls, "ask"), loop_to="work")
        .add_function_branch("done", "Done", plain(calls, "done"))
        .end()
        .build()
    )


def selector(calls: Calls) -> FlowChart:
    """seed → pick (selector: a, p, b) — p pauses; a and b write under runs/ — → done."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_selector_function("Pick", lambda s: (calls.append("pick"), ["a", "p", "b"])[1], "pick")
        .add_function_branch("a", "A", plain(calls, "a", "x", 1))
        .add_pausable_function_branch("p", "P", asking(calls, "p"))
        .add_function_branch("b", "B", plain(calls, "b", "x", 2))
        .end()
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def inner(calls: Calls, name: str = "inner") -> FlowChart:
    """prep → ask (pausable) → finish: the subflow that pauses."""
    return (
        flow_chart("Prep", plain(calls, f"{name}.prep", "prep"), "prep")
        .add_pausable_function("Ask", asking(calls, f"{name}.ask"), "ask")
        .add_function("Finish", plain(calls, f"{name}.finish", "finish"), "finish")
        .build()
    )


def mappers(calls: Calls, mount: str, give: str, take: str) -> dict[str, Any]:
    """Counting input/output mappers: ``give`` goes in as ``seed``, the whole inner state comes
    back under ``take``."""

    def input_mapper(parent: Any) -> dict[str, Any]:
        calls.append(f"{mount}:input_mapper")
        return {"seed": parent.get(give)}

    def output_mapper(sub: Any, parent: Any) -> dict[str, Any]:
        calls.append(f"{mount}:output_mapper")
        return {take: dict(sub)}

    return {"input_mapper": input_mapper, "output_mapper": output_mapper}


def fork(calls: Calls) -> FlowChart:
    """seed → fork of a (fn), sf (a subflow that pauses inside), b (fn) → done."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_list_of_function([("a", "A", plain(calls, "a", "x", 1))])
        .add_subflow_chart("sf", inner(calls), **mappers(calls, "sf", "seed", "from_sf"))
        .add_list_of_function([("b", "B", plain(calls, "b", "x", 2))])
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def subflow(calls: Calls) -> FlowChart:
    """seed → sf (prep → ask → finish) → done."""
    return (
        flow_chart("Seed", plain(calls, "seed", "seed", "s0"), "seed")
        .add_subflow_chart_next("sf", inner(calls), **mappers(calls, "sf", "seed", "from_sf"))
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def nested(calls: Calls) -> FlowChart:
    """seed → outer (o1 → mid (prep → ask → finish) → o2) → done: a pause two subflows deep."""
    middle = (
        flow_chart("O1", plain(calls, "outer.o1", "o1"), "o1")
        .add_subflow_chart_next("mid", inner(calls), **mappers(calls, "mid", "seed", "from_mid"))
        .add_function("O2", plain(calls, "outer.o2", "o2"), "o2")
        .build()
    )
    return (
        flow_chart("Seed", plain(calls, "seed", "seed", "s0"), "seed")
        .add_subflow_chart_next("outer", middle, **mappers(calls, "outer", "seed", "from_outer"))
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def twice(calls: Calls) -> FlowChart:
    """seed → ask1 → mid → ask2 → done: a resumed run pauses again."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_pausable_function("Ask 1", asking(calls, "ask1"), "ask1")
        .add_function("Mid", plain(calls, "mid"), "mid")
        .add_pausable_function("Ask 2", asking(calls, "ask2"), "ask2")
        .add_function("Done", plain(calls, "done"), "done")
        .build()
    )


def loop(calls: Calls) -> FlowChart:
    """seed → ask (pauses on every pass) → check ─ 'again' (loop_to('ask')) while fewer than 3
    answers | 'done'."""
    return (
        flow_chart("Seed", plain(calls, "seed"), "seed")
        .add_pausable_function("Ask", asking(calls, "ask"), "ask")
        .add_decider_function(
            "Check", lambda s: (calls.append("check"), "again" if len(s.answers) < 3 else "done")[1], "check"
        )
        .add_function_branch("again", "Again", plain(calls, "again"), loop_to="ask")
        .add_function_branch("done", "Done", plain(calls, "done"))
        .end()
        .build()
    )


CHARTS: dict[str, Callable[[Calls], FlowChart]] = {
    "linear": linear,
    "root": root,
    "decider_next": decider_next,
    "decider_end": decider_end,
    "decider_loop": decider_loop,
    "branch_loop": branch_loop,
    "selector": selector,
    "fork": fork,
    "subflow": subflow,
    "nested": nested,
    "twice": twice,
    "loop": loop,
}
