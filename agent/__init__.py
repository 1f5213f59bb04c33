"""pyfootprint's agent: an explainable LLM agent that IS a flowchart.

Seed → CallLLM → Route → ToolCalls (loop) | WrapUp (loop) | Final. Every model call,
routing decision, tool result and governance decision is a commit in the run's log.
"""

from agent._chart.budget import Budget
from agent._chart.chart import build_agent_chart
from agent._chart.cost import Price
from agent._chart.paused import Paused
from agent._edge.explain import AnswerExplanation, ExplainError, explain_answer
from agent._run.agent import Agent
from agent._run.builder import AgentBuilder
from agent._run.snapshot import AgentSnapshot
from agent._tools.effects import checkable
from agent._tools.function_tools import define_tool, tool
from agent._tools.tools import Tool, ToolContext, ToolDefinitionError, ask_human
from agent.errors import (
    AgentBuildError,
    AgentError,
    ConversationBusyError,
    ConversationError,
    NoConversationError,
    OutputSchemaError,
    PolicyHaltError,
)

__all__ = [
    "Agent",
    "AgentBuildError",
    "AgentBuilder",
    "AgentError",
    "AgentSnapshot",
    "AnswerExplanation",
    "Budget",
    "ConversationBusyError",
    "ConversationError",
    "ExplainError",
    "NoConversationError",
    "OutputSchemaError",
    "Paused",
    "PolicyHaltError",
    "Price",
    "Tool",
    "ToolContext",
    "ToolDefinitionError",
    "ask_human",
    "build_agent_chart",
    "checkable",
    "define_tool",
    "explain_answer",
    "tool",
]
