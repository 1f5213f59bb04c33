"""A small shop — an agent and a chart — recorded once, then changed in ten ways (the seeded
regressions ``test_seeded_regressions`` replays the recorded runs against).

``target(name)`` is the replay target of today's code with regression ``name`` seeded in
(``"unchanged"``: none): a function of a recorded run that re-runs the chart on its input, or
the agent through ``agent.replaying.replayer`` (the order lookup runs live, as today's code; the
refund — an effect — is always served from the record).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from agent import Agent, define_tool
from agent.providers import scripted
from agent.replaying import replayer
from flowchart import FlowChart, decide, flow_chart
from governance import allow, deny

PROMPT = "You are a shop assistant. Look orders up before acting."
ORDERS = {"A-1": {"order_id": "A-1", "status": "shipped", "amount": 10.0}}

#: the recorded conversations: the question, and the scripted model's replies
SCRIPTS: dict[str, tuple[str, list[Any]]] = {
    "status": (
        "where is A-1?",
        [
            {"content": "", "tool_calls": [{"id": "c1", "name": "lookup_order", "args": {"order_id": "A-1"}}]},
            "A-1 has shipped.",
        ],
    ),
    "refund": (
        "please refund A-1",
        [
            {"content": "", "tool_calls": [{"id": "c1", "name": "lookup_order", "args": {"order_id": "A-1"}}]},
            {"content": "", "tool_calls": [{"id": "c2", "name": "issue_refund", "args": {"order_id": "A-1"}}]},
            "Refunded 10.00 on A-1.",
        ],
    ),
    "hello": ("hello", ["Hi! How can I help?"]),
}

REGRESSIONS = (
    "changed prompt",
    "middleware now denies",
    "decider rule off by one",
    "tool result format changed",
    "tool now raises",
    "max iterations lowered",
    "model renamed",
    "stage arithmetic changed",
    "decider default changed",
    "input middleware rewrites",
    "check-in threshold raised",
)
#: refunds over this amount need a person (the recorded refund of 10.00 was approved by alice)
CHECK_IN_OVER = 5.0


# -- the agent -------------------------------------------------------------------------------------
def lookup_order(args: dict[str, Any], ctx: Any) -> Any:
    """Look an order up."""
    return ORDERS[args["order_id"]]


def lookup_as_text(args: dict[str, Any], ctx: Any) -> Any:
    """The lookup after its result format changed: a sentence instead of the order."""
    order = ORDERS[args["order_id"]]
    return f"order {order['order_id']} is {order['status']}"


def lookup_raises(args: dict[str, Any], ctx: Any) -> Any:
    """The lookup with a bug."""
    raise KeyError("orders table")


REFUNDS: list[str] = []


def issue_refund(args: dict[str, Any], ctx: Any) -> str:
    """Refund an order (an effect: a replay never runs it)."""
    REFUNDS.append(args["order_id"])
    return f"refunded {ORDERS[args['order_id']]['amount']:.2f} on {args['order_id']}"


def _tools(lookup: Any = lookup_order, check_in_over: float = CHECK_IN_OVER) -> list[Any]:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}
    return [
        define_tool(name="lookup_order", description="Look an order up.", input_schema=schema, execute=lookup),
        define_tool(
            name="issue_refund",
            description="Refund an order.",
            input_schema=schema,
            execute=issue_refund,
            check_in=lambda args, ctx: ORDERS[args["order_id"]]["amount"] > check_in_over,
        ),
    ]


NO_REFUNDS = SimpleNamespace(
    name="no-refunds",
    on_tool_call=lambda call: deny("refunds are frozen") if call.tool_name == "issue_refund" else allow(),
)
SHOUT = SimpleNamespace(name="shout", on_message=lambda msg: allow(msg.content.upper(), "shouted"))


def build_agent(provider: Any = None, regression: str = "unchanged", store: Any = None) -> Agent:
    """The shop agent as the code says it today (with ``regression`` seeded in)."""
    prompt = PROMPT + " Be brief." if regression == "changed prompt" else PROMPT
    model = "shop-model-2" if regression == "model renamed" else "shop-model"
    lookup = {"tool result format changed": lookup_as_text, "tool now raises": lookup_raises}.get(
        regression, lookup_order
    )
    builder = (
        Agent.create(provider=provider or scripted(["unused"]), model=model, store=store)
        .system(prompt)
        .tools(_tools(lookup, 50.0 if regression == "check-in threshold raised" else CHECK_IN_OVER))
        .max_iterations(1 if regression == "max iterations lowered" else 5)
    )
    if regression == "middleware now denies":
        builder = builder.tool_middleware(NO_REFUNDS)
    if regression == "input middleware rewrites":
        builder = builder.message_middleware(SHOUT)
    return builder.build()


# -- the chart -------------------------------------------------------------------------------------
def build_chart(regression: str = "unchanged") -> FlowChart:
    """Basket → Check (decider: another item while fewer than 3) → More | Done."""

    def basket(scope: Any, ctx: Any) -> None:
        items = ctx.args["items"]
        scope.items = items
        scope.total = round(sum(items) * (1.05 if regression == "stage arithmetic changed" else 1.0), 2)

    def check(scope: Any) -> Any:
        op = "lte" if regression == "decider rule off by one" else "lt"
        default = "more" if regression == "decider default changed" else "done"
        return decide(scope, [{"when": {"count": {op: 3}}, "then": "more", "label": "Need more"}], default)

    def count(scope: Any) -> None:
        scope.count = len(scope.items)

    def more(scope: Any) -> None:
        scope.outcome = f"add {3 - scope.count} more"

    def done(scope: Any) -> None:
        scope.outcome = "ready"

    return (
        flow_chart("Basket", basket, "basket")
        .add_function("Count", count, "count")
        .add_decider_function("Check", check, "check")
        .add_function_branch("more", "More", more)
        .add_function_branch("done", "Done", done)
        .end()
        .build()
    )


CHART_INPUTS = ({"items": [1.5, 2.25]}, {"items": [1.5, 2.25, 4.0]})


# -- recording and replaying -----------------------------------------------------------------------
def record_runs(store: Any) -> list[str]:
    """Record every conversation and chart input into ``store``; their run ids."""
    from agent import Paused
    from governance import check_in_approved

    ids = []
    for question, replies in SCRIPTS.values():
        agent = build_agent(scripted(replies), store=store)
        outcome = agent.run(question)
        if isinstance(outcome, Paused):  # the refund: alice approves it, another process resumes
            decision = check_in_approved(request=outcome.check_in, by="alice", at="2026-12-01T09:00:00Z")
            build_agent(scripted(replies), store=store).resume_run(outcome.run_id, decision)
            ids.append(outcome.run_id)
            continue
        ids.append(agent.last_snapshot().record.run_id)
    chart = build_chart()
    for args in CHART_INPUTS:
        ids.append(chart.run(args, store=store).run_id)
    return ids


def target(regression: str = "unchanged") -> Any:
    """Today's code with ``regression`` seeded in, as a replay target (a function of a record)."""
    chart = build_chart(regression)
    agent_replay = replayer(lambda: build_agent(regression=regression), live=["lookup_order"])

    def rerun(record: Any) -> Any:
        if record.chart_fingerprint == chart.fingerprint:
            return chart.run(dict(record.input))
        return agent_replay(record)

    return rerun
