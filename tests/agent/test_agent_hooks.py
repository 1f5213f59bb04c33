"""The segment runner (``agent.segments``): what durable, streaming and conversations run an agent's chart through."""

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
    recorders = agent.segments.recorders()
    options = agent.segments.options(recorders, env={"agent_run_id": "r1"})
    assert options == {
        "env": {"agent_run_id": "r1"},
        "recorders": recorders,
        "max_iterations": 5,
        "timeout": None,
        "redaction": None,
    }
    assert "env" not in agent.segments.options(recorders)


def test_run_recorders_put_the_narrative_first_and_attach_wraps_them() -> None:
    """The narrative recorder leads (``segments.finish`` reads its lines); ``attach`` sees and may extend the list."""
    agent, _ = build(["hi"], provider=mock("hi"))
    marker = object()
    seen: list[Any] = []

    def attach(recorders: list[Any]) -> list[Any]:
        seen.extend(recorders)
        return [*recorders, marker]

    recorders = agent.segments.recorders(attach)
    assert recorders[-1] is marker and recorders[0] is seen[0] and callable(recorders[0].lines)


def test_arun_turn_and_finish_run_are_a_whole_turn() -> None:
    """``segments.arun_turn`` runs a checked input as ``run`` does; ``segments.finish`` keeps the snapshot."""
    import asyncio

    from agent._run.durable import make_input

    agent, _ = build([calls(call("c1", "weather", city="Paris")), "Sunny."], weather_tool())
    assert asyncio.run(agent.segments.arun_turn(make_input("weather?"))) == "Sunny."
    assert agent.last_snapshot().shared_state["final_content"] == "Sunny."
