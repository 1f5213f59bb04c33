"""Builder refusals and run-boundary refusals, each with its pinned message."""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest
from agent_helpers import build, weather_tool

from agent import Agent, AgentBuildError
from agent.providers import scripted
from governance import allow


def test_duplicate_tool_name() -> None:
    """Two tools with one name are refused, naming it."""
    builder = Agent.create(provider=scripted([]), model="m").tool(weather_tool())
    with pytest.raises(AgentBuildError, match=r"^duplicate tool name 'weather': each tool needs its own name$"):
        builder.tool(weather_tool())


@pytest.mark.parametrize("count", [0, -1, 1.5, True, "3", None])
def test_max_iterations_must_be_a_positive_integer(count: Any) -> None:
    """max_iterations refuses zero, negatives, floats, bools, strings and None."""
    builder = Agent.create(provider=scripted([]), model="m")
    with pytest.raises(
        AgentBuildError, match=rf"^max_iterations must be a positive integer, got {_escape(repr(count))}$"
    ):
        builder.max_iterations(count)


def _escape(text: str) -> str:
    import re

    return re.escape(text)


@pytest.mark.parametrize("provider", [None, object(), NS(name="x")])
def test_a_provider_is_required(provider: Any) -> None:
    """No provider (or one without complete) is refused at build."""
    with pytest.raises(
        AgentBuildError,
        match=r"^Agent\.create\(provider=\.\.\.\): a provider with a complete\(request\) method is required$",
    ):
        Agent.create(provider=provider, model="m").build()


def test_model_must_be_a_non_empty_string() -> None:
    """An empty model name is refused."""
    with pytest.raises(AgentBuildError, match=r"^Agent\.create\(model=\.\.\.\): model must be a non-empty string$"):
        Agent.create(provider=scripted([]), model="").build()


def test_a_non_tool_is_refused() -> None:
    """.tool() takes only a Tool from define_tool."""
    with pytest.raises(
        AgentBuildError, match=r"^tool\(\.\.\.\): expected a Tool from define_tool\(\.\.\.\), got dict$"
    ):
        Agent.create(provider=scripted([]), model="m").tool({"name": "x"})  # type: ignore[arg-type]


def test_tool_middleware_without_a_name() -> None:
    """A tool middleware with no name is refused at build, naming its position."""
    builder = Agent.create(provider=scripted([]), model="m").tool_middleware(NS(on_tool_call=lambda c: allow()))
    with pytest.raises(
        AgentBuildError,
        match=r"^tool middleware #0 \(SimpleNamespace\) has no 'name' attribute: give it a non-empty string "
        r"'name'; it labels every ledger row the middleware files$",
    ):
        builder.build()


def test_tool_middleware_without_a_hook() -> None:
    """A tool middleware with a name but no hook is refused at build."""
    builder = Agent.create(provider=scripted([]), model="m").tool_middleware(NS(name="idle"))
    with pytest.raises(
        AgentBuildError,
        match=r"^tool middleware 'idle' has neither on_tool_call nor on_tool_result: give it at least one hook "
        r"\(on_tool_call decides before the tool runs, on_tool_result after\)$",
    ):
        builder.build()


def test_message_middleware_without_a_hook() -> None:
    """A message middleware without on_message is refused at build."""
    builder = Agent.create(provider=scripted([]), model="m").message_middleware(NS(name="quiet"))
    with pytest.raises(
        AgentBuildError,
        match=r"^message middleware 'quiet' has no on_message hook: give it on_message\(msg\) returning allow\(\), "
        r"allow\(text, why\) or deny\(reason\)$",
    ):
        builder.build()


def test_minimal_evidence_with_a_scorer_is_refused() -> None:
    """check_in(evidence="minimal", scorer=...) is refused at build."""
    builder = Agent.create(provider=scripted([]), model="m").check_in(evidence="minimal", scorer=lambda s: [])
    with pytest.raises(
        AgentBuildError, match=r'^check_in\(evidence="minimal", scorer=\.\.\.\): a scorer has no effect'
    ):
        builder.build()


def test_a_permission_checker_without_check_is_refused() -> None:
    """A permission checker with no check() is refused at build."""
    with pytest.raises(
        AgentBuildError,
        match=r"^permission_checker \(SimpleNamespace\) has no check\(request\) method: give it check\(request\) "
        r"returning PermissionDecision\.allow\(\), \.deny\(rationale\) or \.halt\(reason\)$",
    ):
        Agent.create(provider=scripted([]), model="m", permission_checker=NS()).build()


@pytest.mark.parametrize("message", ["", "   ", "\n\t"])
def test_blank_message_is_refused_before_any_provider_call(message: str) -> None:
    """agent.run refuses a blank message and the provider is never called."""
    agent, provider = build(["never"])
    with pytest.raises(ValueError, match=r"^agent\.run\(message\): the message must be a non-empty string$"):
        agent.run(message)
    assert provider.requests == []


def test_a_non_string_message_is_refused() -> None:
    """agent.run refuses a message that is not a string."""
    agent, provider = build(["never"])
    with pytest.raises(ValueError, match=r"^agent\.run\(message\): the message must be a non-empty string$"):
        agent.run(42)  # type: ignore[arg-type]
    assert provider.requests == []


def test_last_snapshot_before_any_run() -> None:
    """last_snapshot() before the first run says so."""
    agent, _ = build([])
    with pytest.raises(RuntimeError, match=r"^last_snapshot\(\): the agent has not run yet$"):
        agent.last_snapshot()


def test_unknown_event_name_is_refused() -> None:
    """agent.on refuses an event name that does not exist."""
    agent, _ = build([])
    with pytest.raises(ValueError, match=r"^unknown agent event 'tool\.done'; known: turn\.start, "):
        agent.on("tool.done", lambda n, p: None)


def test_system_prompt_must_be_a_string() -> None:
    """.system() takes a string."""
    with pytest.raises(AgentBuildError, match=r"^system\(prompt\): expected a string, got int$"):
        Agent.create(provider=scripted([]), model="m").system(3)  # type: ignore[arg-type]


def test_running_out_of_replies_says_so() -> None:
    """A scripted provider out of replies raises, naming how many were scripted."""
    from agent.providers import ScriptExhaustedError

    agent, _ = build([])
    with pytest.raises(
        ScriptExhaustedError,
        match=r"^scripted provider exhausted: 0 replies were scripted but request #1 asked for another; "
        r"add a reply to the script$",
    ):
        agent.run("hi")
