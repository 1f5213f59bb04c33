"""pyfootprint's agent: an explainable LLM agent that IS a flowchart.

Seed → CallLLM → Route → ToolCalls (loop) | WrapUp (loop) | Final. Every model call,
routing decision, tool result and governance decision is a commit in the run's log.
"""

from agent.builder import (
    Agent,
    AgentBuilder,
    AgentBuildError,
    AgentSnapshot,
    PolicyHaltError,
    build_agent_chart,
)
from agent.conversation_turns import ConversationError
from agent.conversations import ConversationBusyError, NoConversationError
from agent.explain import AnswerExplanation, ExplainError, explain_answer
from agent.function_tools import tool
from agent.paused import Paused
from agent.tools import Tool, ToolContext, ToolDefinitionError, ask_human, define_tool

__all__ = [
    "Agent",
    "AgentBuildError",
    "AgentBuilder",
    "AgentSnapshot",
    "AnswerExplanation",
    "ConversationBusyError",
    "ConversationError",
    "ExplainError",
    "NoConversationError",
    "Paused",
    "PolicyHaltError",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ask_human",
    "build_agent_chart",
    "define_tool",
    "explain_answer",
    "tool",
]
