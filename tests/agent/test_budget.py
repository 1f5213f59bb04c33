"""Budgets checked before each model call: pause (a person raises it), stop, wrap_up.

Each test runs a real agent on the scripted provider whose replies report known usage, so the
call that would go past the budget is known in advance.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import Agent, AgentBuildError, Budget, Paused, Price, define_tool
from agent.errors import BudgetExceededError
from agent.providers import LLMResponse, ToolCall, Usage, scripted

RAN: list[str] = []


def _lookup(args: dict[str, Any], ctx: Any) -> str:
    RAN.append(ctx.tool_call_id)
    return "found"


LOOKUP = define_tool(
    name="lookup",
    description="Look something up.",
    input_schema={"type": "object", "properties": {}},
    execute=_lookup,
)
PRICE = {"m": Price(input_per_mtok=1, output_per_mtok=1)}  # $1 per million tokens: 1000 tokens = $0.001


def replies(calls: int, tokens: int = 1000) -> list[LLMResponse]:
    """``calls`` tool-calling replies then the answer, each reporting ``tokens`` input tokens."""
    out = [
        LLMResponse("", (ToolCall(f"c{n}", "lookup", {}),), Usage(tokens, 0), "tool_use") for n in range(1, calls + 1)
    ]
    return [*out, LLMResponse("done", usage=Usage(tokens, 0))]


def agent_with(budget: Budget, script: list[Any]) -> Agent:
    return (
        Agent.create(provider=scripted(script), model="m", pricing=PRICE, budget=budget)
        .tool(LOOKUP)
        .max_iterations(50)
        .build()
    )


def test_pause_asks_a_person_before_the_call_that_would_exceed() -> None:
    """With $0.0025 and calls of $0.001, the third call would exceed: the run pauses before it,
    asking in words, and the raise lets the run finish without re-running anything."""
    RAN.clear()
    agent = agent_with(Budget(usd=0.0025, on_exceed="pause"), replies(4))
    paused = agent.run("go")
    assert isinstance(paused, Paused) and paused.kind == "budget"
    assert paused.pause_data["question"] == "this run has spent $0.002 of $0.0025; raise the budget to $0.005?"
    assert paused.pause_data["overrun"] == {
        "field": "usd",
        "spent": "0.002",
        "limit": "0.0025",
        "estimate": "0.001",
        "per": "run",
    }
    assert len(agent.config.provider.requests) == 2
    assert RAN == ["c1", "c2"]
    assert agent.resume(paused.checkpoint, {"approved": True, "usd": 1.0}) == "done"
    assert RAN == ["c1", "c2", "c3", "c4"]  # nothing ran twice
    assert len(agent.config.provider.requests) == 5
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    decisions = snapshot.shared_state["budget"]["decisions"]
    assert [d["decision"] for d in decisions] == ["paused", "raised"]
    assert snapshot.shared_state["budget"]["raised"] == {"usd": "1"}
    # the record says it too, commit by commit: the answer's own commit writes the raise, and the
    # pause's value was not changed in place afterwards
    [answer] = [op.value for c in snapshot.commit_log for op in c.trace if op.path == ("budget",)][:1]
    assert [d["decision"] for d in answer["decisions"]] == ["paused", "raised"]
    assert [d["decision"] for d in paused.checkpoint.shared_state["budget"]["decisions"]] == ["paused"]


def test_pause_declined_ends_with_the_typed_error() -> None:
    """A person who declines to raise it ends the run with ``BudgetExceededError``."""
    agent = agent_with(Budget(calls=1, on_exceed="pause"), replies(2))
    paused = agent.run("go")
    assert isinstance(paused, Paused)
    with pytest.raises(BudgetExceededError, match=r"spent 1 of 1 model calls"):
        agent.resume(paused.checkpoint, {"approved": False, "note": "too dear"})


def test_stop_raises_before_the_call() -> None:
    """``on_exceed="stop"``: the call that would exceed is not made; the error names the limit."""
    agent = agent_with(Budget(tokens=2500, on_exceed="stop"), replies(5))
    with pytest.raises(BudgetExceededError, match=r"spent 2000 of 2500 tokens") as caught:
        agent.run("go")
    assert caught.value.overrun["field"] == "tokens"
    assert len(agent.config.provider.requests) == 2
    snapshot = agent.last_snapshot()
    assert snapshot is not None and snapshot.shared_state["budget"]["decisions"][-1]["decision"] == "stopped"


def test_wrap_up_makes_one_last_call_without_tools() -> None:
    """``on_exceed="wrap_up"``: one last call is made, offering no tools, and its text is the answer."""
    script = [*replies(2)[:2], LLMResponse("my best answer", usage=Usage(1000, 0))]
    agent = agent_with(Budget(calls=2, on_exceed="wrap_up"), script)
    assert agent.run("go") == "my best answer"
    requests = agent.config.provider.requests
    assert len(requests) == 3 and requests[-1].tools == [] and requests[0].tools != []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"usd": 0}, r"Budget\(usd=...\) must be above 0"),
        ({"usd": -1.5}, r"Budget\(usd=...\) must be above 0"),
        ({"tokens": 0}, r"Budget\(tokens=...\) must be above 0"),
        ({"calls": 2.5}, r"Budget\(calls=...\) must be a whole number"),
        ({}, r"Budget\(...\) needs a limit"),
        ({"calls": 1, "on_exceed": "panic"}, r"Budget\(on_exceed=...\) must be one of 'pause', 'stop', 'wrap_up'"),
        ({"calls": 1, "per": "day"}, r"Budget\(per=...\) must be one of 'run', 'conversation'"),
    ],
)
def test_a_bad_budget_is_refused(kwargs: dict[str, Any], message: str) -> None:
    """A budget of 0 or below, or an unknown mode, is refused when made, naming the field."""
    with pytest.raises(ValueError, match=message):
        Budget(**kwargs)


def test_budget_must_be_a_budget() -> None:
    """``budget=`` takes a ``Budget``; anything else is refused at build."""
    with pytest.raises(AgentBuildError, match=r"budget=...\): expected a Budget"):
        Agent.create(provider=scripted(["x"]), budget={"usd": 1}).build()


def test_a_bad_answer_to_a_budget_pause_is_refused_before_anything_runs() -> None:
    """An answer that is not ``{"approved": ...}`` or raises to 0 is refused; the pause stays usable."""
    agent = agent_with(Budget(calls=1), replies(2))
    paused = agent.run("go")
    assert isinstance(paused, Paused)
    with pytest.raises(ValueError, match=r"a budget pause is answered with"):
        agent.resume(paused.checkpoint, "yes")
    with pytest.raises(ValueError, match=r"Budget\(calls=...\) must be above 0"):
        agent.resume(paused.checkpoint, {"approved": True, "calls": 0})
    again = agent.resume(paused.checkpoint, {"approved": True})  # no limits given: the suggested 2 calls
    assert isinstance(again, Paused) and again.pause_data["suggested"] == {"calls": 4}
    assert agent.resume(again.checkpoint, {"approved": True, "calls": 9}) == "done"


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 6),  # tool rounds in the script
    st.integers(1, 9000),  # tokens each call reports
    st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("0.05"), places=4),
)
def test_randomised_budgets_pause_before_the_exceeding_call_and_rerun_nothing(
    rounds: int, tokens: int, usd: Decimal
) -> None:
    """For any budget: every call made keeps the spend within it (the pause lands before the call
    that would exceed), and after the raise no stage that completed runs again (each tool call
    runs once and the provider is asked exactly once per reply)."""
    RAN.clear()
    agent = agent_with(Budget(usd=float(usd), on_exceed="pause"), replies(rounds, tokens))
    per_call = Decimal(tokens) / Decimal(10**6)
    result = agent.run("go")
    made = len(agent.config.provider.requests)
    assert per_call * made <= Decimal(str(float(usd))) or made == 1  # the first call is estimated at 0
    if per_call * (rounds + 1) <= Decimal(str(float(usd))):
        assert result == "done"
        return
    assert isinstance(result, Paused)
    # the call that would exceed: one more call at this price would pass the budget
    assert per_call * (made + 1) > Decimal(str(float(usd))) or made == 0
    before = len(agent.last_snapshot().commit_log)  # type: ignore[union-attr]
    while isinstance(result, Paused):
        result = agent.resume(result.checkpoint, {"approved": True, "usd": 10.0})
    assert result == "done"
    assert len(agent.config.provider.requests) == rounds + 1
    assert [f"c{n}" for n in range(1, rounds + 1)] == RAN
    assert before > 0


@pytest.mark.parametrize("stored", [False, True])
def test_a_conversation_budget_counts_every_turn(tmp_path: Any, stored: bool) -> None:
    """``per="conversation"``: turn 3 starts with what turns 1 and 2 spent (the plan's
    ``spent_before``, in memory and in a store), so its first call would pass 2 calls and is
    not made; a ``per="run"`` budget of 2 calls lets every turn through."""
    from flowchart.store import SqliteStore

    def build(per: str) -> Agent:
        store = SqliteStore(str(tmp_path / f"{per}.db")) if stored else None
        script = [LLMResponse(f"answer {n}", usage=Usage(10, 1)) for n in (1, 2, 3)]
        return Agent.create(
            provider=scripted(script),
            model="m",
            pricing=PRICE,
            budget=Budget(calls=2, per=per, on_exceed="stop"),
            store=store,
        ).build()

    agent = build("conversation")
    assert agent.run("one", conversation="c-1") == "answer 1"
    assert agent.run("two", conversation="c-1") == "answer 2"
    with pytest.raises(BudgetExceededError, match=r"the conversation has spent 2 of 2 model calls"):
        agent.run("three", conversation="c-1")
    snapshot = agent.last_snapshot()
    assert snapshot is not None
    assert snapshot.shared_state["conversation"]["spent_before"] == {"usd": "0.000022", "tokens": 22, "calls": 2}
    per_run = build("run")
    assert [per_run.run(m, conversation="c-1") for m in ("one", "two", "three")] == ["answer 1", "answer 2", "answer 3"]


def test_a_budget_pause_is_answered_from_the_command_line(tmp_path: Any, capsys: Any) -> None:
    """A stored run paused by its budget: ``agent runs show`` asks the question, ``agent runs
    approve`` raises the budget as suggested and the run finishes."""
    from agent.cli import main as agent_main
    from flowchart.store import SqliteStore

    db = str(tmp_path / "runs.db")
    (tmp_path / "budget_app.py").write_text(
        "from agent import Agent, Budget, Price, define_tool\n"
        "from agent.providers import LLMResponse, ToolCall, Usage\n"
        "from flowchart.store import SqliteStore\n\n\n"
        "class Bot:  # answers from the messages alone: the same in every process\n"
        "    name = 'bot'\n\n"
        "    def complete(self, req):\n"
        "        if any(m['role'] == 'tool' for m in req.messages):\n"
        "            return LLMResponse('done', usage=Usage(1000, 0))\n"
        "        return LLMResponse('', (ToolCall('c1', 'lookup', {}),), Usage(1000, 0), 'tool_use')\n\n\n"
        "def make():\n"
        "    look = define_tool(name='lookup', description='Look.', input_schema={'type': 'object'},\n"
        "                       execute=lambda a, c: 'found')\n"
        f"    return Agent.create(provider=Bot(), model='m', store=SqliteStore({db!r}),\n"
        "        pricing={'m': Price(input_per_mtok=1, output_per_mtok=1)},\n"
        "        budget=Budget(calls=1)).tool(look).build()\n"
    )
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        import budget_app  # type: ignore[import-not-found]

        paused = budget_app.make().run("go")
        assert isinstance(paused, Paused) and paused.run_id is not None
        assert agent_main(["runs", "show", paused.run_id, "--db", db]) == 0
        assert "question: budget: this run has spent 1 of 1 model calls; raise the budget to 2 model calls?" in (
            capsys.readouterr().out
        )
        args = ["runs", "approve", paused.run_id, "--by", "ada", "--db", db, "--agent", "budget_app:make"]
        assert agent_main([*args, "--app-dir", str(tmp_path)]) == 0
        assert capsys.readouterr().out.strip() == f"run {paused.run_id}: approved by ada; done: done"
        from flowchart import replay

        state = replay(SqliteStore(db).get(paused.run_id).commit_log)
        assert [d["decision"] for d in state["budget"]["decisions"]] == ["paused", "raised"]
        assert state["budget"]["decisions"][1]["by"] == "ada"
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("budget_app", None)
