"""``explain_answer`` / ``agent why``: an answer explained by the content the model saw.

Each test builds a small agent on the scripted provider, runs it, and asserts the exact
lines the explanation prints for one kind of origin (the user's message, a rewritten
input, a tool result, a rewritten result, a denied call, a wrap-up, a human answer).
"""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from agent_helpers import build, call, calls, refund_tool, weather_tool

from agent import ExplainError, explain_answer
from agent.cli import main as agent_main
from governance import allow, deny


def _explained(agent: Any, **options: Any) -> list[str]:
    return explain_answer(agent.last_snapshot().result.trace(), **options).format().splitlines()


def test_a_plain_answer_is_explained_by_the_users_message() -> None:
    """No tools: the answer comes from one call that was sent the system prompt and the user's message."""
    agent, _ = build(["Hello there."], system="You greet.")
    agent.run("Hi!")
    assert _explained(agent) == [
        'The answer: "Hello there."',
        "  written by model call 1 of 1 (call-llm#1), iteration 1, model mock via scripted, usage 3 in / 3 out",
        "It was sent 2 message(s):",
        '  0. the system prompt: "You greet."',
        '  1. the user\'s message: "Hi!"',
        "Decisions on the way:",
        "  - route#2: chose final — LLM produced no tool calls — final answer",
    ]


def test_a_tool_result_names_its_call_and_the_model_call_that_asked() -> None:
    """A tool round: the tool result is quoted with the call (name, args, id) it answered."""
    agent, _ = build([calls(call("c1", "weather", city="Paris")), "Sunny in Paris."], weather_tool(), system=None)
    agent.run("Weather in Paris?")
    lines = _explained(agent)
    assert lines[2:5] == [
        "It was sent 3 message(s):",
        '  1. the user\'s message: "Weather in Paris?"',
        '  2. model call 1 asked for weather(city=Paris): ""',
    ]
    assert lines[5] == '  3. tool result of weather(city=Paris) [c1]: "Paris: sunny"'
    assert "model call 2 of 2" in lines[1]


def test_a_rewritten_input_names_the_middleware_that_rewrote_it() -> None:
    """An input middleware that changed the message is listed under the user's message, with its why."""
    scrub = SimpleNamespace(
        name="scrub", on_message=lambda m: allow(m.content.replace("secret", "[x]"), why="removed a secret")
    )
    agent, _ = build(["Done."], system=None, configure=lambda b: b.message_middleware(scrub))
    agent.run("my secret plan")
    assert _explained(agent)[3:5] == [
        '  1. the user\'s message: "my [x] plan"',
        "       input middleware: changed by scrub (removed a secret)",
    ]


def test_a_rewritten_tool_result_names_the_after_tool_middleware() -> None:
    """An after-tool middleware that changed a result is listed under that result."""
    shout = SimpleNamespace(name="shout", on_tool_result=lambda c: allow(str(c.result).upper(), why="house style"))
    agent, _ = build(
        [calls(call("c1", "weather", city="Oslo")), "Cold."],
        weather_tool(),
        system=None,
        configure=lambda b: b.tool_middleware(shout),
    )
    agent.run("Oslo?")
    lines = _explained(agent)
    at = lines.index('  3. tool result of weather(city=Oslo) [c1]: "OSLO: SUNNY"')
    assert lines[at + 1] == "       after-tool middleware: changed by shout (house style)"


def test_a_denied_call_shows_the_denial_as_result_and_decision() -> None:
    """A before-tool denial: the model read the reason; the denial is a decision on the way."""
    guard = SimpleNamespace(name="guard", on_tool_call=lambda c: deny("refunds are closed"))
    agent, _ = build(
        [calls(call("r1", "refund", order_id="A", amount=5)), "Sorry, no refunds today."],
        refund_tool(),
        system=None,
        configure=lambda b: b.tool_middleware(guard),
    )
    agent.run("Refund A")
    lines = _explained(agent)
    at = next(i for i, line in enumerate(lines) if line.startswith("  3. tool result of refund"))
    assert lines[at] == '  3. tool result of refund(order_id=A, amount=5) [r1]: "refunds are closed"'
    assert lines[at + 1] == "       before-tool middleware: denied by guard (refunds are closed)"
    assert "  - refund: denied by guard (refunds are closed)" in lines


def test_a_wrap_up_instruction_is_named_as_injected() -> None:
    """When the budget runs out the injected wrap-up instruction is one of the sent messages."""
    agent, _ = build(
        [calls(call("c1", "weather", city="A")), "Best I can do."],
        weather_tool(),
        system=None,
        max_iterations=1,
    )
    agent.run("Weather?")
    lines = _explained(agent)
    assert any(line.startswith("  2. wrap-up instruction (the iteration budget ran out): ") for line in lines)
    assert any("chose wrap-up — max_iterations reached with tool calls pending" in line for line in lines)


def test_drivers_rank_the_message_sharing_most_words_with_the_answer() -> None:
    """``drivers=True`` scores each sent message by Jaccard overlap with the answer; the top one is named."""
    agent, _ = build([calls(call("c1", "weather", city="Rome")), "Rome: sunny today."], weather_tool(), system=None)
    agent.run("Weather in Rome please?")
    lines = _explained(agent, drivers=True)
    assert lines[-2] == "Most likely driver: message 3 (tool result of weather(city=Rome) [c1]), overlap 0.667"
    assert lines[-1] == "  written at tool-calls#3 (commit 3)"


def test_call_n_explains_an_earlier_model_call() -> None:
    """``call=1`` explains the first call (what it asked for), with only the decisions before it."""
    agent, _ = build([calls(call("c1", "weather", city="Rome")), "ok"], weather_tool(), system=None)
    agent.run("Rome?")
    lines = _explained(agent, call=1)
    assert lines[0] == 'Model call 1: ""'
    assert lines[2:4] == ["It was sent 1 message(s):", '  1. the user\'s message: "Rome?"']
    assert "Decisions on the way:" not in lines


def test_an_out_of_range_call_is_refused_with_the_range() -> None:
    """``call=5`` on a two-call run names the valid range."""
    agent, _ = build(["a"], system=None)
    agent.run("x")
    with pytest.raises(ExplainError, match=r"^call 5 is out of range: the run made 1 model call\(s\) \(1\.\.1\)$"):
        explain_answer(agent.last_snapshot().result.trace(), call=5)


def test_bookkeeping_keys_never_appear() -> None:
    """Token totals and iteration counters are not part of an explanation."""
    agent, _ = build([calls(call("c1", "weather", city="A")), "Done."], weather_tool())
    agent.run("A?")
    text = explain_answer(agent.last_snapshot().result.trace()).format()
    for key in ("total_input_tokens", "total_output_tokens", "llm_latest_tool_calls", "max_iterations"):
        assert key not in text


def test_to_dict_is_json_safe_and_matches_format() -> None:
    """``to_dict`` round-trips through JSON and carries the same messages ``format`` prints."""
    agent, _ = build([calls(call("c1", "weather", city="A")), "Done."], weather_tool(), system=None)
    agent.run("A?")
    explanation = explain_answer(agent.last_snapshot().result.trace())
    data = json.loads(json.dumps(explanation.to_dict()))
    assert [m["origin"] for m in data["sent"]] == [m.origin for m in explanation.sent]
    assert data["answer"] == "Done."


def test_agent_why_prints_the_explanation_of_a_trace_file(tmp_path: Any, capsys: Any) -> None:
    """``agent why TRACE`` prints what ``explain_answer(...).format()`` returns; ``--keys`` the key chain."""
    agent, _ = build(["Hello."], system=None)
    agent.run("Hi")
    path = agent.last_snapshot().result.trace().save(tmp_path / "run.trace.json")
    assert agent_main(["why", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[0] == 'The answer: "Hello."'
    assert agent_main(["why", str(path), "--keys"]) == 0
    assert capsys.readouterr().out.startswith("final_content ← Final (final#")


def test_agent_why_without_a_model_call_is_one_error_line(tmp_path: Any, capsys: Any) -> None:
    """A trace with no model call (a denied input) is one ``agent: error:`` line, exit 2."""
    stop = SimpleNamespace(name="stop", on_message=lambda m: deny("no"))
    agent, _ = build(["never"], system=None, configure=lambda b: b.message_middleware(stop))
    with pytest.raises(Exception, match="denied"):
        agent.run("x")
    path = agent.last_snapshot().result.trace().save(tmp_path / "denied.trace.json")
    assert agent_main(["why", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        "agent: error: the record holds no model call (no 'call-llm' commit): there is no answer to explain"
    )


def _approve_and_explain(approved: bool, **decision: Any) -> list[str]:
    from governance import check_in_approved, check_in_declined

    agent, _ = build(
        [calls(call("r1", "refund", order_id="A-7", amount=500)), "Handled."],
        refund_tool(check_in="always"),
        system=None,
    )
    paused = agent.run("Refund A-7")
    make = check_in_approved if approved else check_in_declined
    answer = make(request=paused.check_in, by="alice", at="2026-12-01T10:00:00Z", **decision)
    assert agent.resume(paused.checkpoint, answer) == "Handled."
    return _explained(agent)


def test_an_approved_check_in_says_who_approved_under_the_tool_result() -> None:
    """The tool result of an approved call carries "approved by alice at …" and the decision is on the way."""
    lines = _approve_and_explain(True, note="ok by policy")
    at = lines.index('  3. tool result of refund(order_id=A-7, amount=500) [r1]: "refunded 500 on A-7"')
    assert lines[at + 1] == '       approved by alice at 2026-12-01T10:00:00Z ("ok by policy")'
    sentence = "alice approved refund(order_id=A-7, amount=500): ok by policy (at 2026-12-01T10:00:00Z)"
    assert any(line.endswith(f": {sentence}") for line in lines)


def test_a_declined_check_in_says_who_declined_and_what_the_model_read() -> None:
    """A declined call never ran: the model read the decline, and the line names who declined."""
    lines = _approve_and_explain(False, note="too large")
    at = next(i for i, line in enumerate(lines) if line.startswith("  3. tool result of refund"))
    assert lines[at] == '  3. tool result of refund(order_id=A-7, amount=500) [r1]: "declined by human: too large"'
    assert lines[at + 1] == '       declined by alice at 2026-12-01T10:00:00Z ("too large")'


def test_an_edited_approval_shows_the_edited_args() -> None:
    """An approval that edited the call says so, with the args the tool really ran with."""
    lines = _approve_and_explain(True, args={"order_id": "A-7", "amount": 100})
    at = next(i for i, line in enumerate(lines) if line.startswith("  3. tool result of refund"))
    assert lines[at].endswith('"refunded 100 on A-7"')
    assert (
        lines[at + 1]
        == '       approved by alice at 2026-12-01T10:00:00Z, args edited to {"order_id": "A-7", "amount": 100}'
    )


def test_an_ask_human_reply_is_named_as_a_persons_answer() -> None:
    """A tool that asked a person: the reply is the result the model read, and the line says a person gave it."""
    from agent import ask_human, define_tool

    def confirm(args: dict[str, Any], ctx: Any) -> str:
        return str(ask_human({"question": "Ship it?"}))

    tool = define_tool(name="confirm", description="Ask a person.", input_schema={"type": "object"}, execute=confirm)
    agent, _ = build([calls(call("h1", "confirm")), "Shipped."], tool, system=None)
    paused = agent.run("Ship?")
    assert agent.resume(paused.checkpoint, "yes") == "Shipped."
    lines = _explained(agent)
    at = lines.index('  3. tool result of confirm() [h1]: "yes"')
    assert lines[at + 1] == '       a person answered "yes"'


def test_repeated_call_ids_each_get_their_own_call_and_decision(tmp_path: Any) -> None:
    """Two turns that both call ``c1`` (scripted providers and some servers reuse ids): each tool
    result names its own arguments and the person who approved THAT call (``why`` printed
    "approved by alice" under the other result, with the other arguments)."""
    from flowchart.store import SqliteStore
    from governance import check_in_approved

    store = SqliteStore(tmp_path / "runs.db")
    agent, _ = build(
        [
            calls(call("c1", "refund", order_id="A-1", amount=500)),
            calls(call("c1", "refund", order_id="A-2", amount=700)),
            "Both handled.",
        ],
        refund_tool(check_in="always"),
        system=None,
        store=store,
    )
    first = agent.run("Refund A-1 and A-2")
    second = agent.resume_run(first.run_id, check_in_approved(request=first.check_in, by="alice", at="T1"))
    assert agent.resume_run(second.run_id, check_in_approved(request=second.check_in, by="bob", at="T2")) == (
        "Both handled."
    )
    lines = explain_answer(store.get(first.run_id)).format().splitlines()
    one = lines.index('  3. tool result of refund(order_id=A-1, amount=500) [c1]: "refunded 500 on A-1"')
    assert lines[one + 1] == "       approved by alice at T1"
    two = lines.index('  5. tool result of refund(order_id=A-2, amount=700) [c1]: "refunded 700 on A-2"')
    assert lines[two + 1] == "       approved by bob at T2"
    assert lines[two + 2 :] == [] or not lines[two + 2].startswith("       approved by")


@pytest.mark.parametrize(
    ("evidence", "ledgers"),
    [(100000, {}), ({"rules": 5}, {}), ("x", {"human_decisions": {"a": 1}, "middleware_decisions": 7})],
    ids=["evidence-a-number", "rules-a-number", "ledgers-not-lists"],
)
def test_a_loaded_record_with_an_odd_decision_or_ledger_still_explains(evidence: Any, ledgers: dict[str, Any]) -> None:
    """A trace (or stored row) whose route decision's evidence, or whose decision ledgers, hold another
    shape is explained with the route's default reason (``agent why``, ``agent runs show`` raised
    ``AttributeError`` / ``TypeError``; found by the stored-row campaign)."""
    agent, _ = build(["Hello there."], system="You greet.")
    agent.run("Hi!")
    data = agent.last_snapshot().result.trace().to_dict()
    route = next(c for c in data["commit_log"] if c["stage_id"] == "route")
    route["decision"] = {"chosen": "final", "evidence": evidence}
    seed = data["commit_log"][0]
    seed["trace"] += [{"path": [key], "verb": "set", "value": value} for key, value in ledgers.items()]
    from flowchart import Trace

    lines = explain_answer(Trace.from_dict(data)).format().splitlines()
    assert lines[-2:] == ["Decisions on the way:", "  - route#2: chose final — default"]
