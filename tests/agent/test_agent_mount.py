"""An agent mounted in a chart (``add_agent``) is a subflow like any other: one entry in
``subflow_results`` per execution, and a handoff target's pause pauses the run (docs/agents.md)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest
from agent_helpers import call, calls

from agent import Agent
from agent.providers import scripted
from flowchart import flow_chart


def agent_on(replies: list[Any], system: str = "You help.", configure: Any = None, **create: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    builder = Agent.create(provider=provider, model="mock", **create).system(system)
    return (configure(builder) if configure else builder).build(), provider


def count(scope: Any, ctx: Any) -> None:
    scope.n = scope.n + 1 if "n" in scope else 1


def test_a_mounted_agent_leaves_one_subflow_entry_per_execution() -> None:
    """A planner mounted in a loop runs twice: two entries for the mount (its runtime ids) and one
    for each run of its own ``final`` subflow — never a second key for the same execution."""
    planner, _ = agent_on(["the plan"], "Plan.")
    chart = (
        flow_chart("Count", count, "count")
        .add_agent("Planner", planner, "planner", message=lambda s: f"Plan round {s['n']}", into="plan")
        .add_decider_function("More", lambda s, c: "again" if s["n"] < 2 else "done", "more")
        .add_function_branch("again", "Again", count, loop_to="planner")
        .add_function_branch("done", "Done", lambda s, c: None)
        .end()
        .build()
    )
    result = chart.run()
    assert result.state["plan"] == "the plan"
    runs = result.subflow_results
    mounts = [sub for sub in runs.values() if sub.mount_id == "planner"]
    assert [sub.state["user_message"] for sub in mounts] == ["Plan round 1", "Plan round 2"]
    assert len(runs) == 4 and all(key == sub.runtime_stage_id for key, sub in runs.items())
    assert sorted(sub.mount_id for sub in runs.values()) == ["planner", "planner", "planner/final", "planner/final"]
    assert runs["planner"] is mounts[-1]  # the path finds the latest execution (footprintjs's key)


# -- a pause inside a handoff ------------------------------------------------------------------
def _refund_desk(store: Any = None) -> tuple[Agent, Any, Agent, Any]:
    """Triage hands over to billing, whose ``refund`` tool checks in with a person first."""
    from agent import define_tool

    refunds: list[Any] = []

    def refund(args: dict[str, Any], ctx: Any) -> str:
        refunds.append(args)
        return f"refunded {args['amount']} EUR"

    tool = define_tool(
        name="refund",
        description="Refund an order.",
        input_schema={"type": "object", "properties": {"amount": {"type": "number"}}, "required": ["amount"]},
        execute=refund,
        check_in="always",
    )
    billing, _ = agent_on(
        [calls(call("r1", "refund", amount=40)), "Refunded 40 EUR."],
        "Billing desk ZQX.",
        configure=lambda b: b.tool(tool),
    )
    triage, triage_p = agent_on(
        [calls(call("h1", "transfer_to_billing", reason="a refund"))],
        "Triage.",
        configure=lambda b: b.handoff(billing, name="billing", description="Billing questions."),
        **({} if store is None else {"store": store}),
    )
    return triage, triage_p, billing, refunds


def test_a_check_in_inside_a_handoff_pauses_the_run_and_the_answer_resumes_through_it() -> None:
    """The receiver's check-in pauses the run that handed off (its pause data, naming the handoff);
    the person's decision, given to the triage agent, resumes billing and the run ends with its answer."""
    from governance import check_in_approved

    triage, _, billing, refunds = _refund_desk()
    paused = triage.run("Refund my order 9, please")
    assert paused.kind == "check_in" and paused.pause_data["handoff"] == "billing"
    assert paused.check_in is not None and paused.check_in.tool == "refund" and refunds == []
    # the receiver's checkpoint (its real state) is held for the resume, never shown in the record
    held = paused.checkpoint.shared_state["handoff_paused"]
    assert held["to"] == "billing" and held["checkpoint"]["shared_state"]["system_prompt"] == "Billing desk ZQX."
    (commit,) = [c for c in triage.last_snapshot().result.trace().record.commits if c.stage_id == "handoff"]
    assert commit.trace[0].value["checkpoint"] == "REDACTED" and commit.trace[0].value["to"] == "billing"
    answer = triage.resume(paused.checkpoint, check_in_approved(request=paused.check_in, by="alice"))
    assert answer == "Refunded 40 EUR." and refunds == [{"amount": 40}]
    (row,) = triage.last_snapshot().shared_state["handoffs"]
    assert row["to"] == "billing" and row["answer"] == "Refunded 40 EUR." and row["reason"] == "a refund"
    assert row["run_id"] == billing.last_snapshot().result.run_id
    assert "handoff_paused" not in triage.last_snapshot().shared_state


def test_a_handoff_pause_resumes_in_a_fresh_process_from_the_checkpoint_json() -> None:
    """The checkpoint (as JSON) carries the receiver's checkpoint: agents built anew resume it, and a
    decision for another request is refused by the receiver before anything runs."""
    from flowchart import Checkpoint
    from governance import ResumeDecisionError, check_in_approved

    triage, _, _, _ = _refund_desk()
    paused = triage.run("Refund my order 9, please")
    text = paused.checkpoint.to_json()
    fresh, _, _, refunds = _refund_desk()  # another process: new agents, nothing in memory
    loaded = Checkpoint.from_json(text)
    other = check_in_approved(request=attrs.evolve(paused.check_in, id="another-request"), by="alice")
    with pytest.raises(ResumeDecisionError, match=r"another-request"):
        fresh.resume(loaded, other)
    assert refunds == []
    assert fresh.resume(loaded, check_in_approved(request=paused.check_in, by="alice")) == "Refunded 40 EUR."
    assert refunds == [{"amount": 40}]


def test_ask_human_in_a_handoff_target_pauses_twice_and_the_chain_goes_on() -> None:
    """Triage → billing → refunds (two handoffs); refunds asks a person twice: each answer resumes
    the whole chain, and the answer comes back up as triage's."""
    from agent import ask_human, define_tool

    confirm = define_tool(
        name="confirm", description="Ask.", input_schema={"type": "object"}, execute=lambda a, c: ask_human("sure?")
    )
    refunds, _ = agent_on(
        [calls(call("c1", "confirm")), calls(call("c2", "confirm")), "Done twice."], configure=lambda b: b.tool(confirm)
    )
    billing, _ = agent_on(
        [calls(call("h2", "transfer_to_refunds", reason="refund"))],
        configure=lambda b: b.handoff(refunds, name="refunds"),
    )
    triage, _ = agent_on(
        [calls(call("h1", "transfer_to_billing", reason="money"))],
        configure=lambda b: b.handoff(billing, name="billing"),
    )
    first = triage.run("refund")
    assert (
        first.kind == "ask_human" and first.pause_data["data"] == "sure?" and first.pause_data["handoff"] == "billing"
    )
    second = triage.resume(first.checkpoint, "yes")
    assert second.kind == "ask_human"
    assert triage.resume(second.checkpoint, "yes again") == "Done twice."
    assert [row["to"] for row in triage.last_snapshot().shared_state["handoffs"]] == ["billing"]
    assert [row["to"] for row in billing.last_snapshot().shared_state["handoffs"]] == ["refunds"]


def test_a_stored_run_paused_inside_a_handoff_resumes_by_its_run_id(tmp_path: Any) -> None:
    """With a run store, the run that handed off is stored paused; ``resume_run(run_id, decision)``
    (the receiver checks the decision first) answers it once and the run ends with the receiver's answer."""
    from flowchart.store import SqliteStore
    from governance import ResumeDecisionError, check_in_approved

    store = SqliteStore(tmp_path / "runs.db")
    triage, _, _, _ = _refund_desk(store=store)
    paused = triage.run("Refund my order 9, please")
    assert paused.run_id is not None and store.get(paused.run_id).status == "paused"
    fresh, _, _, refunds = _refund_desk(store=store)  # another process
    decision = check_in_approved(request=paused.check_in, by="alice")
    wrong = check_in_approved(request=attrs.evolve(paused.check_in, id="another-request"), by="alice")
    with pytest.raises(ResumeDecisionError, match=r"another-request"):
        fresh.resume_run(paused.run_id, wrong)
    assert fresh.resume_run(paused.run_id, decision) == "Refunded 40 EUR." and refunds == [{"amount": 40}]
    assert store.get(paused.run_id).status == "done"
    with pytest.raises(ResumeDecisionError, match=r"not waiting for an answer"):
        fresh.resume_run(paused.run_id, decision)


# -- why across the mount ----------------------------------------------------------------------
def _plan_and_execute() -> Any:
    planner, _ = agent_on(["1. buy milk"], "Plan.")
    executor, _ = agent_on(["Done: milk bought."], "Execute.")

    def start(scope: Any, ctx: Any) -> None:
        scope.goal = "errands"

    return (
        flow_chart("Start", start, "start")
        .add_agent("Planner", planner, "planner", message=lambda s: f"Plan: {s['goal']}", into="plan")
        .add_agent("Executor", executor, "executor", message=lambda s: f"Do:\n{s['plan']}", into="report")
        .build()
        .run()
    )


def _why(*args: str) -> str:
    import contextlib
    import io

    from flowchart.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["why", *args]) == 0
    return out.getvalue()


def test_flowchart_why_crosses_into_a_mounted_agent_and_back_out(tmp_path: Any) -> None:
    """``flowchart why TRACE report`` goes on inside the executor's log (the answer's model call);
    ``--in executor user_message`` goes out through the mount's message function to the planner's
    answer and inside the planner to its model call."""
    path = tmp_path / "run.json"
    _plan_and_execute().trace().save(path)
    inward = _why(str(path), "report")
    assert inward.startswith("report ← Executor (executor#8) [wrote: report]\n")
    assert "⤷ into the subflow executor#8: 'report' is its 'final_content' (the same value)" in inward
    assert "llm_latest_content ← CallLLM (executor/call-llm#10)" in inward
    assert "⤷ into the subflow planner#1: 'plan' is its 'final_content' (the same value)" in inward
    outward = _why(str(path), "user_message", "--in", "executor")
    assert outward.startswith("user_message ← Seed (executor/seed#9)")
    assert "⤶ out of the subflow executor#8: its input mapper read 'plan'" in outward
    assert "  plan ← Planner (planner#1) [wrote: plan]\n    goal ← Start (start#0) [wrote: goal]" in outward
    assert "llm_latest_content ← CallLLM (planner/call-llm#3)" in outward


def test_explain_answer_of_the_outer_trace_names_what_the_mount_was_sent_from() -> None:
    """``explain_answer(outer trace)`` explains the last mounted agent inside, and out of the mount
    names the chart's stages its message was made from — the planner's answer with its model call."""
    from agent import explain_answer

    text = explain_answer(_plan_and_execute().trace()).format()
    assert text.startswith('Inside the agent mounted at executor#8:\nThe answer: "Done: milk bought."')
    assert (
        "Out of the mount: the message executor#8 sent was made from\n"
        "  plan ← Planner (planner#1): the answer of the agent mounted there, its model call planner/call-llm#3\n"
        "  goal ← Start (start#0)"
    ) in text


# -- the narrative of a mount ------------------------------------------------------------------
def test_a_mounted_agent_narrates_no_emit_lines_while_the_chart_and_plain_subflows_still_do() -> None:
    """With emits on, the chart's own ``ctx.emit`` and a plain subflow's are told; the mounted
    agent's events (its listeners', not the story's) are not — its stages are nested as any subflow's."""
    from flowchart import narrative

    planner, _ = agent_on(["the plan"], "Plan.")

    def start(scope: Any, ctx: Any) -> None:
        scope.goal = "errands"
        ctx.emit("chart.started", {"goal": "errands"})

    plain = flow_chart("Note", lambda s, c: c.emit("plain.noted", {"n": 1}), "note").build()
    chart = (
        flow_chart("Start", start, "start")
        .add_agent("Planner", planner, "planner", message=lambda s: f"Plan: {s['goal']}", into="plan")
        .add_subflow_chart_next("plain", plain, mount_name="Plain")
        .build()
    )
    told = narrative()
    chart.run(recorders=[told])
    lines = told.lines()
    assert [line for line in lines if line.startswith("[emit]")] == [
        "[emit] chart.started: {goal}",
        "[emit] plain.noted: {n}",
    ]
    assert "Entering the Planner subflow." in lines and "Stage 2: Next, it moved on to planner/CallLLM." in lines
    assert lines.index("Exiting the Planner subflow.") < lines.index("Entering the Plain subflow.")


# -- the agent's own run options inside the mount ----------------------------------------------
SECRET = "card 4111-0000-9999"


def test_the_mounted_agents_redaction_rule_hides_inside_the_mount_in_every_reader(tmp_path: Any) -> None:
    """The chart runs with no rule; the agent's rule (it hides the user's message and its answer)
    applies inside the mount: the trace, the narrative, a stored run, the viewer and ``why`` show
    the placeholder, and the answer written to ``into`` is hidden too — the live state keeps it."""
    from agent import explain_answer
    from flowchart import Redaction, narrative
    from flowchart.store import SqliteStore
    from flowchart.store.export import record_trace
    from flowchart.viewer import render_page

    clerk, _ = agent_on(
        [f"Refunded to {SECRET}."],
        "Refunds.",
        redaction=Redaction(keys={"user_message", "llm_latest_content", "final_content"}),
    )
    chart = (
        flow_chart("Start", lambda s, c: setattr(s, "order", "o-9"), "start")
        .add_agent("Clerk", clerk, "clerk", message=lambda s: f"Refund {s['order']} to {SECRET}", into="receipt")
        .build()
    )
    told = narrative()
    store = SqliteStore(tmp_path / "runs.db")
    result = chart.run(recorders=[told], store=store)
    assert result.state["receipt"] == f"Refunded to {SECRET}."  # the live state keeps real values
    assert result.subflow_results["clerk"].state["user_message"] == f"Refund o-9 to {SECRET}"
    trace = result.trace()
    readers = {
        "trace": trace.to_json(),
        "narrative": "\n".join(told.lines()),
        "store": record_trace(store.get(result.run_id)).to_json(),
        "viewer": render_page(trace),
        "why": trace.why_across("user_message", where="clerk").format(),
        "explain": explain_answer(trace).format(),
    }
    assert {name for name, text in readers.items() if "4111" in text} == set()
    assert "user_message ← Seed (clerk/seed#" in readers["why"]
    (mount,) = [c for c in trace.commit_log if c.stage_id == "clerk"]
    assert mount.trace[0].path == ("receipt",) and mount.trace[0].value == "REDACTED"
    assert trace.subflows["clerk#1"].initial_state["input_message"] == "REDACTED"


def test_the_mounted_agents_loop_limit_applies_inside_the_mount() -> None:
    """The chart's cap of 1 loop would stop the agent's tool round; inside the mount the agent's own
    loop limit applies, and the chart's cap still holds outside it."""
    from agent import define_tool
    from flowchart import LoopLimitError

    lookup = define_tool(
        name="lookup", description="Look up.", input_schema={"type": "object"}, execute=lambda a, c: "ok"
    )
    helper, _ = agent_on(
        [calls(call("a", "lookup")), calls(call("b", "lookup")), "Found it."], configure=lambda b: b.tool(lookup)
    )
    chart = flow_chart("Start", lambda s, c: None, "start").add_agent(
        "Helper", helper, "helper", message=lambda s: "go", into="answer"
    )
    assert chart.build().run(max_iterations=1).state["answer"] == "Found it."
    looping = (
        flow_chart("Count", count, "count")
        .add_decider_function("More", lambda s, c: "again" if s["n"] < 5 else "done", "more")
        .add_function_branch("again", "Again", count, loop_to="count")
        .add_function_branch("done", "Done", lambda s, c: None)
        .end()
        .build()
    )
    with pytest.raises(LoopLimitError, match=r"Maximum loop iterations \(1\) exceeded for node 'count'"):
        looping.run(max_iterations=1)


def test_the_mounted_agents_timeout_applies_inside_the_mount() -> None:
    """The chart has no timeout; the agent's own (0.05 s) stops its run inside the mount, naming it."""
    import time

    from agent import define_tool
    from flowchart import RunTimeoutError

    def slow(args: Any, ctx: Any) -> str:
        time.sleep(0.2)
        return "late"

    lookup = define_tool(name="lookup", description="Look up.", input_schema={"type": "object"}, execute=slow)
    helper, _ = agent_on([calls(call("a", "lookup")), "Found it."], configure=lambda b: b.tool(lookup), timeout=0.05)
    chart = (
        flow_chart("Start", lambda s, c: None, "start")
        .add_agent("Helper", helper, "helper", message=lambda s: "go", into="answer")
        .build()
    )
    with pytest.raises(RunTimeoutError, match=r"timed out after 0\.05 s"):
        chart.run()


def test_a_tampered_handoff_pause_is_refused_before_anything_runs() -> None:
    """The held pause is untrusted like the rest of a checkpoint: a handoff the agent does not
    declare is a CompositionError naming it; a held checkpoint that is not one is refused by the
    one codec, naming its path — and nothing ran."""
    from agent.errors import CompositionError
    from flowchart import Checkpoint, CheckpointError
    from governance import check_in_approved

    triage, _, _, refunds = _refund_desk()
    paused = triage.run("Refund my order 9, please")
    decision = check_in_approved(request=paused.check_in, by="alice")

    def tampered(held: dict[str, Any]) -> Checkpoint:
        data = paused.checkpoint.to_dict()
        data["shared_state"]["handoff_paused"] = held
        return Checkpoint.from_dict(data)

    with pytest.raises(
        CompositionError, match=r"paused inside a handoff to 'nobody', which this agent does not declare"
    ):
        triage.resume(tampered({"to": "nobody"}), decision)
    with pytest.raises(CheckpointError, match=r"Invalid checkpoint: expected an object, got a string @ \$"):
        triage.resume(
            tampered({"to": "billing", "kind": "check_in", "chain": [], "row": {}, "checkpoint": "x"}), decision
        )
    assert refunds == []


def test_a_stream_of_the_chart_hides_inside_the_mount_under_the_agents_rule() -> None:
    """``chart.stream`` runs under the same rule as ``chart.run``: the mounted agent's scope hides its
    user message in the stream's events and in the final record."""
    from flowchart import Redaction

    clerk, _ = agent_on(["Done."], "Refunds.", redaction=Redaction(keys={"user_message"}))
    chart = (
        flow_chart("Start", lambda s, c: None, "start")
        .add_agent("Clerk", clerk, "clerk", message=lambda s: f"Refund to {SECRET}", into="receipt")
        .build()
    )
    events = list(chart.stream())
    assert events[-1].kind == "final"
    assert "4111" not in repr(events[:-1])
    assert "4111" not in events[-1].result.trace().to_json()
