"""The run's spend: each model call's cost on its commit, the totals, and the budget check.

Laws:
- Every agent writes here (the built-in price table by default), except one built with
  ``pricing=False``, whose record has no cost keys at all.
- The model-call commit writes ``llm_cost``: the call — ``{"iteration", "model", "usage",
  "cost_usd"}`` (``usage`` as the server reported it: an unreported count is absent, an unreported
  usage is ``"unknown"``; ``cost_usd`` a decimal string or ``"unknown"``), ``"retries"`` (the
  provider's retries before the answer) when there were any — and ``"run"``, the run's totals
  with this call: ``{"calls", "usd", "input_tokens", "output_tokens", "dearest_usd",
  "dearest_tokens"}`` (and ``"unpriced"``: the iterations whose cost is unknown). One small write
  per call, overwritten by the next: every call's row is on its own commit (``calls_of``), and
  ``usd`` is their exact decimal sum.
- The budget is checked BEFORE each model call, against what the run (or the conversation)
  has spent plus the next call's estimate — the dearest call so far (the first call is
  estimated at 0): a call that would take the spend past a limit is not made.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

from agent._chart.budget import Budget, BudgetState, Overrun
from agent._chart.cost import Figures, add_money, figures_of, money_text, parse_money, usd_text
from agent._chart.state import BUDGET_STATE, CONVERSATION, LLM_COST
from flowchart import Scope
from flowchart.lowlevel import copy_json, peek, raw_read, set_owned, thaw

__all__ = ["calls_of", "cost_recorder", "over_budget", "run_totals", "spent"]

_NO_TOTALS: dict[str, Any] = {
    "calls": 0,
    "usd": "0",
    "input_tokens": 0,
    "output_tokens": 0,
    "dearest_usd": "0",
    "dearest_tokens": 0,
}


def cost_recorder(cfg: Any) -> Callable[[Scope, int, Any], None]:
    """The model-call stage's cost writer: ``record(scope, iteration, response)`` writes the call's
    ``llm_cost`` (the call and the run's totals with it) in the model-call commit.

    Each model's price is turned into integer figures once, here (``cost.figures_of``); a call
    then costs a dict lookup, three multiplications and one small write."""
    prices = {model: figures_of(price) for model, price in cfg.prices.items()}
    configured = cfg.model
    mine = prices.get(configured) if configured else None

    def record(scope: Scope, iteration: int, response: Any) -> None:
        usage = response.usage
        answered = response.model
        figures: Figures | None
        if mine is not None:
            model, figures = configured, mine
        else:
            figures = prices.get(answered) if answered else None
            model = answered or configured
        before = raw_read(scope, LLM_COST)
        if before is not None:
            run = before["run"].copy()
            run["calls"] += 1
        else:
            run = _NO_TOTALS.copy()
            run["calls"] = 1
        if usage is None:
            row: dict[str, Any] = {"iteration": iteration, "model": model, "usage": "unknown", "cost_usd": "unknown"}
            run["unpriced"] = [*run.get("unpriced", ()), iteration]
        else:
            fresh, out = usage.input_tokens, usage.output_tokens
            cached = usage.cached_input_tokens
            counts = {"input_tokens": fresh, "output_tokens": out}
            if cached is not None:
                counts["cached_input_tokens"] = cached
            if usage.reasoning_tokens is not None:
                counts["reasoning_tokens"] = usage.reasoning_tokens
            run["input_tokens"] += fresh
            run["output_tokens"] += out
            if fresh + out > run["dearest_tokens"]:
                run["dearest_tokens"] = fresh + out
            if figures is None:
                cost = "unknown"
                run["unpriced"] = [*run.get("unpriced", ()), iteration]
            else:
                inputs, outputs, cached_price, exponent = figures
                units = 0
                if cached is not None and cached_price is not None:
                    cached = min(cached, fresh)
                    fresh -= cached
                    units = cached * cached_price
                units += fresh * inputs + out * outputs
                cost = money_text((units, exponent))
                run["usd"] = money_text(add_money(parse_money(run["usd"]), (units, exponent)))
                dearest = parse_money(run["dearest_usd"])
                if units * 10 ** max(0, dearest[1] - exponent) > dearest[0] * 10 ** max(0, exponent - dearest[1]):
                    run["dearest_usd"] = cost
            row = {"iteration": iteration, "model": model, "usage": counts, "cost_usd": cost}
        if response.retries:
            row["retries"] = len(response.retries)
        row["run"] = run
        # built here of fresh dicts, ints and strings, handed over without a copy — unless a model name
        # is not an ASCII string: then the ordinary, checking write
        if type(model) is str and model.isascii():
            set_owned(scope, LLM_COST, row)
        else:
            scope[LLM_COST] = row

    return record


def run_totals(cost: Any) -> dict[str, Any]:
    """The run's totals from its last ``llm_cost``: ``{"calls", "usd", "input_tokens",
    "output_tokens"}`` (and ``unpriced``: the calls whose cost is unknown); zeros when no call was
    made, ``usd`` ``"unknown"`` when no call was priced (unknown is never 0). A budget reads the
    priced calls' sum (``spent``)."""
    run = cost["run"] if isinstance(cost, dict) else _NO_TOTALS
    totals = {key: run[key] for key in ("calls", "usd", "input_tokens", "output_tokens")}
    if run.get("unpriced"):
        totals["unpriced"] = list(run["unpriced"])
        if len(run["unpriced"]) == run["calls"]:  # no call was priced: the total is unknown, not $0
            totals["usd"] = "unknown"
    return totals


def calls_of(commit_log: Any) -> list[dict[str, Any]]:
    """Every model call's ``llm_cost`` row (without the running totals), in order, from the commits
    that wrote them."""
    rows = []
    for commit in commit_log:
        for op in commit.trace:
            if op.path == (LLM_COST,) and isinstance(op.value, dict):
                rows.append({k: v for k, v in op.value.items() if k != "run"})
    return rows


def spent(scope: Scope, before: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the run has spent (its ``llm_cost`` totals), plus ``before`` (earlier turns of a conversation)."""
    cost = peek(scope, LLM_COST)
    totals = cost["run"] if isinstance(cost, dict) else _NO_TOTALS  # the priced calls' sum
    out = {
        "usd": Decimal(totals["usd"]),
        "tokens": totals["input_tokens"] + totals["output_tokens"],
        "calls": totals["calls"],
    }
    if before:
        out["usd"] += Decimal(str(before.get("usd", "0")))
        out["tokens"] += int(before.get("tokens", 0))
        out["calls"] += int(before.get("calls", 0))
    return out


def _next_call_estimate(scope: Scope) -> dict[str, Any]:
    """The dearest call so far (dollars and tokens), the estimate of the next one's cost."""
    cost = peek(scope, LLM_COST)
    run = cost["run"] if isinstance(cost, dict) else _NO_TOTALS
    return {"usd": Decimal(run["dearest_usd"]), "tokens": run["dearest_tokens"], "calls": 1}


def budget_in_force(cfg: Any, scope: Scope) -> Budget | None:
    """The budget the next call is checked against: a person's raise (``budget`` state) over the agent's."""
    budget: Budget | None = cfg.budget
    if budget is None:
        return None
    if BUDGET_STATE in scope:
        return BudgetState.from_dict(thaw(peek(scope, BUDGET_STATE))).apply(budget)
    return budget


def over_budget(cfg: Any, scope: Scope, before: dict[str, Any] | None = None) -> Overrun | None:
    """The limit the next model call would break (checked before it is made), or ``None``."""
    budget = budget_in_force(cfg, scope)
    if budget is None:
        return None
    so_far = spent(scope, before)
    estimate = _next_call_estimate(scope)
    for field in ("usd", "tokens", "calls"):
        limit = getattr(budget, field)
        if limit is None:
            continue
        limit = Decimal(str(limit)) if field == "usd" else limit
        if so_far[field] + estimate[field] > limit:
            return Overrun(field=field, spent=so_far[field], limit=limit, estimate=estimate[field], per=budget.per)
    return None


def _record_decision(scope: Scope, decision: dict[str, Any]) -> None:
    # a copy: a committed value is never changed in place (the record's earlier commits hold it)
    state = copy_json(peek(scope, BUDGET_STATE)) if BUDGET_STATE in scope else {"raised": {}, "decisions": []}
    state["decisions"].append(decision)
    scope[BUDGET_STATE] = state


def budget_gate(cfg: Any, scope: Scope, ctx: Any, iteration: int) -> tuple[str, Any]:
    """Before a model call: ``("go", None)`` to make it (a ``wrap_up`` budget has just asked for the
    last, tool-less answer), ``("stop", None)`` (the run ends: ``BudgetExceededError``), or
    ``("pause", data)`` (a person is asked to raise the budget). The decision and the spend are
    recorded in ``budget``."""
    from agent._chart.config import WRAP_UP_INSTRUCTION
    from agent._chart.state import HISTORY, WRAP_UP_ASKED

    before = None
    if cfg.budget.per == "conversation" and CONVERSATION in scope:
        meta = thaw(peek(scope, CONVERSATION))
        before = meta.get("spent_before") if isinstance(meta, dict) else None
    overrun = over_budget(cfg, scope, before)
    if overrun is None:
        return "go", None
    action = cfg.budget.on_exceed
    decisions = thaw(peek(scope, BUDGET_STATE))["decisions"] if BUDGET_STATE in scope else []
    wrapped = any(d.get("decision") == "wrap_up" for d in decisions)
    row = {"iteration": iteration, **overrun.to_dict()}
    if action == "wrap_up" and not wrapped:
        _record_decision(scope, {**row, "decision": "wrap_up"})
        scope[HISTORY].append({"role": "user", "content": WRAP_UP_INSTRUCTION})
        scope[WRAP_UP_ASKED] = True
        return "go", None
    if action == "pause":
        question = f"{overrun.describe()}; raise the budget to {_suggested_text(overrun)}?"
        data = {
            "kind": "budget",
            "question": question,
            "overrun": overrun.to_dict(),
            "suggested": {overrun.field: _json_limit(overrun.field, overrun.suggestion())},
            "iteration": iteration,
        }
        _record_decision(scope, {**row, "decision": "paused"})
        return "pause", data
    _record_decision(scope, {**row, "decision": "stopped"})
    ctx.stop(f"budget exceeded: {overrun.describe()}")
    return "stop", None


def _json_limit(field: str, value: Any) -> Any:
    return usd_text(Decimal(str(value))) if field == "usd" else int(value)


def _suggested_text(overrun: Overrun) -> str:
    value = overrun.suggestion()
    if overrun.field == "usd":
        from agent._chart.budget import _money

        return f"${_money(value)}"
    return f"{value} {'tokens' if overrun.field == 'tokens' else 'model calls'}"


def raise_budget(cfg: Any, scope: Scope, answer: Any) -> None:
    """Record a person's answer to a budget pause: ``{"approved": True, "usd": 1.0}`` (the new
    limits; none given: the suggested ones) raises it; ``{"approved": False}`` stops the run."""
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        raise ValueError(
            'a budget pause is answered with {"approved": true|false} and, to raise it, the new limits '
            '({"approved": true, "usd": 1.0}); got ' + repr(answer)
        )
    state = copy_json(peek(scope, BUDGET_STATE))  # a copy: the committed value is never changed in place
    pending = state["decisions"][-1]
    raised = dict(state["raised"])
    if answer["approved"]:
        new = {k: answer[k] for k in ("usd", "tokens", "calls") if k in answer}
        if not new:  # the suggested raise: twice the limit that was reached
            field = pending["field"]
            new = {field: float(Decimal(pending["limit"]) * 2) if field == "usd" else pending["limit"] * 2}
        checked = attrs_evolve_budget(cfg.budget, state, new)
        for key in new:
            value = getattr(checked, key)
            raised[key] = usd_text(Decimal(str(value))) if key == "usd" else value
    state["raised"] = raised
    decision: dict[str, Any] = {
        "decision": "raised" if answer["approved"] else "declined",
        "by": str(answer.get("by", "human")),
    }
    if answer["approved"]:
        decision["to"] = {k: raised[k] for k in raised}
    if answer.get("note"):
        decision["note"] = str(answer["note"])
    state["decisions"].append(decision)
    scope[BUDGET_STATE] = state


def attrs_evolve_budget(budget: Budget, state: dict[str, Any], new: dict[str, Any]) -> Budget:
    """The budget with ``new`` limits, checked by ``Budget`` itself (``ValueError`` naming the field)."""
    import attrs

    current = BudgetState.from_dict(state).apply(budget)
    return attrs.evolve(current, **new)
