"""``Agent.create(...)...build()``: the builder that checks an agent's settings and makes it.

Law of this file: every refusal happens at ``build()`` (or at the builder call that was
given it), before any chart exists, and names the problem and the fix: a duplicate tool,
a bad ``max_iterations`` or ``timeout``, no provider, a middleware without a name or hook,
a recorder with no recorder hook, an ``output_schema`` that cannot be one (``agent._chart.structured``)
(``AgentBuildError``, a ``ValueError``).

The agent's other parts live beside it: ``agent.errors`` (the error tree),
``agent.chart`` (``build_agent_chart``), ``agent._run.agent`` (``Agent``, ``AgentSnapshot``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from agent._chart import structured
from agent._chart.config import AgentConfig
from agent._run.conversations import HistoryPolicy
from agent._tools.tools import Tool
from agent.errors import AgentBuildError
from flowchart import Retry
from flowchart.events import ALL_HOOKS
from governance.checkin import resolve_check_in_config
from governance.middleware import validate_chain
from governance.permissions import validate_permission_checker

if TYPE_CHECKING:
    from agent._run.agent import Agent

__all__ = ["AgentBuilder"]


class AgentBuilder:
    """Collects an agent's settings; ``build()`` checks them and makes the ``Agent``."""

    def __init__(self, make: Callable[..., Agent], **settings: Any) -> None:
        # ``make`` is the Agent class that started this builder (``Agent.create``): the builder
        # never imports the agent module, which imports it
        self._make = make
        self._settings = settings
        self._system: str | None = None
        self._tools: dict[str, Tool] = {}
        self._tool_middleware: list[Any] = []
        self._message_middleware: list[Any] = []
        self._check_in: tuple[Any, Any] = ("standard", None)
        self._max_iterations = 10

    def system(self, prompt: str) -> AgentBuilder:
        """The system prompt (sent to the model on every call, never stored in ``history``)."""
        if not isinstance(prompt, str):
            raise AgentBuildError(f"system(prompt): expected a string, got {type(prompt).__name__}")
        self._system = prompt
        return self

    def tool(self, tool: Tool) -> AgentBuilder:
        """Offer ``tool`` (from ``define_tool``) to the model; names must be unique."""
        if not isinstance(tool, Tool):
            raise AgentBuildError(f"tool(...): expected a Tool from define_tool(...), got {type(tool).__name__}")
        if tool.name in self._tools:
            raise AgentBuildError(f"duplicate tool name '{tool.name}': each tool needs its own name")
        self._tools[tool.name] = tool
        return self

    def tools(self, tools: Iterable[Tool]) -> AgentBuilder:
        """Offer several tools, in order."""
        for tool in tools:
            self.tool(tool)
        return self

    def tool_middleware(self, *links: Any) -> AgentBuilder:
        """Add tool middleware links (declaration order = chain order); repeatable."""
        self._tool_middleware.extend(links)
        return self

    def message_middleware(self, *links: Any) -> AgentBuilder:
        """Add message middleware links (input at seed, output at route); repeatable."""
        self._message_middleware.extend(links)
        return self

    def check_in(self, evidence: Any = "standard", scorer: Any = None) -> AgentBuilder:
        """How check-in evidence is assembled: "standard", "minimal" or an assembler; a custom scorer."""
        self._check_in = (evidence, scorer)
        return self

    def max_iterations(self, count: int) -> AgentBuilder:
        """The tool-round budget of one turn (a positive integer; default 10)."""
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise AgentBuildError(f"max_iterations must be a positive integer, got {count!r}")
        self._max_iterations = count
        return self

    def build(self) -> Agent:
        """Check everything and build the agent."""
        settings = dict(self._settings)
        provider = settings.pop("provider")
        if provider is None or not callable(getattr(provider, "complete", None)):
            raise AgentBuildError("Agent.create(provider=...): a provider with a complete(request) method is required")
        if not isinstance(settings["model"], str) or not settings["model"]:
            raise AgentBuildError("Agent.create(model=...): model must be a non-empty string")
        timeout = settings["timeout"]
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
            raise AgentBuildError(f"Agent.create(timeout=...): expected a positive number of seconds, got {timeout!r}")
        try:
            tool_links = validate_chain(self._tool_middleware, "tool")
            message_links = validate_chain(self._message_middleware, "message")
            evidence, scorer = self._check_in
            resolve_check_in_config(evidence, scorer)
            if settings["permission_checker"] is not None:
                validate_permission_checker(settings["permission_checker"])
            output = structured.build_output(settings["output_schema"], settings["output_retries"], self._tools)
        except (TypeError, ValueError) as exc:
            raise AgentBuildError(str(exc)) from None
        if settings["llm_retry"] is not None and not isinstance(settings["llm_retry"], Retry):
            raise AgentBuildError(
                f"Agent.create(llm_retry=...): expected a flowchart.Retry, got {type(settings['llm_retry']).__name__}"
            )
        for recorder in settings["recorders"]:
            if not any(callable(getattr(recorder, hook, None)) for hook in ALL_HOOKS):
                raise AgentBuildError(
                    f"Agent.create(recorders=...): {type(recorder).__name__} has no recorder hook "
                    "(on_run_start, on_commit, on_emit, ... — see flowchart.events)"
                )
        prices, budget = _spend_settings(settings["pricing"], settings["budget"])
        forms = structured.output_forms(output, provider)
        cfg = AgentConfig(
            provider=provider,
            model=settings["model"],
            tools=dict(self._tools),
            output=output,
            system_prompt=structured.system_prompt(output, self._system, forms[0] if forms else None),
            output_forms=forms,
            tool_middleware=tuple(tool_links),
            message_middleware=tuple(message_links),
            check_in_evidence=evidence,
            check_in_scorer=scorer,
            max_iterations=self._max_iterations,
            wrap_up=settings["wrap_up"],
            temperature=settings["temperature"],
            max_tokens=settings["max_tokens"],
            permission_checker=settings["permission_checker"],
            stream=settings["stream"],
            llm_retry=settings["llm_retry"],
            prices=prices,
            budget=budget,
            effect_ledger=_ledger(settings["store"], self._tools),
        )
        try:
            history = HistoryPolicy.of(settings["conversation_window"], settings["conversation_chars"])
        except ValueError as exc:
            raise AgentBuildError(f"Agent.create({exc}") from None
        return self._make(
            cfg,
            settings["store"],
            narrative=settings["narrative"],
            redaction=settings["redaction"],
            timeout=timeout,
            recorders=settings["recorders"],
            history=history,
        )


def _spend_settings(pricing: Any, budget: Any) -> tuple[Any, Any]:
    """The price table (None without ``pricing=`` or ``budget=``) and the checked budget."""
    from agent._chart.budget import Budget
    from agent._chart.cost import price_table

    if budget is not None and not isinstance(budget, Budget):
        raise AgentBuildError(
            f"Agent.create(budget=...): expected a Budget(usd=..., tokens=..., calls=...), got {type(budget).__name__}"
        )
    if pricing is None and budget is None:
        return None, None
    try:
        return price_table({} if pricing is None else pricing), budget
    except ValueError as exc:
        raise AgentBuildError(str(exc)) from None


def _ledger(store: Any, tools: dict[str, Tool]) -> Any:
    """The effect ledger (the store's, else this agent's memory) when some tool has an effect."""
    if all(tool.effect == "read" for tool in tools.values()):
        return None
    from flowchart.store.effects import MemoryLedger, ledger_of

    return ledger_of(store) if store is not None else MemoryLedger()
