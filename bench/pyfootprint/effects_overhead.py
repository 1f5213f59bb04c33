"""Effects and cost overhead: the W6 agent with an idempotent tool, and with cost accounting.

usage: ``.venv/bin/python -m bench.pyfootprint.effects_overhead``

One process, side by side (``bench.harness.side_by_side``), on freshly built W6 agents
(``bench.pyfootprint.w6_agent``: the ``add`` tool, a scripted provider, 10 tool rounds):

- ``run``: the plain agent (the tool only reads), ``pricing=False``: no cost accounting (every
  variant but the two below runs without it, so each ratio isolates one thing);
- ``idempotent``: ``add`` declared ``effect="idempotent"``: an intent and a receipt per call, in
  the agent's memory ledger (no store);
- ``priced``: ``pricing={"mock": Price(...)}``: each model call's usage and cost on its commit;
- ``default``: no ``pricing=`` (what every agent does): the built-in table, ``mock`` unpriced,
  each call's usage and ``"unknown"`` cost on its commit;
- ``stored`` / ``stored idempotent``: both on a SQLite run store (a fresh file per sample), where
  each intent is its own committed transaction (an idempotent call's receipt rides on the next);
- ``warm stored`` / ``warm stored idempotent``: the same on one store per variant that every sample
  shares (its connections and tables made once, as a long-lived worker's are).

Prints a JSON line with the ratios (median ÷ the matching baseline's median); the issue's bars:
intent + receipt ≤ 1.10 (``idempotent/run``: W6 as ``shared/bench/SPEC.md`` defines it has no
store; the stored pairs are reported beside it), cost accounting ≤ 1.02 (``default/run`` and
``priced/run``). Honours ``BENCH_QUICK`` and ``BENCH_BUDGET_S``.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from typing import Any

from bench.harness import Record, side_by_side
from bench.pyfootprint.common import row, settings
from bench.pyfootprint.w6_agent import ADD_SCHEMA, ANSWER, TOOL_TURNS, mock_llm, run_agent


def build(effect: str = "read", store: Any = None, priced: bool | str = False) -> tuple[Any, Any]:
    """A W6 agent for one run: ``effect`` on the tool, an optional store; ``priced``: False records
    no cost (``pricing=False``), True prices its model (``pricing=``), ``"table"`` is the default
    (the built-in table alone: its model unpriced, each call's cost ``"unknown"``)."""
    from agent import Agent, Price, define_tool
    from agent.providers import scripted

    add = define_tool(
        name="add",
        description="Add two numbers.",
        input_schema=ADD_SCHEMA,
        execute=lambda args, ctx: args["a"] + args["b"],
        effect=effect,
    )
    replies: list[Any] = [
        {"content": m["content"], "tool_calls": m["tool_calls"]} for m in map(mock_llm, range(TOOL_TURNS))
    ]
    replies.append(ANSWER)
    provider = scripted(replies)
    options: dict[str, Any] = {}
    if store is not None:
        options["store"] = store
    if priced is False:  # no cost accounting: the baseline the bar is measured against
        options["pricing"] = False
    elif priced == "table":  # the default (no pricing=): the built-in table, its model unpriced
        pass
    elif priced:
        options["pricing"] = {"mock": Price(input_per_mtok=2.5, output_per_mtok=10)}
    agent = Agent.create(provider=provider, model="mock", **options).tool(add).max_iterations(2 * TOOL_TURNS).build()
    return agent, provider


def main(quick: bool = False) -> list[Record]:
    """Emit the rows and the ratio line."""
    cfg = settings(quick)
    folder = tempfile.mkdtemp(prefix="effects-bench-")
    made = [0]

    def variant(
        effect: str = "read", stored: bool = False, priced: bool | str = False, warm: bool = False
    ) -> Callable[[], Callable[[], object]]:
        kept: list[Any] = []

        def prepare() -> Callable[[], object]:
            store = None
            if stored:
                from flowchart.store import SqliteStore

                if kept:
                    store = kept[0]
                else:
                    made[0] += 1
                    store = SqliteStore(os.path.join(folder, f"runs-{made[0]}.db"))
                    if warm:
                        kept.append(store)
            agent, provider = build(effect, store, priced)
            return lambda: run_agent(agent, provider)

        return prepare

    variants = {
        "run": variant(),
        "idempotent": variant("idempotent"),
        "priced": variant(priced=True),
        "default": variant(priced="table"),
        "stored": variant(stored=True),
        "stored idempotent": variant("idempotent", stored=True),
        "warm stored": variant(stored=True, warm=True),
        "warm stored idempotent": variant("idempotent", stored=True, warm=True),
    }
    samples = side_by_side(cfg, variants)
    out: list[Record] = []
    labels = {
        "run": "real Agent, read tool",
        "idempotent": "real Agent, idempotent tool (intent + receipt, memory ledger)",
        "priced": "real Agent, pricing= (cost on every call)",
        "default": "real Agent, no pricing= (the built-in table: cost unknown)",
        "stored": "real Agent, SQLite store, read tool",
        "stored idempotent": "real Agent, SQLite store, idempotent tool (ledger in the store)",
        "warm stored": "real Agent, one warmed SQLite store, read tool",
        "warm stored idempotent": "real Agent, one warmed SQLite store, idempotent tool",
    }
    for name, label in labels.items():
        row(out, "W6-effects", label, samples[name], per=TOOL_TURNS, unit="us/iter")
    import statistics

    def ratio(name: str, base: str) -> float:
        return round(statistics.median(samples[name]) / statistics.median(samples[base]), 3)

    line = {
        "peer": "pyfootprint",
        "workload": "W6-effects",
        "ratios": {
            "idempotent/run": ratio("idempotent", "run"),
            "priced/run": ratio("priced", "run"),
            "default/run": ratio("default", "run"),
            "stored idempotent/stored": ratio("stored idempotent", "stored"),
            "warm stored idempotent/warm stored": ratio("warm stored idempotent", "warm stored"),
        },
        "bars": {"intent+receipt": 1.10, "cost accounting": 1.02},
    }
    print(json.dumps(line), flush=True)
    return out


if __name__ == "__main__":
    main()
