"""``AgentConfig``: everything the agent's stages close over, fixed at ``build()``.

The config holds functions and objects (provider, tools, middleware), so it lives in the
agent object — never in state or in a checkpoint. A checkpoint holds only data, which
is why a checkpoint from one agent resumes on a freshly built identical agent.
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

import attrs

from agent._chart.state import INPUT_IDENTITY as STATE_INPUT_IDENTITY
from agent._chart.state import INPUT_MESSAGE as STATE_INPUT_MESSAGE
from agent._chart.state import TOOL_ERRORS
from agent._tools.tools import Tool

__all__ = [
    "STATE_INPUT_IDENTITY",
    "STATE_INPUT_MESSAGE",
    "STORE_RUN_ENV",
    "TOOL_ERRORS",
    "WRAP_UP_INSTRUCTION",
    "AgentConfig",
]
STORE_RUN_ENV = "agent_run_id"
"""The env key carrying a stored run's id (set by ``agent._run.durable``; unset without a store)."""
WRAP_UP_INSTRUCTION = (
    "Your action budget for this turn is exhausted. Do not request tools. Give your best final "
    "answer from what you have: what you completed, what remains undone, and anything the person "
    "should know."
)


@attrs.frozen
class AgentConfig:
    """The built agent's settings (see ``Agent.create`` and the builder methods)."""

    provider: Any
    model: str
    system_prompt: str | None
    tools: dict[str, Tool]
    tool_middleware: tuple[Any, ...]
    message_middleware: tuple[Any, ...]
    check_in_evidence: Any
    check_in_scorer: Any
    max_iterations: int
    wrap_up: bool
    temperature: float | None
    max_tokens: int | None
    permission_checker: Any
    stream: bool
    #: what a middleware ``ask`` does: "pause" the run, or "refuse" it as a denial naming the middleware
    #: (an agent served over MCP, which cannot wait for a person: ``agent.mcp.mcp_server``)
    ask_policy: Literal["pause", "refuse"] = "pause"
    #: the ``flowchart.Retry`` of the call-llm stage (``Agent.create(llm_retry=...)``), beside the
    #: providers' own HTTP retries: a failed model call is tried again, its attempts recorded
    llm_retry: Any = None
    #: the answer's required shape (``agent._chart.structured.OutputSpec``); None: free text
    output: Any = None
    #: the forms the answer's shape may be asked in, best first (``Capabilities.output_forms``); () without one
    output_forms: tuple[str, ...] = ()
    #: model name → ``Price`` (the built-in table under ``pricing=``): each call's cost is recorded
    #: (``agent._chart.spend``); None: no cost accounting (absent means byte-identical)
    prices: Any = None
    #: the ``Budget`` checked before each model call (``agent._chart.budget``); None: no budget
    budget: Any = None
    #: where intents and receipts of tools with an effect go (``flowchart.store.effects``); None
    #: when every tool only reads
    effect_ledger: Any = None
    #: what the agent is told besides the conversation (``agent._chart.context.Injection``), in order
    injections: tuple[Any, ...] = ()
    #: long-term memory (``agent.memory``) recalled from before each model call; None: none
    memory: Any = None
    #: how many memory items each model call recalls (``Agent.create(recall=...)``)
    recall: int = 0
    #: identity -> the memory namespace of a run (``agent._chart.context.default_namespace``)
    memory_namespace: Any = None

    #: the agents this one may hand the conversation to (``agent._chart.handoff.Handoff``)
    handoffs: tuple[Any, ...] = ()
    #: how many handoffs one chain may make before it is refused (``Agent.create(max_handoffs=...)``)
    max_handoffs: int = 5

    @property
    def has_context(self) -> bool:
        """True when some model call may be sent injected context (injections or recall)."""
        return bool(self.injections) or (self.memory is not None and self.recall > 0)

    @property
    def loop_limit(self) -> int:
        """The chart's per-target loop cap: the tool rounds, a wrap-up, and the output retries."""
        return self.max_iterations + 2 + (self.output.retries if self.output is not None else 0)

    @property
    def tool_schemas(self) -> list[dict[str, Any]]:
        """The tools offered to the model, in registration order."""
        return [tool.schema() for tool in self.tools.values()]

    @property
    def model_record(self) -> dict[str, str]:
        """``{"provider", "model"}`` as the record names the model that answers (``llm_model``)."""
        provider = getattr(self.provider, "name", None) or type(self.provider).__name__
        return {"provider": str(provider), "model": self.model}

    @property
    def governed(self) -> bool:
        """True when any middleware or a permission checker is configured."""
        return bool(self.tool_middleware or self.message_middleware or self.permission_checker is not None)

    @property
    def has_after_tool(self) -> bool:
        """True when some tool middleware has an ``on_tool_result`` hook."""
        return any(callable(getattr(link, "on_tool_result", None)) for link in self.tool_middleware)

    @property
    def provider_is_async(self) -> bool:
        """True when the provider's ``complete`` (or ``stream``, when streaming) must be awaited."""
        if self.stream and callable(getattr(self.provider, "stream", None)):
            return True
        return inspect.iscoroutinefunction(getattr(self.provider, "complete", None))

    @property
    def needs_event_loop(self) -> bool:
        """True when some stage may await: async provider, async tool, or any governance."""
        return (
            self.provider_is_async
            or any(tool.is_async for tool in self.tools.values())
            or self.governed
            or bool(self.handoffs)
            or any(tool.check_in is not None for tool in self.tools.values())
        )
