"""The agent's record of what a real server left out, and of its own wrap-up decision.

Usage a server did not report is unknown, not 0: the totals leave the call out and
``usage_not_reported`` says so, in the state, the commit log and the narrative (absent when
every call reported). The wrap-up decision is narrated with the evidence it read, never
``": ,"``. The demo saves its trace whether or not the run paused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent import Agent, define_tool
from agent.providers import LLMResponse, ToolCall, Usage, scripted
from flowchart.recorders.sentences import decision

from .test_agent_round_trip import CITY_SCHEMA, OPENAI, QUESTION, WeatherTool, build_agent, ops_at
from .wire import Reply, WireServer

REPO = Path(__file__).resolve().parents[2]
BARE_TOOL_CALL = Reply(
    json={
        "choices": [
            {
                "index": 0,
                "message": {
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
)


def test_a_call_without_usage_is_left_out_of_the_totals_and_said(server: WireServer) -> None:
    """Call 1 reports no usage, call 2 does: totals are call 2's, ``usage_not_reported`` names iteration 1."""
    server.push(BARE_TOOL_CALL, OPENAI.answer)  # OPENAI.answer reports 20 in / 7 out
    agent = build_agent(OPENAI.make(server.url), WeatherTool())
    events: list[tuple[str, Any]] = []
    agent.on("llm.end", lambda name, payload: events.append((name, payload)))

    agent.run(QUESTION)
    state = agent.last_snapshot().shared_state
    assert (state["total_input_tokens"], state["total_output_tokens"]) == (20, 7)
    assert state["usage_not_reported"] == "usage not reported for iteration 1"
    assert ops_at(agent, "usage_not_reported") == [
        ("call-llm", {"path": ["usage_not_reported"], "verb": "set", "value": "usage not reported for iteration 1"})
    ]
    # the call-llm stage first reads the (absent) key — a recorded, narrated read — then writes it
    said = [line for line in agent.last_snapshot().narrative if "Write usage_not_reported" in line]
    wrote = 'Write usage_not_reported = "usage not reported for iteration 1"'
    assert [line.split(": ", 1)[1] for line in said] == [wrote]
    assert ["usage" in payload for _name, payload in events] == [False, True]


def test_every_call_without_usage_is_listed() -> None:
    """Several unreported calls are listed in order; the totals stay at what was reported (0)."""
    call = ToolCall("c1", "weather", {"city": "Paris"})
    provider = scripted(
        [
            LLMResponse("", (call,), usage=None, finish_reason="tool_use"),
            LLMResponse("", (ToolCall("c2", "weather", {"city": "Oslo"}),), usage=None, finish_reason="tool_use"),
            LLMResponse("done", usage=Usage(3, 1)),
        ]
    )
    agent = build_agent(provider, WeatherTool())
    assert agent.run(QUESTION) == "done"
    state = agent.last_snapshot().shared_state
    assert state["usage_not_reported"] == "usage not reported for iterations 1, 2"
    assert (state["total_input_tokens"], state["total_output_tokens"]) == (3, 1)


def test_turn_end_says_which_calls_the_totals_miss() -> None:
    """``turn.end`` carries ``usage_not_reported`` next to the totals when a call reported none."""
    seen: list[Any] = []
    agent = build_agent(scripted([LLMResponse("hi", usage=None)]), WeatherTool())
    agent.on("turn.end", lambda _name, payload: seen.append(payload))
    agent.run(QUESTION)
    assert seen[0]["usage_not_reported"] == "usage not reported for iteration 1"
    assert (seen[0]["total_input_tokens"], seen[0]["total_output_tokens"]) == (0, 0)


def test_reported_usage_writes_no_key(server: WireServer) -> None:
    """Absent means byte-identical: when every call reports usage there is no ``usage_not_reported``."""
    server.push(OPENAI.tool_call, OPENAI.answer)
    agent = build_agent(OPENAI.make(server.url), WeatherTool())
    agent.run(QUESTION)
    assert "usage_not_reported" not in agent.last_snapshot().shared_state
    assert ops_at(agent, "usage_not_reported") == []


# --- the wrap-up decision's narration ---------------------------------------------------------


def test_the_wrap_up_decision_is_narrated_with_the_budget_it_read() -> None:
    """Budget spent, a call pending: the wrap-up rule's narration shows what it read — the budget
    and the (absent, so ``undefined``) ``wrap_up_asked`` flag — never an empty ``": ,"``."""
    weather = define_tool(name="weather", description="d", input_schema=CITY_SCHEMA, execute=WeatherTool())
    call = {"id": "c1", "name": "weather", "args": {"city": "Paris"}}
    agent = (
        Agent.create(provider=scripted([{"tool_calls": [call]}, "From what I know: sunny."]), model="m")
        .tool(weather)
        .max_iterations(1)
        .build()
    )
    assert agent.run(QUESTION) == "From what I know: sunny."
    conditions = [line for line in agent.last_snapshot().narrative if line.startswith("[Condition]")]
    assert conditions[0] == (
        '[Condition]: It examined "max_iterations reached with tool calls pending — asking for a wrap-up": '
        "iteration=1, max_iterations=1, wrap_up_asked=undefined, and chose WrapUp."
    )
    assert all(": ," not in line for line in agent.last_snapshot().narrative)


def test_a_function_rule_that_read_nothing_has_no_empty_inputs() -> None:
    """A matched function rule with no recorded reads: ``It examined "label", and chose X.`` (no ``": ,"``)."""
    evidence = {"rules": [{"type": "function", "rule_index": 0, "matched": True, "label": "always", "inputs": []}]}
    assert decision("Go", None, None, evidence) == '[Condition]: It examined "always", and chose Go.'
    unlabeled = {"rules": [{"type": "function", "rule_index": 0, "matched": True, "inputs": []}]}
    assert decision("Go", None, None, unlabeled) == "[Condition]: It examined, and chose Go."


# --- the demo's trace ---------------------------------------------------------------------------


def test_the_demo_saves_its_trace_when_the_run_does_not_pause(server: WireServer, tmp_path: Path) -> None:
    """A real model that answers at once (no pause): the demo still saves ``support.trace.json``."""
    server.push(
        Reply(json={"choices": [{"index": 0, "message": {"content": "Hello!"}, "finish_reason": "stop"}]}),
    )
    env = {
        **os.environ,
        "PROVIDER": "openai",
        "OPENAI_BASE_URL": f"{server.url}/v1",
        "OPENAI_API_KEY": "",
        "RUNS_DIR": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "examples/support_agent.py"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert f"trace      : {tmp_path / 'support.trace.json'}" in done.stdout
    assert (tmp_path / "support.trace.json").is_file()
    assert not (tmp_path / "support.paused.trace.json").exists()
