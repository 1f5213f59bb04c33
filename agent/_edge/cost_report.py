"""Where the money went: ``agent why --cost`` and the cost lines of ``agent runs show``.

Law: the report is read from the record alone — each call's ``llm_cost`` and ``budget`` as the
commits wrote them, and what each call was sent (the state before its commit, rebuilt from the
commit log) — never recomputed from prices: what a call cost is what its commit says. Calls
sent an identical request (the same system prompt, history and offered tools) are named as
repeats; calls the provider retried say how many times. A record without cost accounting says
so and how to turn it on.
"""

from __future__ import annotations

import hashlib
import json
from decimal import Decimal
from typing import Any

from agent._chart.conversation_turns import spent_through
from agent._chart.spend import calls_of, run_totals
from agent._chart.state import BUDGET_STATE, CONVERSATION, HISTORY, LLM_COST, SYSTEM_PROMPT, WRAP_UP_ASKED
from flowchart.lowlevel import apply_commit

__all__ = ["cost_lines", "cost_of", "report_lines"]


def _sent_digest(state: dict[str, Any]) -> str:
    body = json.dumps(
        [state.get(SYSTEM_PROMPT), state.get(HISTORY), WRAP_UP_ASKED in state],
        sort_keys=True,
        ensure_ascii=True,
        default=str,
        separators=(",", ":"),
    )
    return hashlib.sha256(body.encode()).hexdigest()[:16]


def cost_of(commit_log: Any, initial: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"calls", "totals", "budget"}`` as the record holds them (no calls without cost
    accounting) and, for a conversation turn, ``conversation`` (what it spent through this turn);
    each call row gains ``request``, a digest of what it was sent, and ``commit``, the index of
    the commit that recorded it."""
    state: dict[str, Any] = dict(initial or {})
    calls: list[dict[str, Any]] = []
    for commit in commit_log:
        digest = _sent_digest(state) if commit.stage_id == "call-llm" else ""
        apply_commit(state, commit)
        for row in calls_of([commit]):  # what the call was sent: the state before its commit
            calls.append({**row, "request": digest, "commit": commit.idx})
    totals = run_totals(state.get(LLM_COST)) if calls else {}
    found = {"calls": calls, "totals": totals, "budget": state.get(BUDGET_STATE)}
    if calls and CONVERSATION in state:  # a conversation turn: what the conversation spent through it
        found["conversation"] = spent_through(state)
    return found


def _usd(text: str) -> str:
    return "cost unknown" if text == "unknown" else f"${text}"


def cost_lines(commit_log: Any, initial: dict[str, Any] | None = None) -> list[str]:
    """The report, one line per model call, then the totals, repeats, retries and budget decisions."""
    return report_lines(cost_of(commit_log, initial))


def report_lines(found: dict[str, Any]) -> list[str]:
    """``cost_lines`` of what ``cost_of`` found."""
    calls, totals = found["calls"], found["totals"]
    if not calls:
        return ["cost: not recorded (the agent was built with pricing=False)"]
    unpriced = totals.get("unpriced") or []
    if totals["usd"] == "unknown":
        out = [f"cost: unknown over {totals['calls']} model call(s)"]
    elif unpriced:
        out = [f"cost: at least ${totals['usd']} over {totals['calls']} model call(s)"]
    else:
        out = [f"cost: ${totals['usd']} over {totals['calls']} model call(s)"]
    if unpriced:
        unknown = [r for r in calls if r["cost_usd"] == "unknown"]
        models = sorted({str(r["model"]) for r in unknown if isinstance(r["usage"], dict)})
        reasons = [f"no price for {', '.join(map(repr, models))} (pricing={{...}} adds one)"] if models else []
        if any(not isinstance(r["usage"], dict) for r in unknown):
            reasons.append("usage not reported")
        out[0] += f" (cost unknown for call(s) {', '.join(map(str, unpriced))}: {'; '.join(reasons)})"
    out.append(f"tokens: {totals['input_tokens']} in, {totals['output_tokens']} out (as reported)")
    if "conversation" in found and found["conversation"] is not None:
        spent = found["conversation"]
        usd = "unknown" if spent.get("unpriced") == spent["calls"] else f"${spent['usd']}"
        calls_so_far = f"{spent['calls']} model call(s), {spent['tokens']} tokens"
        out.append(f"conversation through this turn: {usd} over {calls_so_far}")
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
        digest = row["request"]
        if digest in firsts:
            line += f"; identical request to call {firsts[digest]} (paid twice)"
            repeats.append(row["cost_usd"])
        else:
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
