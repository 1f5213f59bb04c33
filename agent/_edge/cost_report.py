"""Where the money went: ``agent why --cost`` and the cost lines of ``agent runs show``.

Law: the report is read from the record alone — the ``llm_calls`` rows, ``run_cost`` and
``budget`` as the commits wrote them (the state rebuilt from the commit log) — never
recomputed from prices: what a call cost is what its commit says. Calls sent an identical
request (the same ``request`` digest) are named as repeats; calls the provider retried say
how many times. A record without cost accounting says so and how to turn it on.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agent._chart.state import BUDGET_STATE, LLM_CALLS, RUN_COST
from flowchart import replay

__all__ = ["cost_lines", "cost_of"]


def cost_of(commit_log: Any, initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"calls", "totals", "budget"}`` as the record holds them (empty without cost accounting)."""
    state = replay(commit_log, initial=initial or {})
    return {
        "calls": state.get(LLM_CALLS, []),
        "totals": state.get(RUN_COST, {}),
        "budget": state.get(BUDGET_STATE),
    }


def _usd(text: str) -> str:
    return "cost unknown" if text == "unknown" else f"${text}"


def cost_lines(commit_log: Any, initial: dict[str, Any] | None = None) -> list[str]:
    """The report, one line per model call, then the totals, repeats, retries and budget decisions."""
    found = cost_of(commit_log, initial)
    calls, totals = found["calls"], found["totals"]
    if not calls:
        return ["cost: not recorded (build the agent with pricing= or budget= to record each call's cost)"]
    out = [f"cost: ${totals.get('usd', '0')} over {totals.get('calls', len(calls))} model call(s)"]
    if totals.get("unpriced"):
        out[0] += f" (cost unknown for iteration(s) {', '.join(map(str, totals['unpriced']))}: no price for the model)"
    firsts: dict[str, int] = {}
    repeats: list[str] = []
    for row in calls:
        usage = row["usage"]
        if isinstance(usage, dict):
            parts = [f"{usage['input_tokens']} in", f"{usage['output_tokens']} out"]
            if "cached_input_tokens" in usage:
                parts.append(f"{usage['cached_input_tokens']} cached")
            if "reasoning_tokens" in usage:
                parts.append(f"{usage['reasoning_tokens']} reasoning")
            tokens = ", ".join(parts)
        else:
            tokens = "usage not reported"
        line = f"  call {row['iteration']} ({row['model']}): {_usd(row['cost_usd'])} — {tokens}"
        if row.get("retries"):
            line += f"; {row['retries']} provider retr{'y' if row['retries'] == 1 else 'ies'} before it"
        digest = row.get("request")
        if digest in firsts:
            line += f"; identical request to call {firsts[digest]} (paid twice)"
            repeats.append(row["cost_usd"])
        elif isinstance(digest, str):
            firsts[digest] = row["iteration"]
        out.append(line)
    if repeats:
        known = sum((Decimal(c) for c in repeats if c != "unknown"), Decimal(0))
        out.append(f"repeated identical calls: {len(repeats)}, ${known}")
    dearest = max((r for r in calls if r["cost_usd"] != "unknown"), key=lambda r: Decimal(r["cost_usd"]), default=None)
    if dearest is not None and len(calls) > 1:
        out.append(f"dearest call: {dearest['iteration']} ({_usd(dearest['cost_usd'])})")
    budget = found["budget"]
    if budget:
        for decision in budget.get("decisions", []):
            what = decision.get("decision")
            if what in ("paused", "stopped", "wrap_up"):
                out.append(
                    f"budget: {what} before call {decision.get('iteration')}: spent {decision.get('spent')} of "
                    f"{decision.get('limit')} ({decision.get('field')})"
                )
            else:
                out.append(
                    f"budget: {what} by {decision.get('by')}" + (f" to {decision['to']}" if "to" in decision else "")
                )
    return out
