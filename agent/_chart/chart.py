"""``build_agent_chart``: the agent IS a flowchart, assembled here from its stages.

::

    seed ──► call-llm ──► route ─┬─ 'tool-calls' ──► tool-calls (pausable) ──loop──► call-llm
                                 ├─ 'wrap-up'    ──► wrap-up ──loop──► call-llm
                                 ├─ 'output-retry' ──► output-retry ──loop──► call-llm
                                 └─ 'final' (default) ──► final (prepare-final ► break-final)

(``wrap-up`` only with tools and wrap-up on; ``output-retry`` only with an ``output_schema``.)

Law of this file: every model call, routing decision and tool result is a commit in the
run's log, so the whole flowchart toolkit (narrative, replay, causal chains, traces)
works on an agent run. The stage ids above are the contract (docs/api.md); a chart
without an awaiting stage runs its stages without an event loop.
"""

from __future__ import annotations

import inspect
from typing import Any

from agent._chart import structured
from agent._chart.config import AgentConfig
from agent._chart.dispatch import make_tool_calls
from agent._chart.handoff import make_handoff
from agent._chart.paused import AnswerBook
from agent._chart.stages import (
    break_final,
    final_input,
    final_output,
    make_budget_call_llm,
    make_call_llm,
    make_route,
    make_seed,
    make_wrap_up,
    prepare_final,
)
from flowchart import FlowChart, Pausable, flow_chart
from flowchart.lowlevel import drive


def _sync(stage: Any) -> Any:
    """Wrap an ``async def`` stage for a run that needs no event loop (nothing it awaits suspends)."""

    def run_now(*args: Any) -> Any:
        return drive(stage(*args))

    run_now.__name__ = getattr(stage, "__name__", "stage")
    return run_now


def build_agent_chart(cfg: AgentConfig, answered: AnswerBook | None = None) -> FlowChart:
    """The agent chart for ``cfg`` (stage ids: seed, call-llm, route, tool-calls, wrap-up, final);
    ``answered`` is where a run without a store marks the requests it answered."""
    asynchronous = cfg.needs_event_loop

    def fit(stage: Any) -> Any:
        # a stage with nothing to await is a plain function already (no coroutine, no driver)
        return _sync(stage) if not asynchronous and inspect.iscoroutinefunction(stage) else stage

    tool_calls = make_tool_calls(cfg, answered)
    if not asynchronous:
        assert tool_calls.answer is not None
        tool_calls = Pausable(
            execute=fit(tool_calls.execute), resume=fit(tool_calls.resume), answer=fit(tool_calls.answer)
        )
    final = (
        flow_chart("PrepareFinal", prepare_final, "prepare-final")
        .add_function("BreakFinal", break_final, "break-final")
        .build()
    )
    seed = flow_chart("Seed", fit(make_seed(cfg)), "seed")
    if cfg.budget is not None and cfg.budget.on_exceed == "pause":  # the call may pause for a person
        budgeted = make_budget_call_llm(cfg)
        if not asynchronous:
            budgeted = Pausable(execute=fit(budgeted.execute), resume=fit(budgeted.resume), answer=budgeted.answer)
        start = seed.add_pausable_function("CallLLM", budgeted, "call-llm", retry=cfg.llm_retry)
    else:
        start = seed.add_function("CallLLM", fit(make_call_llm(cfg)), "call-llm", retry=cfg.llm_retry)
    branches = start.add_decider_function("Route", fit(make_route(cfg)), "route").add_pausable_function_branch(
        "tool-calls", "ToolCalls", tool_calls, loop_to="call-llm"
    )
    if cfg.wrap_up and cfg.tools:
        branches = branches.add_function_branch("wrap-up", "WrapUp", make_wrap_up(), loop_to="call-llm")
    if cfg.handoffs:  # the receiving agent's answer is this run's: route then takes final
        branches = branches.add_pausable_function_branch("handoff", "Handoff", make_handoff(cfg), loop_to="route")
    if cfg.output is not None:
        branches = structured.add_retry_branch(branches, cfg.output)
    return (
        branches.add_subflow_chart_branch(
            "final",
            final,
            mount_name="Final",
            input_mapper=final_input,
            output_mapper=final_output,
            propagate_break=True,
        )
        .set_default("final")
        .end()
        .build()
    )
