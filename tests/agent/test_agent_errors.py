"""The agent's error tree (``agent/errors.py``): one ``AgentError`` base, every builtin base kept."""

from __future__ import annotations

import importlib
import inspect
import pickle
import pkgutil

import pytest

import agent
from agent import AgentBuildError, AgentError, ExplainError, PolicyHaltError, ToolDefinitionError
from agent.errors import AgentLoadError, McpConnectionError, McpToolError, OutputSchemaError
from agent.providers import ProviderConfigError, ProviderDependencyError, ProviderError, ScriptError
from flowchart._cli_support import CliError

# signals and private helpers that are not errors a user catches
NOT_ERRORS = {"AskHumanSignal", "UnsupportedAnnotation", "_Retry"}
OPTIONAL = {"agent.mcp.client", "agent.mcp.server", "agent.mcp", "agent.celery"}


def _agent_exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(agent.__path__, "agent."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:
            if info.name in OPTIONAL:
                continue
            raise
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__.startswith("agent"):
                found[name] = value
    return found


def test_every_agent_error_class_is_an_agent_error() -> None:
    """Each exception class the agent package defines (signals aside) joins the tree under ``AgentError``."""
    classes = _agent_exception_classes()
    assert {"AgentBuildError", "PolicyHaltError", "ProviderError", "ToolDefinitionError"} <= set(classes)
    assert sorted(n for n, c in classes.items() if n not in NOT_ERRORS and not issubclass(c, AgentError)) == []


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (AgentBuildError, ValueError),
        (ToolDefinitionError, ValueError),
        (ExplainError, ValueError),
        (OutputSchemaError, ValueError),
        (PolicyHaltError, RuntimeError),
        (McpConnectionError, RuntimeError),
        (McpToolError, RuntimeError),
        (ProviderError, RuntimeError),
        (ScriptError, ValueError),
        (ProviderConfigError, ValueError),
        (ProviderDependencyError, ImportError),
        (AgentLoadError, CliError),
    ],
)
def test_each_error_keeps_its_builtin_base(error: type[Exception], builtin: type[Exception]) -> None:
    """``except ValueError`` (etc.) written before the tree existed still catches the error."""
    assert issubclass(error, AgentError) and issubclass(error, builtin)


def test_one_except_agent_error_catches_a_builder_refusal() -> None:
    """A builder refusal is caught by ``except AgentError`` and keeps its message."""
    from agent.providers import mock

    with pytest.raises(AgentError, match="max_iterations must be a positive integer, got 0"):
        agent.Agent.create(provider=mock("hi")).max_iterations(0)


def test_policy_halt_error_pickles_with_its_fields() -> None:
    """The halt error survives a process boundary (a Celery worker) with reason, tool and call id."""
    error = pickle.loads(pickle.dumps(PolicyHaltError("too risky", "wire", "c1")))
    assert (error.reason, error.tool_name, error.tool_call_id) == ("too risky", "wire", "c1")
    assert str(error) == "Policy halt at tool 'wire' (call c1): too risky"


def test_the_tree_drawn_in_the_docstring_names_every_class() -> None:
    """The module docstring's tree lists each class of ``agent.errors``."""
    import agent.errors as errors

    names = [n for n, c in vars(errors).items() if inspect.isclass(c) and issubclass(c, AgentError)]
    doc = errors.__doc__ or ""
    assert "OutputSchemaError" in names
    assert [n for n in names if n not in doc] == []
