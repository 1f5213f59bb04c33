"""The agent's errors: one tree under ``AgentError``, each class keeping its builtin base.

Law of this file: every error the ``agent`` package raises on purpose is an ``AgentError``
(``except AgentError`` catches them all), and each one is ALSO the builtin it always was
(``AgentBuildError`` is still a ``ValueError``), so existing ``except ValueError`` /
``except RuntimeError`` code keeps working. Messages say what was wrong and how to fix it.

::

    AgentError                              anything the agent package raises on purpose
    ├── AgentBuildError (ValueError)        the builder was given something it cannot build
    ├── ToolDefinitionError (ValueError)    define_tool / @tool cannot make a tool of it
    ├── AgentLoadError (CliError)           "MODULE:ATTR" does not name an Agent (agent.loading)
    ├── PolicyHaltError (RuntimeError)      the permission checker halted the run
    ├── OutputSchemaError (ValueError)      reserved: the final answer does not fit output_schema
    ├── ExplainError (ValueError)           the record holds no model call to explain
    ├── McpConnectionError (RuntimeError)   an MCP server could not be started or reached
    ├── McpToolError (RuntimeError)         an MCP tool answered with isError
    └── provider errors                     (agent/providers/errors.py draws their subtree)
        ├── ProviderError (RuntimeError)    any failure while talking to a model, and its kinds
        ├── ScriptError (ValueError)        scripted(...) was given a reply it cannot play
        ├── ProviderConfigError (ValueError) a provider was misconfigured
        └── ProviderDependencyError (ImportError) an HTTP provider without httpx

Errors about a checkpoint's shape are flowchart's ``CheckpointError``; errors about a
decision answering a pause are governance's ``ResumeDecisionError``: the agent raises
those as they are, so one ``except`` works for charts and agents alike.
"""

from __future__ import annotations

from typing import Any

from flowchart.cli_support import CliError


class AgentError(Exception):
    """Base of every error the ``agent`` package raises on purpose (see the tree above)."""


class AgentBuildError(AgentError, ValueError):
    """The agent builder was given something it cannot build."""


class ToolDefinitionError(AgentError, ValueError):
    """``define_tool`` was given something it cannot turn into a tool."""


class AgentLoadError(AgentError, CliError):
    """``MODULE:ATTR`` does not name an ``Agent`` (or a zero-argument function returning one).

    A ``CliError`` too, so the ``agent`` command prints it as one line and exits 2."""


class PolicyHaltError(AgentError, RuntimeError):
    """The permission checker halted the run (``PermissionDecision.halt``): no final answer.

    Message: ``Policy halt at tool '<tool_name>' (call <tool_call_id>): <reason>``. The model's
    tool result and the halt (``policy_halt``) are in the commit log; ``last_snapshot()`` has them.
    """

    code = "ERR_POLICY_HALT"

    def __init__(self, reason: str, tool_name: str, tool_call_id: str) -> None:
        super().__init__(f"Policy halt at tool '{tool_name}' (call {tool_call_id}): {reason}")
        self.reason = reason
        self.tool_name = tool_name
        self.tool_call_id = tool_call_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.reason, self.tool_name, self.tool_call_id))


class ExplainError(AgentError, ValueError):
    """The record holds no model call to explain (or ``call=N`` names none)."""


class McpConnectionError(AgentError, RuntimeError):
    """The MCP server could not be started or reached (the message names it and the cause)."""


class McpToolError(AgentError, RuntimeError):
    """An MCP tool answered with ``isError``: the message is the server's text."""
