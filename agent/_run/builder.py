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

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from agent._chart import structured
from agent._chart.config import AgentConfig
from agent._chart.context import Injection, default_namespace, trigger_of
from agent._chart.handoff import Handoff, handoff_tool
from agent._run.conversations import HistoryPolicy
from agent._tools.tools import Tool
from agent.errors import AgentBuildError
from agent.memory.tools import memory_tools
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
        self._injections: list[Injection] = []
        self._handoffs: list[Handoff] = []

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

    # -- context (agent._chart.context; docs/context.md) --------------------------------------
    def _inject(self, kind: str, text: Any, when: Any = None, name: str | None = None) -> AgentBuilder:
        label = f"{kind}({name!r}, ...)" if name else f"{kind}(...)"
        if not isinstance(text, str) or not text.strip():
            raise AgentBuildError(f"{label}: expected non-empty text, got {type(text).__name__}")
        try:
            trigger = trigger_of(when, label)
        except ValueError as exc:
            raise AgentBuildError(str(exc)) from None
        self._injections.append(Injection(kind, text, name, trigger))  # type: ignore[arg-type]
        return self

    def fact(self, text: str, when: Any = None) -> AgentBuilder:
        """A fact the model is told on every call (or when ``when=`` fires): system slot, recorded."""
        return self._inject("fact", text, when)

    def steering(self, text: str, when: Any = None) -> AgentBuilder:
        """Steering (how to behave) sent when ``when=`` fires: ``"always"``, ``"tool:NAME"`` (the
        call after that tool returned) or ``fn(state) -> bool``."""
        return self._inject("steering", text, when)

    def instruction(self, text: str, when: Any = None) -> AgentBuilder:
        """An instruction sent when ``when=`` fires (see ``steering``)."""
        return self._inject("instruction", text, when)

    def skill(self, name: str, text: str, when: Any = None) -> AgentBuilder:
        """A named skill (a block of know-how) sent when ``when=`` fires (see ``steering``)."""
        if not isinstance(name, str) or not name.strip():
            raise AgentBuildError(f"skill(name, ...): expected a non-empty name, got {name!r}")
        if any(i.kind == "skill" and i.name == name for i in self._injections):
            raise AgentBuildError(f"duplicate skill name '{name}': each skill needs its own name")
        return self._inject("skill", text, when, name)

    def rag(self, retriever: Any, k: int = 3, min_score: float | None = None, when: Any = None) -> AgentBuilder:
        """Retrieve up to ``k`` chunks for the user's message before each model call
        (``retriever(query, k) -> [str | {"text", "source"?, "score"?}]``); chunks scored under
        ``min_score`` are left out (and recorded as dropped)."""
        if not callable(retriever):
            got = type(retriever).__name__
            raise AgentBuildError(f"rag(retriever): expected a function (query, k) -> chunks, got {got}")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise AgentBuildError(f"rag(k=...): expected a positive integer, got {k!r}")
        if min_score is not None and (isinstance(min_score, bool) or not isinstance(min_score, int | float)):
            raise AgentBuildError(f"rag(min_score=...): expected a number or None, got {min_score!r}")
        try:
            trigger = trigger_of(when, "rag(...)")
        except ValueError as exc:
            raise AgentBuildError(str(exc)) from None
        name = getattr(retriever, "__name__", None)
        self._injections.append(Injection("rag", "", name, trigger, retriever, k, min_score))
        return self

    # -- composition (agent._chart.handoff; docs/agents.md) -----------------------------------
    def handoff(
        self,
        other: Any,
        *,
        name: str,
        description: str | None = None,
        input_filter: Callable[[list[dict[str, Any]]], Any] | None = None,
    ) -> AgentBuilder:
        """Offer the model ``transfer_to_<name>``: calling it hands the conversation to ``other``
        (an Agent, or a function returning one — for agents that hand back and forth), whose
        answer is this run's. ``input_filter(messages) -> messages`` trims what it is sent."""
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,52}", name):
            raise AgentBuildError(f"handoff(name=...): expected 1-52 letters, digits, '_' or '-', got {name!r}")
        if not (hasattr(other, "segments") or callable(other)):
            raise AgentBuildError(
                f"handoff '{name}': expected the receiving Agent (or a function returning it), "
                f"got {type(other).__name__}"
            )
        if input_filter is not None and not callable(input_filter):
            raise AgentBuildError(f"handoff '{name}': input_filter must be a function messages -> messages")
        if any(h.name == name for h in self._handoffs):
            raise AgentBuildError(f"duplicate handoff name '{name}': each handoff needs its own name")
        text = description or f"Hand the conversation over to {name} (they answer the user from here)."
        self._handoffs.append(Handoff(name, other, text, input_filter))
        return self

    def _memory_parts(self, settings: dict[str, Any]) -> tuple[Any, int, Any]:
        """(memory, recall, namespace_of) checked; the memory tools added to the tools."""
        memory, recall, namespace_of = settings["memory"], settings["recall"], settings["memory_namespace"]
        if isinstance(recall, bool) or not isinstance(recall, int) or recall < 0:
            raise AgentBuildError(f"Agent.create(recall=...): expected a number of items (0 or more), got {recall!r}")
        if namespace_of is not None and not callable(namespace_of):
            raise AgentBuildError(
                "Agent.create(memory_namespace=...): expected a function identity -> tuple of strings"
            )
        if memory is None:
            return None, 0, None
        if not (callable(getattr(memory, "put", None)) and callable(getattr(memory, "search", None))):
            raise AgentBuildError(
                f"Agent.create(memory=...): expected an agent.memory store (SqliteMemory, PostgresMemory, "
                f"InMemoryMemory), got {type(memory).__name__}"
            )
        namespace_of = namespace_of or default_namespace
        for made in memory_tools(memory, namespace_of):
            if made.name in self._tools:
                raise AgentBuildError(
                    f"tool name '{made.name}' is taken by the memory tools of Agent.create(memory=...): "
                    "rename your tool"
                )
        return memory, recall, namespace_of

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
        memory, recall, namespace_of = self._memory_parts(settings)
        tools = dict(self._tools)
        if memory is not None:
            tools.update((made.name, made) for made in memory_tools(memory, namespace_of))
        for spec in self._handoffs:
            if spec.tool_name in tools:
                raise AgentBuildError(f"handoff '{spec.name}': a tool is already named '{spec.tool_name}'")
            tools[spec.tool_name] = handoff_tool(spec)
        max_handoffs = settings["max_handoffs"]
        if isinstance(max_handoffs, bool) or not isinstance(max_handoffs, int) or max_handoffs < 1:
            raise AgentBuildError(f"Agent.create(max_handoffs=...): expected a positive integer, got {max_handoffs!r}")
        for injection in self._injections:
            wanted = injection.trigger.tool
            if wanted is not None and wanted not in tools:
                raise AgentBuildError(
                    f"{injection.label}: when='tool:{wanted}' names no tool of this agent "
                    f"(its tools: {', '.join(tools) or 'none'})"
                )
        forms = structured.output_forms(output, provider)
        cfg = AgentConfig(
            provider=provider,
            model=settings["model"],
            tools=tools,
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
            effect_ledger=_ledger(settings["store"], tools),
            injections=tuple(self._injections),
            memory=memory,
            recall=recall,
            memory_namespace=namespace_of,
            handoffs=tuple(self._handoffs),
            max_handoffs=max_handoffs,
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
    """The price table (the built-in one by default, ``pricing=`` over it; None for ``pricing=False``)
    and the checked budget."""
    from agent._chart.budget import Budget
    from agent._chart.cost import price_table

    if budget is not None and not isinstance(budget, Budget):
        raise AgentBuildError(
            f"Agent.create(budget=...): expected a Budget(usd=..., tokens=..., calls=...), got {type(budget).__name__}"
        )
    if pricing is False:  # cost accounting off: the record has no llm_cost, so nothing to budget
        if budget is not None:
            raise AgentBuildError(
                "Agent.create(budget=...) needs each call's cost: drop pricing=False (the built-in "
                "table prices the common models; pricing={...} adds yours)"
            )
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
