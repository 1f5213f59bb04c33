"""The ``Agent``'s public run hooks: what durable, streaming and mcp use instead of private members."""

from __future__ import annotations

from typing import Any

import attrs
from agent_helpers import build, call, calls, weather_tool

from agent.providers import mock


def test_with_config_keeps_the_listeners_and_settings() -> None:
    """``with_config`` makes the same agent on another config: ``on`` listeners, store, timeout carried over."""
    agent, _ = build(["hi"], provider=mock("hi"), timeout=5.0)
    heard: list[str] = []
    agent.on("turn.end", lambda name, payload: heard.append(payload["final_content"]))
    other = agent.with_config(attrs.evolve(agent.config, ask_policy="refuse"))
    assert other.config.ask_policy == "refuse" and other.timeout == 5.0 and other.store is agent.store
    assert other.run("x") == "hi" and heard == ["hi"]


def test_chart_options_are_what_a_run_passes_the_chart() -> None:
    """One segment's chart options: the recorders, the loop cap (tool rounds + 2), timeout, redaction, env."""
    agent, _ = build(["hi"], provider=mock("hi"), max_iterations=3)
    recorders = agent.run_recorders()
    options = agent.chart_options(recorders, env={"agent_run_id": "r1"})
    assert options == {
        "env": {"agent_run_id": "r1"},
        "recorders": recorders,
        "max_iterations": 5,
        "timeout": None,
        "redaction": None,
    }
    assert "env" not in agent.chart_options(recorders)


def test_run_recorders_put_the_narrative_first_and_attach_wraps_them() -> None:
    """The narrative recorder leads (``finish_run`` reads its lines); ``attach`` sees and may extend the list."""
    agent, _ = build(["hi"], provider=mock("hi"))
    marker = object()
    seen: list[Any] = []

    def attach(recorders: list[Any]) -> list[Any]:
        seen.extend(recorders)
        return [*recorders, marker]

    recorders = agent.run_recorders(attach)
    assert recorders[-1] is marker and recorders[0] is seen[0] and callable(recorders[0].lines)


def test_arun_turn_and_finish_run_are_a_whole_turn() -> None:
    """``arun_turn`` on a checked input runs the turn as ``run`` does, and ``finish_run`` keeps the snapshot."""
    import asyncio

    from agent.durable import make_input

    agent, _ = build([calls(call("c1", "weather", city="Paris")), "Sunny."], weather_tool())
    assert asyncio.run(agent.arun_turn(make_input("weather?"))) == "Sunny."
    assert agent.last_snapshot().shared_state["final_content"] == "Sunny."
