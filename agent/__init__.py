"""pyfootprint's agent: an explainable LLM agent that IS a flowchart.

Seed → CallLLM → Route → ToolCalls (loop) | WrapUp (loop) | Final. Every model call,
routing decision, tool result and governance decision is a commit in the run's log.
"""

from agent.agent import Agent, AgentSnapshot
from agent.builder import AgentBuilder
from agent.chart import build_agent_chart
from agent.errors import (
    AgentBuildError,
    AgentError,
    ConversationBusyError,
    ConversationError,
    NoConversationError,
    OutputSchemaError,
    PolicyHaltError,
)
from agent.explain import AnswerExplanation, ExplainError, explain_answer
from agent.function_tools import define_tool, tool
from agent.paused import Paused
from agent.tools import Tool, ToolContext, ToolDefinitionError, ask_human

__all__ = [
    "Agent",
    "AgentBuildError",
    "AgentBuilder",
    "AgentError",
    "AgentSnapshot",
    "AnswerExplanation",
    "ConversationBusyError",
    "ConversationError",
    "ExplainError",
    "NoConversationError",
    "OutputSchemaError",
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
