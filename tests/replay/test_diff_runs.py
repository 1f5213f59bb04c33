"""``diff_runs`` / ``flowchart diff A B`` / ``agent diff A B``: where a run went differently.

Each test runs real charts (or agents on the scripted provider) twice and diffs the records.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from agent import Agent, define_tool
from agent.providers import scripted
from flowchart import DiffError, Redaction, decide, diff_runs, flow_chart
from flowchart.cli import main as flowchart_main


def _route(scope: Any) -> Any:
    return decide(scope, [{"when": {"n": {"lt": 3}}, "then": "more", "label": "Need more"}], "done")


def _chart(bump: int = 1, *, redaction: Redaction | None = None) -> Any:
    def start(scope: Any, ctx: Any) -> None:
        scope.n = ctx.args["count"]
        scope.secret = ctx.args.get("secret", "s3cret")

    def more(scope: Any) -> None:
        scope.n = scope.n + bump
        scope.outcome = "more"

    def done(scope: Any) -> None:
        scope.outcome = "done"

    return (
        flow_chart("Start", start, "start")
        .add_decider_function("Check", _route, "check")
        .add_function_branch("more", "More", more)
        .add_function_branch("done", "Done", done)
        .end()
        .build()
    )


def test_a_run_diffed_with_itself_is_the_same() -> None:
    """Two runs of one chart on one input: nothing moved, and the text says so."""
    chart = _chart()
    diff = diff_runs(chart.run({"count": 2}), chart.run({"count": 2}))
    assert diff.same
    assert diff.lines()[-1] == "no difference: the same commits, decisions and final state"
    assert diff.to_dict()["first_divergence"] is None


def test_the_moved_decision_names_the_rule_and_its_evidence_on_both_sides() -> None:
    """A decider that went the other way is told as ``route: was → now`` and the first rule whose
    outcome changed, with its condition on both sides; a key differs only when its final value does,
    and carries the commit that wrote it on each side."""
    chart = _chart()
    diff = diff_runs(chart.run({"count": 2}), chart.run({"count": 3}))
    assert diff.divergence is not None and diff.divergence.idx == -1
    assert [line for move in diff.moved for line in move.lines()] == [
        "check#1: more → done",
        "decider Check: rule 0 'Need more' n 3 lt 3 ✗ (was n 2 lt 3 ✓)",
    ]
    keys = {k.key: k for k in diff.keys}
    assert "n" not in keys  # 2 + 1 on A, 3 from the start on B: the same final value
    assert keys["outcome"].line() == '~ outcome: "more" (commit 2) → "done" (commit 2)'
    assert keys["outcome"].a == "more" and keys["outcome"].b == "done"
    assert (keys["outcome"].a_writer, keys["outcome"].b_writer) == (2, 2)


def test_the_first_divergent_commit_is_named_when_the_code_changed() -> None:
    """Same input, a stage that now writes something else: the first divergent commit is that stage's."""
    a = _chart(bump=1).run({"count": 1})
    b = _chart(bump=2).run({"count": 1})
    diff = diff_runs(a, b)
    assert diff.divergence is not None
    assert diff.divergence.line() == "first divergent commit: #2 more#2 (writes)"
    assert not diff.moved


def test_runs_of_two_different_charts_are_refused() -> None:
    """Different fingerprints: a clear error naming both runs."""
    other = flow_chart("Only", lambda scope: None, "only").build()
    a, b = _chart().run({"count": 1}), other.run({})
    with pytest.raises(DiffError, match=r"cannot diff runs of two different charts: run \w+ is of chart"):
        diff_runs(a, b)
    with pytest.raises(DiffError, match="expected a Record, a ShownRecord"):
        diff_runs(a, 42)


def test_a_key_either_run_hides_is_hidden_on_both_sides() -> None:
    """Run B shows ``secret``, run A hides it: the diff shows neither side's value (the union
    rule), not even that the values differed."""
    hidden = _chart().run({"count": 1, "secret": "alpha"}, redaction=Redaction(keys={"secret"}))
    shown = _chart().run({"count": 1, "secret": "beta"})
    diff = diff_runs(hidden, shown)
    text = diff.format() + json.dumps(diff.to_dict())
    assert "alpha" not in text and "beta" not in text
    assert diff.same  # they differ only in a hidden value: the diff cannot tell it, so it does not


def _lookup(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    return {"id": args["order_id"], "amount": 10}


def _agent(script: list[Any]) -> Agent:
    tool = define_tool(
        name="lookup",
        description="Look an order up.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
        execute=_lookup,
    )
    return Agent.create(provider=scripted(script), model="m").system("sys").tools([tool]).build()


TOOL_SCRIPT: list[Any] = [
    {"content": "x", "tool_calls": [{"id": "c1", "name": "lookup", "args": {"order_id": "A"}}]},
    "done",
]


def test_an_agent_route_that_moved_is_told_with_its_runtime_id() -> None:
    """The model answered at once instead of asking for a tool: ``route#2: tool-calls → final``,
    and the first divergent commit is the model call's."""
    first = _agent(TOOL_SCRIPT)
    first.run("hello")
    second = _agent(["done"])
    second.run("hello")
    diff = diff_runs(first.last_snapshot(), second.last_snapshot())
    assert diff.divergence is not None and diff.divergence.line() == "first divergent commit: #1 call-llm#1 (writes)"
    assert diff.moved[0].lines()[0] == "route#2: tool-calls → final"


def _cli(main: Any, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(list(argv))
    return status, out.getvalue(), err.getvalue()


def test_the_commands_print_the_diff_and_its_json(tmp_path: Path) -> None:
    """``flowchart diff A B`` and ``agent diff A B`` print the same diff; ``--json`` its value;
    ``flowchart diff TRACE A B`` still diffs two commits of one trace."""
    from agent.cli import main as agent_main

    chart = _chart()
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    chart.run({"count": 2}).trace().save(a)
    chart.run({"count": 3}).trace().save(b)
    status, out, _ = _cli(flowchart_main, "diff", str(a), str(b))
    assert status == 0 and "  check#1: more → done" in out.splitlines()
    status, agent_out, _ = _cli(agent_main, "diff", str(a), str(b))
    assert status == 0 and agent_out == out
    status, out, _ = _cli(flowchart_main, "diff", str(a), str(b), "--json")
    assert json.loads(out)["moved"][0]["after"] == "done"
    status, out, _ = _cli(flowchart_main, "diff", str(a), "-1", "0")
    assert status == 0 and out.startswith("state after commit -1 → state after commit 0:")
    status, _, err = _cli(flowchart_main, "diff", str(a), "x", "0")
    assert status == 2 and "A 'x': expected a commit index" in err
    other = tmp_path / "other.json"
    flow_chart("Only", lambda scope: None, "only").build().run({}).trace().save(other)
    status, _, err = _cli(flowchart_main, "diff", str(a), str(other))
    assert status == 2 and "cannot diff runs of two different charts" in err


def _refund_agent(script: list[Any], store: Any) -> Agent:
    refund = define_tool(
        name="issue_refund",
        description="Refund an order.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}},
        execute=lambda args, ctx: f"refunded {args['amount']}",
        check_in=lambda args, ctx: args["amount"] > 100,
    )
    return Agent.create(provider=scripted(script), model="m", store=store).tools([refund]).build()


def test_a_check_in_that_was_answered_and_then_not_asked_is_a_moved_decision(tmp_path: Path) -> None:
    """Run A paused for a person (alice approved), run B's amount needed nobody: the diff says
    ``check-in issue_refund: approved by alice → not asked``."""
    from flowchart.store import SqliteStore
    from governance import check_in_approved

    store = SqliteStore(tmp_path / "runs.db")

    def script(amount: float) -> list[Any]:
        call = {"id": "c1", "name": "issue_refund", "args": {"amount": amount}}
        return [{"content": "", "tool_calls": [call]}, "done"]

    paused = _refund_agent(script(150.0), store).run("refund 150")
    assert not isinstance(paused, str) and paused.check_in is not None
    decision = check_in_approved(request=paused.check_in, by="alice", at="2026-12-01T00:00:00Z")
    _refund_agent(script(150.0), store).resume_run(paused.run_id, decision)
    small = _refund_agent(script(50.0), store)
    small.run("refund 150")
    diff = diff_runs(store.get(paused.run_id), store.get(small.last_snapshot().record.run_id))
    lines = [line for move in diff.moved for line in move.lines()]
    assert "check-in issue_refund: approved by alice → not asked" in lines


def test_values_that_differ_only_in_run_bound_ids_are_the_same() -> None:
    """A request id bound to its run (``cki_<32 hex>``) differs between any two runs: not a difference."""

    def start(scope: Any, ctx: Any) -> None:
        scope.ticket = {"request_id": "cki_" + ctx.args["hex"] * 32, "amount": ctx.args["amount"]}

    chart = flow_chart("Start", start, "start").build()
    same = diff_runs(chart.run({"hex": "a", "amount": 1}), chart.run({"hex": "b", "amount": 1}))
    assert [k.key for k in same.keys] == [] and (same.divergence is None or same.divergence.differs == ("input",))
    moved = diff_runs(chart.run({"hex": "a", "amount": 1}), chart.run({"hex": "b", "amount": 2}))
    assert [k.key for k in moved.keys] == ["ticket"]
