"""otel_recorder: the exact span trees of charts and agents, with the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_helpers import build, call, calls, refund_tool
from opentelemetry.trace import SpanKind, StatusCode
from otel_helpers import memory_provider, tree

from agent import AgentBuildError, Paused
from flowchart import Redaction, flow_chart
from flowchart.otel import otel_recorder
from governance import check_in_approved


def seed(scope: Any) -> None:
    scope.x = 1


def add_one(scope: Any) -> None:
    scope.y = scope.x + 1


def write_z(scope: Any) -> None:
    scope.z = 3


def by_name(exporter: Any, name: str) -> Any:
    [span] = [s for s in exporter.get_finished_spans() if s.name == name]
    return span


def test_a_chart_run_is_one_span_with_a_span_per_stage() -> None:
    """A linear chart: the run span holds one span per stage, with runtime id, commit idx, reads and writes."""
    provider, exporter = memory_provider()
    chart = flow_chart("Seed", seed, "seed").add_function("AddOne", add_one, "add").build()
    result = chart.run(recorders=[otel_recorder(provider)])
    assert tree(exporter.get_finished_spans()) == [["flowchart.run", ["Seed", "AddOne"]]]
    run = by_name(exporter, "flowchart.run")
    assert dict(run.attributes) == {"flowchart.run_id": result.run_id, "flowchart.run.status": "done"}
    add = by_name(exporter, "AddOne")
    assert dict(add.attributes) == {
        "flowchart.stage.id": "add",
        "flowchart.stage.runtime_id": "add#1",
        "flowchart.commit.idx": 1,
        "flowchart.stage.reads": ("x",),
        "flowchart.stage.writes": ("y",),
        "flowchart.stage.type": "linear",
    }


def test_a_subflow_nests_its_stages_under_the_mount_span() -> None:
    """The subflow's stages are children of the mount's span, which carries the mount's own commit."""
    provider, exporter = memory_provider()
    sub = flow_chart("SubSeed", seed, "s1").add_function("SubAdd", add_one, "s2").build()
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_subflow_chart_next("m", sub, mount_name="Mount", output_mapper=lambda s, p: {"y": s["y"]})
        .add_function("Last", write_z, "last")
        .build()
    )
    chart.run(recorders=[otel_recorder(provider)])
    spans = exporter.get_finished_spans()
    assert tree(spans, attribute="flowchart.stage.runtime_id") == [
        [
            "flowchart.run",
            ["Seed [seed#0]", ["Mount [m#1]", ["SubSeed [m/s1#2]", "SubAdd [m/s2#3]"]], "Last [last#4]"],
        ]
    ]
    mount = by_name(exporter, "Mount")
    assert (mount.attributes["flowchart.commit.idx"], mount.attributes["flowchart.stage.writes"]) == (1, ("y",))


def test_fork_children_run_under_a_fork_span() -> None:
    """A fork's children are siblings under one ``fork <parent>`` span, in declaration order."""
    provider, exporter = memory_provider()
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_list_of_function([("f1", "Left", write_z), ("f2", "Right", write_z)])
        .add_function("After", add_one, "after")
        .build()
    )
    chart.run(recorders=[otel_recorder(provider)])
    spans = exporter.get_finished_spans()
    assert tree(spans, attribute="flowchart.commit.idx") == [
        ["flowchart.run", ["Seed [0]", ["fork Seed", ["Left [1]", "Right [2]"]], "After [3]"]]
    ]
    assert by_name(exporter, "fork Seed").attributes["flowchart.fork.children"] == ("Left", "Right")


def test_the_run_span_is_a_child_of_the_callers_span() -> None:
    """Parent context comes from the caller: a run inside a request's span is that span's child."""
    provider, exporter = memory_provider()
    chart = flow_chart("Seed", seed, "seed").build()
    with provider.get_tracer("web").start_as_current_span("GET /orders"):
        chart.run(recorders=[otel_recorder(provider)])
    assert tree(exporter.get_finished_spans()) == [["GET /orders", [["flowchart.run", ["Seed"]]]]]


def test_a_failing_stage_sets_error_status_on_its_span_and_the_run() -> None:
    """A stage that raises: its span and the run span have status ERROR, the exception recorded."""
    provider, exporter = memory_provider()

    def boom(scope: Any) -> None:
        raise ValueError("no stock")

    chart = flow_chart("Seed", seed, "seed").add_function("Boom", boom, "boom").build()
    with pytest.raises(ValueError, match=r"^no stock$"):
        chart.run(recorders=[otel_recorder(provider)])
    boom_span, run = by_name(exporter, "Boom"), by_name(exporter, "flowchart.run")
    assert boom_span.status.status_code is StatusCode.ERROR
    assert [e.name for e in boom_span.events] == ["exception"]
    assert boom_span.attributes["error.type"] == "ValueError"
    assert (run.status.status_code, run.attributes["flowchart.run.status"]) == (StatusCode.ERROR, "failed")
    assert by_name(exporter, "Seed").status.status_code is StatusCode.UNSET


def test_values_are_exported_only_as_the_redacted_log_has_them() -> None:
    """values=True adds written values; a redacted key shows as REDACTED, never its value."""
    provider, exporter = memory_provider()

    def secrets(scope: Any) -> None:
        scope.ssn = "123-45-6789"
        scope.name = "Ada"

    chart = flow_chart("Secrets", secrets, "secrets").build()
    chart.run(recorders=[otel_recorder(provider, values=True)], redaction=Redaction(keys=["ssn"]))
    span = by_name(exporter, "Secrets")
    assert span.attributes["flowchart.write.ssn"] == '"REDACTED"'
    assert span.attributes["flowchart.write.name"] == '"Ada"'
    assert span.attributes["flowchart.stage.redacted"] == ("ssn",)
    provider2, exporter2 = memory_provider()
    chart.run(recorders=[otel_recorder(provider2)])
    assert not any(k.startswith("flowchart.write.") for k in by_name(exporter2, "Secrets").attributes)


REFUND_CALL = calls(call("c1", "refund", order_id="A1", amount=250), content="Refunding now.")


def test_an_agent_with_a_paused_check_in_exports_genai_spans_and_links_the_resume() -> None:
    """Agent.create(recorders=[...]): chat and execute_tool spans with GenAI attributes, the
    check-in pause as span events, and the resumed run linked to the paused one."""
    provider, exporter = memory_provider()
    agent, _ = build([REFUND_CALL, "Done."], refund_tool(check_in="always"), recorders=[otel_recorder(provider)])
    out = agent.run("refund A1")
    assert isinstance(out, Paused)
    paused_spans = exporter.get_finished_spans()
    assert tree(paused_spans) == [
        ["invoke_agent", ["Seed", ["CallLLM", ["chat mock"]], "Route", ["ToolCalls", ["execute_tool refund"]]]]
    ]
    chat = by_name(exporter, "chat mock")
    assert chat.kind is SpanKind.CLIENT
    assert {k: v for k, v in chat.attributes.items() if k.startswith("gen_ai.")} == {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "mock",
        "gen_ai.usage.input_tokens": chat.attributes["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": 3,
        "gen_ai.response.finish_reasons": ("tool_use",),
    }
    tool = by_name(exporter, "execute_tool refund")
    assert dict(tool.attributes) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "refund",
        "gen_ai.tool.call.id": "c1",
    }
    assert [(e.name, dict(e.attributes)) for e in tool.events] == [
        ("checkin.request", {"tool_name": "refund", "tool_call_id": "c1"})
    ]
    paused_run = by_name(exporter, "invoke_agent")
    assert paused_run.attributes["flowchart.run.status"] == "paused"
    assert [e.name for e in paused_run.events] == ["flowchart.pause"]
    assert dict(paused_run.events[0].attributes) == {
        "flowchart.stage.id": "tool-calls",
        "flowchart.pause.kind": "check_in",
        "flowchart.pause.tool_name": "refund",
        "flowchart.pause.tool_call_id": "c1",
    }

    exporter.clear()
    assert agent.resume(out.checkpoint, check_in_approved(request=out.check_in, by="alice")) == "Done."
    spans = exporter.get_finished_spans()
    assert tree(spans) == [
        [
            "invoke_agent",
            [
                "ToolCalls",
                ["ToolCalls", ["execute_tool refund"]],
                ["CallLLM", ["chat mock"]],
                "Route",
                ["Final", ["PrepareFinal", "BreakFinal"]],
            ],
        ]
    ]
    # the first ToolCalls span is the commit that records alice's answer, before the tool runs
    answer_span, tool_stage = (s for s in spans if s.name == "ToolCalls")
    assert answer_span.attributes["flowchart.stage.type"] == "answer"
    assert "human_decisions" in answer_span.attributes["flowchart.stage.writes"]
    assert "history" in tool_stage.attributes["flowchart.stage.writes"]
    resumed = by_name(exporter, "invoke_agent")
    assert resumed.attributes["flowchart.resumed_from"] == out.checkpoint.run_id
    [link] = resumed.links
    assert link.context.span_id == paused_run.context.span_id
    assert resumed.context.trace_id != paused_run.context.trace_id  # a new trace, linked (not nested)
    assert [(e.name, dict(e.attributes)) for e in by_name(exporter, "execute_tool refund").events] == [
        ("human.answer", {"kind": "check_in", "tool_call_id": "c1"}),
        ("human.decision", {"tool_name": "refund", "tool_call_id": "c1", "approved": True, "by": "alice"}),
    ]


def test_a_tool_that_raises_sets_error_status_on_its_tool_span() -> None:
    """A tool's exception goes back to the model as its result; its execute_tool span is ERROR."""
    provider, exporter = memory_provider()

    def broken(args: Any, ctx: Any) -> Any:
        raise RuntimeError("card declined")

    agent, _ = build([REFUND_CALL, "Sorry."], refund_tool(broken), recorders=[otel_recorder(provider)])
    assert agent.run("refund A1") == "Sorry."
    tool = by_name(exporter, "execute_tool refund")
    assert (tool.status.status_code, tool.attributes["error.type"]) == (StatusCode.ERROR, "tool_error")
    assert by_name(exporter, "invoke_agent").status.status_code is StatusCode.UNSET


def test_agent_recorders_must_be_recorders() -> None:
    """Agent.create(recorders=[...]) refuses an object with no recorder hook, naming it."""
    with pytest.raises(AgentBuildError, match=r"^Agent.create\(recorders=...\): str has no recorder hook"):
        build(["hi"], recorders=["otel"])


def test_otel_recorder_refuses_something_that_is_not_a_tracer_provider() -> None:
    """otel_recorder(tracer_provider=...) names what it got when it is not a provider."""
    with pytest.raises(TypeError, match=r"^otel_recorder\(tracer_provider=...\): expected an OpenTelemetry"):
        otel_recorder("jaeger")


async def test_a_sync_run_inside_a_running_loop_keeps_the_callers_span_as_parent() -> None:
    """chart.run() called inside a running loop runs in a helper thread, in a copy of the
    caller's context: the run span is still the caller's span's child."""
    provider, exporter = memory_provider()

    async def slow_seed(scope: Any) -> None:
        await asyncio.sleep(0)
        scope.x = 1

    chart = flow_chart("Seed", slow_seed, "seed").build()
    with provider.get_tracer("web").start_as_current_span("GET /async"):
        chart.run(recorders=[otel_recorder(provider)])
    assert tree(exporter.get_finished_spans()) == [["GET /async", [["flowchart.run", ["Seed"]]]]]


def test_an_answered_middleware_ask_shows_the_answer_and_the_askers_verdict() -> None:
    """A middleware ask: the pause is a span event; on resume the call's span carries the
    answer and the asker's allow (filed by the person's approval), and the tool runs in it."""
    from types import SimpleNamespace

    from governance import allow, ask

    def risk(c: Any) -> Any:
        return ask("Refund over 100?") if c.args["amount"] > 100 else allow()

    provider, exporter = memory_provider()
    agent, _ = build(
        [REFUND_CALL, "Done."],
        refund_tool(),
        recorders=[otel_recorder(provider)],
        configure=lambda b: b.tool_middleware(SimpleNamespace(name="risk", on_tool_call=risk)),
    )
    out = agent.run("refund A1")
    assert isinstance(out, Paused) and out.ask is not None
    tool = by_name(exporter, "execute_tool refund")
    assert [(e.name, dict(e.attributes)) for e in tool.events] == [
        (
            "middleware.decision",
            {
                "middleware": "risk",
                "moment": "before-tool",
                "outcome": "ask",
                "tool_name": "refund",
                "tool_call_id": "c1",
            },
        )
    ]
    exporter.clear()
    assert agent.resume(out.checkpoint, check_in_approved(request=out.ask, by="bob")) == "Done."
    resumed_tool = by_name(exporter, "execute_tool refund")
    assert resumed_tool.status.status_code is StatusCode.UNSET
    assert [(e.name, e.attributes.get("outcome"), e.attributes.get("kind")) for e in resumed_tool.events] == [
        ("human.answer", None, "ask"),
        ("middleware.decision", "allow", None),
    ]


def test_a_stored_run_resumed_by_run_id_links_to_its_paused_segment() -> None:
    """With a run store, resume_run(run_id, ...) continues the stored run: the new segment's span
    names the paused segment's engine run id and links to its span."""
    from flowchart.store import MemoryStore

    provider, exporter = memory_provider()
    agent, _ = build(
        [REFUND_CALL, "Done."], refund_tool(check_in="always"), recorders=[otel_recorder(provider)], store=MemoryStore()
    )
    out = agent.run("refund A1")
    assert isinstance(out, Paused) and out.run_id is not None
    paused_run = by_name(exporter, "invoke_agent")
    exporter.clear()
    assert agent.resume_run(out.run_id, check_in_approved(request=out.check_in, by="alice")) == "Done."
    resumed = by_name(exporter, "invoke_agent")
    assert resumed.attributes["flowchart.resumed_from"] == paused_run.attributes["flowchart.run_id"]
    assert [link.context.span_id for link in resumed.links] == [paused_run.context.span_id]


def test_a_selectors_chosen_branches_run_under_a_fork_span() -> None:
    """A selector: the branches it chose (and only those) are children of ``fork <selector>``."""
    provider, exporter = memory_provider()
    chart = (
        flow_chart("Seed", seed, "seed")
        .add_selector_function("Pick", lambda scope: ["a", "b"], "pick")
        .add_function_branch("a", "A", write_z)
        .add_function_branch("b", "B", write_z)
        .add_function_branch("c", "C", write_z)
        .end()
        .add_function("After", add_one, "after")
        .build()
    )
    chart.run(recorders=[otel_recorder(provider)])
    assert tree(exporter.get_finished_spans()) == [
        ["flowchart.run", ["Seed", "Pick", ["fork Pick", ["A", "B"]], "After"]]
    ]
