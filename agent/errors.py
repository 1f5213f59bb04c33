"""The agent's errors: one tree under ``AgentError``, each class keeping its builtin base.

Law of this file: every error the ``agent`` package raises on purpose is an ``AgentError``
(``except AgentError`` catches them all), and each one is ALSO the builtin it always was
(``AgentBuildError`` is still a ``ValueError``), so existing ``except ValueError`` /
``except RuntimeError`` code keeps working. Messages say what was wrong and how to fix it.

::

    AgentError                              anything the agent package raises on purpose
    ├── AgentBuildError (ValueError)        the builder was given something it cannot build
    ├── ToolDefinitionError (ValueError)    define_tool / @tool cannot make a tool of it
    ├── AgentLoadError (CliError)           "MODULE:ATTR" does not name an Agent (agent._run.loading)
    ├── PolicyHaltError (RuntimeError)      the permission checker halted the run
    ├── BudgetExceededError (RuntimeError)  the next model call would go past the budget (agent._chart.budget)
    ├── OutputSchemaError (ValueError)      the final answer never fit output_schema (agent._chart.structured)
    ├── ExplainError (ValueError)           the record holds no model call to explain
    ├── ConversationError (ValueError)      a bad conversation id or policy, or an unreadable stored turn
    ├── ConversationBusyError (RuntimeError) the conversation's latest turn is paused or running,
    │                                        or another process took the turn
    ├── NoConversationError (RuntimeError)  follow_up before any conversation turn
    ├── McpConnectionError (RuntimeError)   an MCP server could not be started or reached
    ├── McpToolError (RuntimeError)         an MCP tool answered with isError
    ├── CompositionError (ValueError)       agents composed wrongly: a handoff past max_handoffs, a mount's
    │                                        message that is not text, a sub-agent tool that paused
    ├── MemoryStoreError (ValueError)       bad memory input (namespace, text, origin) or an unreadable stored item
    ├── InboxRefusal                        the approval inbox refused a decision (agent.serve.decide:
    │                                        its HTTP status and message)
    ├── UsersFileError (ValueError)         the inbox's users file cannot be read or written
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

from flowchart._cli_support import CliError


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


class BudgetExceededError(AgentError, RuntimeError):
    """The next model call would have gone past the agent's ``Budget`` and the run stopped before
    it (``on_exceed="stop"``, or a person declined to raise it). ``overrun`` is the recorded
    ``{"field", "spent", "limit", "estimate", "per"}``; the decision is in the state's ``budget``."""

    code = "ERR_BUDGET_EXCEEDED"

    def __init__(self, overrun: dict[str, Any]) -> None:
        field = overrun.get("field")
        unit = "$" if field == "usd" else ""
        noun = "" if field == "usd" else (" tokens" if field == "tokens" else " model calls")
        who = "conversation" if overrun.get("per") == "conversation" else "run"
        super().__init__(
            f"budget exceeded: the {who} has spent {unit}{overrun.get('spent')} of {unit}{overrun.get('limit')}{noun} "
            f"and the next call would go past it; raise Budget({field}=...) or use on_exceed='pause' to ask a person"
        )
        self.overrun = dict(overrun)

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.overrun,))


class OutputSchemaError(AgentError, ValueError):
    """The model's reply never matched the agent's ``output_schema``, retries included.

    ``text`` is the last reply, ``errors`` what was wrong with it, ``retries`` how many
    corrections were asked for. The run's record holds every attempt (``output_schema_retries``)
    and the failure (``output_schema_error``).
    """

    code = "ERR_OUTPUT_SCHEMA"

    def __init__(self, text: str, errors: list[str], retries: int) -> None:
        super().__init__(
            f"the model's reply does not match the output schema after {retries_text(retries)}: {'; '.join(errors)}"
        )
        self.text = text
        self.errors = list(errors)
        self.retries = retries

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.text, self.errors, self.retries))


def retries_text(count: Any) -> str:
    """``1 retry`` / ``2 retries``."""
    return f"{count} retry" if count == 1 else f"{count} retries"


class ExplainError(AgentError, ValueError):
    """The record holds no model call to explain (or ``call=N`` names none)."""


class McpConnectionError(AgentError, RuntimeError):
    """The MCP server could not be started or reached (the message names it and the cause)."""


class McpToolError(AgentError, RuntimeError):
    """An MCP tool answered with ``isError``: the message is the server's text."""


class ConversationError(AgentError, ValueError):
    """A conversation cannot be continued as asked (bad id or policy, or an unreadable turn)."""


class ConversationBusyError(AgentError, RuntimeError):
    """The conversation's latest turn is paused or running, or another process took the turn."""

    def __init__(self, message: str, conversation_id: str, turn: int, run_id: str | None = None) -> None:
        super().__init__(message)
        self.conversation_id = conversation_id
        self.turn = turn
        self.run_id = run_id

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.conversation_id, self.turn, self.run_id))


class NoConversationError(AgentError, RuntimeError):
    """``follow_up`` was called before this agent ran any conversation turn."""


class MemoryStoreError(AgentError, ValueError):
    """Long-term memory (``agent.memory``) was given something it cannot keep — a namespace that
    is not a tuple of strings, blank or oversized text, an unknown origin field — or read a stored
    item back that is not what it wrote (``agent.memory.items.read_row``), or lacks FTS5."""


class CompositionError(AgentError, ValueError):
    """Agents were composed wrongly (``agent._run.compose``, ``agent._chart.handoff``): a handoff past
    ``max_handoffs`` (a ping-pong between agents), a mount whose ``message(state)`` is not text, a
    sub-agent used as a tool that paused (a tool call cannot wait for a person)."""
