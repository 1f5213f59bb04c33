"""Cost on every model call: usage as reported, an exact cost from a price table, totals.

Each test runs a real agent on the scripted provider (or openai_compatible against the local
wire server) and reads the record: the model-call commit's ``llm_cost``, the totals.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import Agent, AgentBuildError, AgentSnapshot, Budget, Price, define_tool
from agent._chart.cost import BUILT_IN_PRICES, PRICES_DATED
from agent.providers import LLMResponse, ToolCall, Usage, scripted

LOOKUP = define_tool(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {}},
    execute=lambda args, ctx: "found",
)
PRICE = Price(input_per_mtok=2.5, output_per_mtok=10, cached_input_per_mtok=1.25)


def call(n: int, usage: Usage | None) -> LLMResponse:
    return LLMResponse(content="", tool_calls=(ToolCall(f"c{n}", "lookup", {}),), usage=usage, finish_reason="tool_use")


def run(replies: list[Any], **create: Any) -> AgentSnapshot:
    agent = Agent.create(provider=scripted(replies), **create).tool(LOOKUP).build()
    assert agent.run("hi") == "done"
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    return snapshot


def test_each_model_call_commit_carries_its_usage_and_exact_cost() -> None:
    """The call-llm commit writes the call's ``llm_cost``: usage as reported (cached tokens priced at
    the cached price), its cost as an exact decimal string, and the run's totals with it."""
    agent = (
        Agent.create(
            provider=scripted([call(1, Usage(1000, 100, 200, 30)), LLMResponse("done", usage=Usage(1500, 50))]),
            model="m",
            pricing={"m": PRICE},
        )
        .tool(LOOKUP)
        .build()
    )
    assert agent.run("hi") == "done"
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    calls = [c for c in snapshot.commit_log if c.stage_id == "call-llm"]
    assert len(calls) == 2
    [first] = [op.value for op in calls[0].trace if op.path == ("llm_cost",)]  # the model-call commit's write
    assert first["usage"] == {
        "input_tokens": 1000,
        "output_tokens": 100,
        "cached_input_tokens": 200,
        "reasoning_tokens": 30,
    }
    # 800 fresh x 2.5 + 200 cached x 1.25 + 100 out x 10, per million
    assert first["cost_usd"] == "0.00325"
    assert first["model"] == "m" and first["iteration"] == 1
    assert first["run"]["usd"] == "0.00325" and first["run"]["calls"] == 1
    second = snapshot.calls[1]
    assert second["usage"] == {"input_tokens": 1500, "output_tokens": 50}  # unreported counts absent, not 0
    assert second["cost_usd"] == "0.00425"
    assert snapshot.cost == {
        "calls": 2,
        "usd": "0.0075",
        "input_tokens": 2500,
        "output_tokens": 150,
    }


def test_an_unpriced_model_costs_unknown_never_a_guess() -> None:
    """A model in no table costs "unknown", and the totals say which calls they miss."""
    snapshot = run(
        [call(1, Usage(10, 5)), LLMResponse("done", usage=Usage(10, 5))], model="nobody-prices-me", pricing={}
    )
    assert [row["cost_usd"] for row in snapshot.calls] == ["unknown", "unknown"]
    assert snapshot.cost["usd"] == "unknown"  # no call priced: the total is unknown, not $0
    assert snapshot.cost["unpriced"] == [1, 2]


def test_unreported_usage_is_unknown_not_zero() -> None:
    """A call whose server reported no usage records usage and cost "unknown", and its tokens are
    not in the totals."""
    snapshot = run([call(1, None), LLMResponse("done", usage=Usage(10, 5))], model="m", pricing={"m": PRICE})
    assert snapshot.calls[0]["usage"] == "unknown"
    assert snapshot.calls[0]["cost_usd"] == "unknown"
    assert snapshot.cost["input_tokens"] == 10 and snapshot.cost["unpriced"] == [1]


def test_the_built_in_table_is_dated_and_overridable() -> None:
    """``gpt-4o`` is priced from the built-in table; a ``pricing=`` entry wins over it."""
    assert PRICES_DATED and "gpt-4o" in BUILT_IN_PRICES
    built_in = run([LLMResponse("done", usage=Usage(1_000_000, 0))], model="gpt-4o", pricing={})
    assert built_in.calls[0]["cost_usd"] == "2.5"
    mine = run(
        [LLMResponse("done", usage=Usage(1_000_000, 0))],
        model="gpt-4o",
        pricing={"gpt-4o": Price(input_per_mtok=1, output_per_mtok=1)},
    )
    assert mine.calls[0]["cost_usd"] == "1"


def test_without_pricing_every_call_is_costed_from_the_built_in_table() -> None:
    """Cost on every model call by default: an agent built without ``pricing=`` records each
    call's usage and its cost for a model of the built-in table (gpt-4o: $2.50 in, $10 out per
    million), and the run's totals."""
    snapshot = run([call(1, Usage(1000, 100)), LLMResponse("done", usage=Usage(2000, 50))], model="gpt-4o")
    assert [row["cost_usd"] for row in snapshot.calls] == ["0.0035", "0.0055"]
    assert [row["usage"] for row in snapshot.calls] == [
        {"input_tokens": 1000, "output_tokens": 100},
        {"input_tokens": 2000, "output_tokens": 50},
    ]
    assert snapshot.cost == {"calls": 2, "usd": "0.009", "input_tokens": 3000, "output_tokens": 150}


def test_without_pricing_an_unpriced_model_records_usage_and_unknown_cost() -> None:
    """A model the built-in table does not price: the calls' usage is recorded as reported, their
    cost is "unknown" and so is the run's total (never $0), the tokens are still counted."""
    snapshot = run([call(1, Usage(10, 5)), LLMResponse("done", usage=Usage(20, 5))], model="my-own-model")
    assert [(row["model"], row["cost_usd"]) for row in snapshot.calls] == [
        ("my-own-model", "unknown"),
        ("my-own-model", "unknown"),
    ]
    assert snapshot.cost == {"calls": 2, "usd": "unknown", "input_tokens": 30, "output_tokens": 10, "unpriced": [1, 2]}


def test_a_run_priced_in_part_sums_the_priced_calls_and_names_the_rest() -> None:
    """One call priced, one whose server reported no usage: the total is the priced call's cost
    and the unknown one is listed under ``unpriced``."""
    snapshot = run([call(1, Usage(1_000_000, 0)), LLMResponse("done", usage=None)], model="gpt-4o")
    assert snapshot.cost["usd"] == "2.5" and snapshot.cost["unpriced"] == [2]


def test_pricing_false_records_no_cost_and_refuses_a_budget() -> None:
    """``pricing=False`` turns cost accounting off: no ``llm_cost`` key, no rows; a budget needs
    the calls' cost, so asking for both is refused at build, saying what to drop."""
    snapshot = run([LLMResponse("done", usage=Usage(10, 5))], model="gpt-4o", pricing=False)
    assert "llm_cost" not in snapshot.shared_state and snapshot.calls == []
    with pytest.raises(AgentBuildError, match=r"budget=\.\.\.\) needs each call's cost: drop pricing=False"):
        Agent.create(provider=scripted(["done"]), pricing=False, budget=Budget(calls=3)).build()


def test_a_conversation_totals_every_turn() -> None:
    """Each turn of a conversation knows what the conversation spent through it: the earlier
    turns' spend its seed loaded plus its own (``conversation_cost``); a single run has none."""
    agent = Agent.create(
        provider=scripted([LLMResponse("one", usage=Usage(1_000_000, 0)), LLMResponse("two", usage=Usage(0, 100_000))]),
        model="gpt-4o",
    ).build()
    agent.run("first", conversation="c-1")
    first = agent.last_snapshot()
    assert first is not None and first.conversation_cost == {"usd": "2.5", "tokens": 1_000_000, "calls": 1}
    agent.run("second", conversation="c-1")
    second = agent.last_snapshot()
    assert second is not None
    assert second.cost["usd"] == "1"
    assert second.conversation_cost == {"usd": "3.5", "tokens": 1_100_000, "calls": 2}
    assert run([LLMResponse("done", usage=Usage(1, 1))]).conversation_cost is None


def test_a_conversation_of_an_unpriced_model_counts_its_unknown_calls() -> None:
    """A conversation of an unpriced model: its calls and tokens add up turn by turn, and the
    calls whose cost is unknown are counted (``unpriced``), never priced at 0 silently."""
    agent = Agent.create(
        provider=scripted([LLMResponse("one", usage=Usage(10, 1)), LLMResponse("two", usage=Usage(20, 2))]),
        model="my-own-model",
    ).build()
    agent.run("first", conversation="c-2")
    agent.run("second", conversation="c-2")
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    assert snapshot.conversation_cost == {"usd": "0", "tokens": 33, "calls": 2, "unpriced": 2}


def test_identical_requests_share_a_digest_and_retries_are_counted() -> None:
    """The report gives each call a digest of what it was sent: two runs sent the same request
    have the same one (``agent why --cost`` names repeats by it); a provider's retries before an
    answer are on the call's row."""
    from agent._edge.cost_report import cost_of
    from agent.providers import RetryRecord

    digests = []
    for retries in ((RetryRecord(1, "HTTP 429", 0.5),), ()):
        agent = Agent.create(
            provider=scripted([LLMResponse("done", usage=Usage(10, 5), retries=retries)]),
            model="m",
            pricing={"m": PRICE},
        ).build()
        agent.run("same question")
        snapshot = agent.last_snapshot()
        assert snapshot is not None
        [row] = cost_of(snapshot.commit_log)["calls"]
        digests.append(row["request"])
        assert row.get("retries") == (1 if retries else None)
    assert digests[0] == digests[1]


@pytest.mark.parametrize(
    ("pricing", "message"),
    [
        (
            {"m": {"input_per_mtok": -1, "output_per_mtok": 1}},
            r"model 'm': Price\(input_per_mtok=...\) must not be negative",
        ),
        (
            {"m": {"input_per_mtok": 1, "output_per_mtok": "cheap"}},
            r"model 'm': Price\(output_per_mtok=...\) must be a number",
        ),
        ({"m": {"input_per_mtok": 1, "output_per_mtok": 1, "cache": 1}}, r"model 'm': unknown field 'cache'"),
        ({"m": 3}, r"model 'm': expected a Price"),
        ("gpt-4o", r"expected a dict of model name"),
    ],
)
def test_a_bad_price_table_is_refused_at_build_naming_the_model_and_field(pricing: Any, message: str) -> None:
    """Negative, non-numeric or unknown price fields are refused by ``build()``."""
    with pytest.raises(AgentBuildError, match=message):
        Agent.create(provider=scripted(["x"]), pricing=pricing).build()


def test_a_bad_price_is_refused_when_made() -> None:
    """``Price`` itself refuses a negative or non-numeric price, naming the field."""
    with pytest.raises(ValueError, match=r"Price\(cached_input_per_mtok=...\) must not be negative"):
        Price(input_per_mtok=1, output_per_mtok=1, cached_input_per_mtok=-0.5)
    with pytest.raises(ValueError, match=r"Price\(input_per_mtok=...\) must be a number"):
        Price(input_per_mtok=True, output_per_mtok=1)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10**7), st.integers(0, 10**6), st.one_of(st.none(), st.integers(0, 10**7))),
        min_size=1,
        max_size=6,
    ),
    st.decimals(min_value=0, max_value=100, places=3),
    st.decimals(min_value=0, max_value=100, places=3),
)
def test_per_commit_costs_sum_exactly_to_the_reported_usage(
    usages: list[tuple[int, int, int | None]], price_in: Decimal, price_out: Decimal
) -> None:
    """The model-call rows' tokens sum to what the provider reported, and their costs sum exactly
    (decimal, no float rounding) to the run's total."""
    replies: list[Any] = [
        call(n, Usage(i, o, None if c is None else min(c, i))) for n, (i, o, c) in enumerate(usages[:-1], 1)
    ]
    last_in, last_out, _ = usages[-1]
    replies.append(LLMResponse("done", usage=Usage(last_in, last_out)))
    snapshot = run(
        replies,
        model="m",
        pricing={"m": Price(input_per_mtok=str(price_in), output_per_mtok=str(price_out))},
    )
    assert sum(row["usage"]["input_tokens"] for row in snapshot.calls) == sum(u[0] for u in usages)
    assert sum(row["usage"]["output_tokens"] for row in snapshot.calls) == sum(u[1] for u in usages)
    total = sum(Decimal(row["cost_usd"]) for row in snapshot.calls)
    assert Decimal(snapshot.cost["usd"]) == total
    expected = sum(Decimal(i) * price_in + Decimal(o) * price_out for i, o, _ in usages) / Decimal(10**6)
    assert total == expected


def test_agent_why_cost_and_runs_show_say_where_the_money_went(tmp_path: Any, capsys: Any) -> None:
    """``agent why --cost`` (a trace file or a stored run) prints each call's recorded cost, the
    provider's retries and the totals; ``agent runs show`` carries the same lines."""
    from agent.cli import main as agent_main
    from agent.providers import RetryRecord
    from flowchart.store import SqliteStore

    script = [
        call(1, Usage(1000, 100, 200, None)),
        LLMResponse("done", usage=Usage(1500, 50), retries=(RetryRecord(1, "HTTP 429", 0.5),)),
    ]
    store = SqliteStore(str(tmp_path / "runs.db"))
    agent = Agent.create(provider=scripted(script), model="m", pricing={"m": PRICE}, store=store).tool(LOOKUP).build()
    assert agent.run("hi") == "done"
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    path = snapshot.result.trace().save(tmp_path / "run.trace.json")
    expected = [
        "cost: $0.0075 over 2 model call(s)",
        "tokens: 2500 in, 150 out (as reported)",
        "  call 1 (m): $0.00325 — 1000 in, 100 out, 200 cached",
        "  call 2 (m): $0.00425 — 1500 in, 50 out; 1 provider retry before it",
        "dearest call: 2 ($0.00425)",
    ]
    assert agent_main(["why", str(path), "--cost"]) == 0
    assert capsys.readouterr().out.splitlines() == expected
    run_id = store.list()[0].run_id
    assert agent_main(["why", run_id, "--cost", "--db", str(tmp_path / "runs.db")]) == 0
    assert capsys.readouterr().out.splitlines() == expected
    assert agent_main(["runs", "show", run_id, "--db", str(tmp_path / "runs.db")]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert all(line in shown for line in expected)


def test_agent_why_cost_without_pricing_shows_usage_and_unknown_cost(tmp_path: Any, capsys: Any) -> None:
    """An agent built without ``pricing=`` on an unpriced model: ``agent why --cost`` lists each
    call's reported tokens, says the cost is unknown and why (no price for the model, and how to
    add one), and gives the token totals; a priced one gives the dollars."""
    from agent.cli import main as agent_main

    for model, first in (
        (
            "my-own-model",
            "cost: unknown over 2 model call(s) (cost unknown for call(s) 1, 2: no price for "
            "'my-own-model' (pricing={...} adds one))",
        ),
        ("gpt-4o", "cost: $0.000085 over 2 model call(s)"),
    ):
        snapshot = run([call(1, Usage(10, 1)), LLMResponse("done", usage=Usage(12, 2))], model=model)
        path = snapshot.result.trace().save(tmp_path / f"{model}.trace.json")
        assert agent_main(["why", str(path), "--cost"]) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0] == first
        assert lines[1] == "tokens: 22 in, 3 out (as reported)"
        assert lines[2].startswith(f"  call 1 ({model}): ") and lines[2].endswith(" — 10 in, 1 out")


def test_agent_why_cost_with_pricing_false_says_it_was_not_recorded(tmp_path: Any, capsys: Any) -> None:
    """A record without ``llm_cost`` (``pricing=False``) says cost was not recorded, and why."""
    from agent.cli import main as agent_main

    agent = Agent.create(provider=scripted(["done"]), pricing=False).build()
    agent.run("hi")
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    path = snapshot.result.trace().save(tmp_path / "run.trace.json")
    assert agent_main(["why", str(path), "--cost"]) == 0
    assert "cost: not recorded (the agent was built with pricing=False)" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("spent_before", "message"),
    [
        ({"usd": "1", "tokens": 1, "calls": 1, "unpriced": "two"}, "a bad unpriced: 'two'"),
        ({"usd": "1", "tokens": 1, "calls": 1, "unpriced": -1}, "a bad unpriced: -1"),
        ({"usd": "lots", "tokens": 1, "calls": 1}, "not a number: 'lots'"),
    ],
)
def test_a_turns_recorded_spend_is_checked_before_it_is_added(spent_before: Any, message: str) -> None:
    """What a conversation spent is read back from a stored record (untrusted): a malformed
    count of unpriced calls or total is refused naming the field, never added."""
    from agent._chart.conversation_turns import spent_through
    from agent.errors import ConversationError

    with pytest.raises(ConversationError, match=message):
        spent_through({"conversation": {"spent_before": spent_before}})
