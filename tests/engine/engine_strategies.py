"""The random-chart plan of the engine properties and the builder that interprets it: random
stages, deciders, loops and forks doing random writes (the JSON values come from
``tests/strategies.py``, the one strategies module)."""

from __future__ import annotations

from typing import Any

import strategies
from hypothesis import strategies as st

from flowchart import FlowChart, flow_chart

KEYS = ("a", "b", "c", "d")
SUBKEYS = ("x", "y")

# a tiny domain, so writes collide (the same value again, 1 vs 1.0 vs True)
json_values = strategies.json_values(
    5,
    scalars=strategies.json_scalars(
        ints=st.integers(-3, 3),
        floats=st.floats(-2, 2, allow_nan=False, allow_infinity=False),
        text=st.text(alphabet="ab", max_size=2),
    ),
    keys=st.sampled_from(SUBKEYS),
    max_size=3,
)

#: (kind, key, subkey, value)
actions = st.lists(
    st.tuples(
        st.sampled_from(["set", "delete", "nested", "append", "pop", "deldict", "revert"]),
        st.sampled_from(KEYS),
        st.sampled_from(SUBKEYS),
        json_values,
    ),
    max_size=4,
)

segments = st.lists(
    st.one_of(
        st.tuples(st.just("write"), actions),
        st.tuples(st.just("decider"), actions, actions, actions),
        st.tuples(st.just("loop"), actions, st.integers(min_value=1, max_value=3)),
        st.tuples(st.just("fork"), st.lists(actions, min_size=1, max_size=3)),
    ),
    max_size=5,
)


def apply_actions(scope: Any, todo: list[tuple[str, str, str, Any]]) -> None:
    """Perform random writes through every kind of scope mutation."""
    for kind, key, sub, value in todo:
        current = scope[key] if key in scope else None
        if kind == "set":
            scope[key] = value
        elif kind == "delete":
            if key in scope:
                del scope[key]
        elif kind == "nested":
            if isinstance(current, dict):
                current[sub] = value
            else:
                scope[key] = {sub: value}
        elif kind == "append":
            if isinstance(current, list):
                current.append(value)
            else:
                scope[key] = [value]
        elif kind == "pop":
            if isinstance(current, list) and current:
                current.pop()
        elif kind == "deldict":
            if isinstance(current, dict) and sub in current:
                del current[sub]
        elif kind == "revert" and key in scope:
            before = current.copy() if isinstance(current, dict | list) else current
            scope[key] = value
            scope[key] = before


def build_random_chart(plan: list[Any], root: Any, stage: Any) -> FlowChart:
    """Turn a plan (from ``segments``) into a chart.

    ``root(scope)`` runs first; ``stage(todo, in_fork)`` makes a ``fn(scope, ctx)`` from actions.
    """
    builder = flow_chart("Root", root, "root")
    for i, segment in enumerate(plan):
        kind = segment[0]
        if kind == "write":
            builder = builder.add_function(f"W{i}", stage(segment[1], False), f"w{i}")
        elif kind == "decider":
            _, own, left, right = segment

            own_body = stage(own, False)

            def choose(scope: Any, ctx: Any, body: Any = own_body, i: int = i) -> str:
                body(scope, ctx)
                a = scope["a"] if "a" in scope else None
                return f"left{i}" if type(a) is int else f"right{i}"

            builder = (
                builder.add_decider_function(f"D{i}", _two_args(choose), f"d{i}")
                .add_function_branch(f"left{i}", "Left", stage(left, False))
                .add_function_branch(f"right{i}", "Right", stage(right, False))
                .set_default(f"right{i}")
                .end()
            )
        elif kind == "loop":
            _, body_actions, passes = segment
            counter = f"n{i}"

            def again(scope: Any, counter: str = counter, passes: int = passes, i: int = i) -> str:
                scope[counter] = (scope[counter] if counter in scope else 0) + 1
                return f"again{i}" if scope[counter] < passes else f"exit{i}"

            builder = (
                builder.add_function(f"L{i}", stage(body_actions, False), f"loop{i}")
                .add_decider_function(f"LD{i}", _one_arg(again), f"ld{i}")
                .add_function_branch(f"again{i}", "Again", lambda s: None, loop_to=f"loop{i}")
                .add_function_branch(f"exit{i}", "Exit", lambda s: None)
                .end()
            )
        else:
            children = [(f"f{i}c{j}", f"Child {j}", stage(todo, True)) for j, todo in enumerate(segment[1])]
            builder = builder.add_function(f"F{i}", lambda s: None, f"fork{i}").add_list_of_function(children)
    return builder.build()


def _one_arg(fn: Any) -> Any:
    """Hide defaulted parameters so the engine sees ``fn(scope)``."""
    return lambda scope: fn(scope)


def _two_args(fn: Any) -> Any:
    """Hide defaulted parameters so the engine sees ``fn(scope, ctx)``."""
    return lambda scope, ctx: fn(scope, ctx)
