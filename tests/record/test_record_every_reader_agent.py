"""Every reader of an agent run hides what the agent's redaction hides, but the call a person approves.

The probe (``record_probe.probe_agent``): the model calls ``pay`` with a bad card (the tool
raises, its message naming the secret) and with the secret card (a check-in pauses the turn),
then answers with the card; a second turn follows in the same conversation; runs are kept in
a SQLite store. The rule hides the user's message, the model's content and answer, the card
inside a tool call, the history's texts and the tool error's message. Documented exceptions:
what ``run`` returns (the answer, the ``Paused``: the stream's ``final`` event), the call the
check-in asks about (its tool and args, restated in ``will_do``), the checkpoint, and the
store's raw columns a resume or a waiting caller needs (input, checkpoint, question, answer, output).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from record_probe import AGENT_RULE, SECRET, Everything, card_agent, cli, leaking, probe_agent, stored_rows

from agent import Paused, explain_answer
from agent import cli as agent_cli
from agent._chart.redaction_cover import recorded_rule
from flowchart import Redaction, replay
from flowchart import cli as flowchart_cli
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace
from governance import check_in_approved

#: the store's columns that keep real values, documented: what resumes a run (input, checkpoint),
#: the question a person answers and the answer (the call), the output a waiting caller is given
RAW_COLUMNS = ("runs.input", "runs.checkpoint", "runs.question", "runs.output", "answers.answer")


def _without_the_call(request: dict[str, Any]) -> dict[str, Any]:
    """A check-in request without what the exception covers: the call (tool, args, ``will_do``)."""
    evidence = {k: v for k, v in request["evidence"].items() if k != "will_do"}
    return {**{k: v for k, v in request.items() if k not in ("args", "evidence")}, "evidence": evidence}


def test_a_hidden_user_message_is_hidden_in_the_recorded_input(tmp_path: Path) -> None:
    """A rule hiding ``user_message`` hides the run input's ``input_message``: in the
    ``on_run_start`` event, ``agent runs show`` (text and JSON), the trace's ``run_input``.
    (The message is also the history's first entry: the rule hides the history's texts too.)"""
    store = SqliteStore(tmp_path / "runs.db")
    seen = Everything()
    rule = Redaction(keys=["user_message"], fields={"history": ["content"]})
    from agent import Agent
    from agent.providers import mock

    agent = Agent.create(provider=mock(reply="ok"), model="m", redaction=rule, store=store, recorders=[seen]).build()
    assert agent.run(f"my card is {SECRET}") == "ok"
    (record,) = store.list()
    db = ("--db", str(tmp_path / "runs.db"))
    readings = [
        ("run start", [repr(e) for hook, e in seen.seen if hook == "on_run_start"]),
        ("runs show", cli(agent_cli.main, "runs", "show", record.run_id, *db)),
        ("runs show --json", cli(agent_cli.main, "runs", "show", record.run_id, "--json", *db)),
        ("trace run_input", record_trace(record).run_input),
    ]
    assert leaking(readings) == []
    assert record_trace(record).run_input["input_message"] == "REDACTED"
    assert record.input["input_message"] == f"my card is {SECRET}"  # kept raw: a queued run starts from it


def test_a_hidden_tool_argument_is_hidden_in_the_paused_call_and_the_human_decision(tmp_path: Path) -> None:
    """``fields={"llm_latest_tool_calls": ["args.card"]}`` hides the card wherever the agent
    repeats the call's args in the commit log: the assistant turn in ``history``, the paused call
    (``paused_tool_call``) and the row of who approved it (``human_decisions``)."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = probe_agent(store, turns=1)
    paused = agent.run("pay")
    assert isinstance(paused, Paused)
    agent.resume_run(paused.run_id, check_in_approved(request=paused.check_in, by="alice"))
    log = store.get(paused.run_id).commit_log
    (paused_call,) = [op.value for c in log for op in c.trace if op.path[0] == "paused_tool_call" and op.value]
    assert paused_call["args"] == {"card": "REDACTED"}
    recorded = replay(list(log))
    assert recorded["human_decisions"][0]["args"] == {"card": "REDACTED"}
    assert [call["args"] for m in recorded["history"] for call in m.get("tool_calls", [])] == [{"card": "REDACTED"}] * 2
    assert leaking([("commit log", [c.to_dict() for c in log])]) == []
    assert agent.last_snapshot().shared_state["human_decisions"][0]["args"] == {"card": SECRET}  # live: real


def test_a_check_in_request_shows_the_call_as_asked_and_the_rest_as_recorded() -> None:
    """The request a check-in records — its events, the pause, what a person reads — carries
    the call as asked (``args``, ``will_do``), and the content and history it quotes as the
    rule shows them: ``intent`` and the ``read``/``drivers`` frames of the hidden user message
    and tool result are ``[REDACTED]``."""
    paused = probe_agent(turns=1).run(f"pay with {SECRET}")
    request = paused.check_in.to_dict()
    assert request["args"] == {"card": SECRET} and SECRET in request["evidence"]["will_do"]
    assert request["intent"] == "[REDACTED]"
    assert {f["id"]: f["summary"] for f in request["evidence"]["read"]} == {
        "system-1": "You pay bills.",
        "task-1": "[REDACTED]",
        "result-1": "pay: [REDACTED]",
    }
    assert leaking([("request beyond the call", _without_the_call(request))]) == []


def test_a_refused_structured_reply_is_hidden_when_the_content_is_hidden() -> None:
    """With ``output_schema=``, a reply that never matched is kept in ``output_schema_error``:
    its ``content`` is the hidden ``llm_latest_content`` again, so the log holds ``"REDACTED"``;
    the ``OutputSchemaError`` ``run`` raises (the caller's answer) keeps the reply."""
    from agent import Agent, OutputSchemaError
    from agent.providers import scripted

    reply = json.dumps({"n": SECRET})
    rule = Redaction(keys=["user_message", "llm_latest_content", "final_content"], fields={"history": ["content"]})
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    agent = Agent.create(
        provider=scripted([reply] * 2), model="m", redaction=rule, output_schema=schema, output_retries=1
    ).build()
    with pytest.raises(OutputSchemaError, match=r"does not match the output schema after 1 retry") as caught:
        agent.run("count")
    assert SECRET in caught.value.text
    log = agent.last_snapshot().commit_log
    assert replay(list(log))["output_schema_error"]["content"] == "REDACTED"
    assert leaking([("commit log", [c.to_dict() for c in log]), ("narrative", agent.last_snapshot().narrative)]) == []


def test_runs_show_hides_the_answer_when_final_content_is_hidden(tmp_path: Path) -> None:
    """``agent runs show`` (text and JSON) prints an agent run's output as the rule shows
    ``final_content`` — the store keeps it raw for the callers waiting on it."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = probe_agent(store, turns=1)
    paused = agent.run("pay")
    agent.resume_run(paused.run_id, check_in_approved(request=paused.check_in, by="alice"))
    db = ("--db", str(tmp_path / "runs.db"))
    text = cli(agent_cli.main, "runs", "show", paused.run_id, *db)
    shown = json.loads(cli(agent_cli.main, "runs", "show", paused.run_id, "--json", *db))
    assert "output: REDACTED" in text.splitlines() and shown["output"] == "REDACTED"
    assert store.get(paused.run_id).output == f"done, card {SECRET}"


def test_runs_approve_prints_the_answer_as_the_stored_rule_shows_it(tmp_path: Path) -> None:
    """``agent runs approve`` resumes the run in the command's process and says how it ended:
    the answer as ``runs show`` prints it, ``REDACTED`` when the rule hides ``final_content``."""
    store = SqliteStore(tmp_path / "runs.db")
    agent = card_agent()
    agent.store = store
    paused = agent.run("pay")
    assert isinstance(paused, Paused)
    db = ("--db", str(tmp_path / "runs.db"))
    text = cli(
        agent_cli.main, "runs", "approve", paused.run_id, "--by", "alice", "--agent", "record_probe:card_agent", *db
    )
    assert text.strip() == f"run {paused.run_id}: approved by alice; done: REDACTED"
    assert store.get(paused.run_id).output == f"done, card {SECRET}"


def test_explaining_a_resumed_segments_result_shows_its_start_as_recorded() -> None:
    """``explain_answer(result)`` of a resumed segment folds its log from the paused state — the
    live state, real values and all — under the run's rule, as ``explain_answer(result.trace())``."""
    agent = probe_agent(turns=1)
    paused = agent.run(f"pay with {SECRET}")
    decision = check_in_approved(request=paused.check_in, by="alice").to_dict()
    result = agent.chart.resume(paused.checkpoint, decision, redaction=agent.recorded_redaction)
    assert result.output == f"done, card {SECRET}"
    explained = explain_answer(result)
    assert leaking([("format", explained.format()), ("to_dict", explained.to_dict())]) == []
    assert explained.to_dict() == explain_answer(result.trace()).to_dict()


def test_the_recorded_rule_covers_the_agents_own_copies() -> None:
    """``recorded_rule``: a hidden ``user_message`` adds ``input_message`` (``identity``:
    ``input_identity``) and the users' messages in the history, a hidden ``llm_latest_content``
    the model's replies there and the refused reply of a structured output; an argument path hidden
    in ``llm_latest_tool_calls`` or ``history`` is hidden in both, in ``paused_tool_call``, in
    ``human_decisions`` (``args``, ``before``, ``after``) and in the ledger's ``before``/``after``
    — the whole ``before``/``after`` once a text is hidden; a hidden ``llm_latest_tool_calls``
    hides every argument; a rule with nothing to add is returned as it is."""
    rule = recorded_rule(Redaction(keys=["user_message", "identity"], fields={"history": ["tool_calls.args.card"]}))
    assert rule is not None and rule.keys == {"user_message", "input_message", "identity", "input_identity"}
    assert rule.fields == {
        "history": ("tool_calls.args.card", "[role=user].content"),
        "llm_latest_tool_calls": ("args.card",),
        "paused_tool_call": ("args.card",),
        "human_decisions": ("args.card", "before.card", "after.card"),
        "middleware_decisions": ("before", "after"),
    }
    arguments = recorded_rule(Redaction(fields={"llm_latest_tool_calls": ["args.card"]}))
    assert arguments is not None and arguments.fields["middleware_decisions"] == ("before.card", "after.card")
    texts = recorded_rule(Redaction(fields={"history": ["content"]}))
    assert texts is not None and (texts.fields["tool_errors"], texts.fields["human_decisions"]) == (
        ("message",),
        ("answer",),
    )
    content = recorded_rule(Redaction(keys=["llm_latest_content"]))
    assert content is not None
    assert content.fields == {
        "history": ("[role=assistant].content",),
        "output_schema_error": ("content",),
        "middleware_decisions": ("before", "after"),
    }
    whole = recorded_rule(Redaction(keys=["llm_latest_tool_calls"]))
    assert whole is not None and whole.fields["paused_tool_call"] == ("args",)
    plain = Redaction(keys=["ssn"], fields={"middleware_decisions": ["before"]})
    assert recorded_rule(plain) is plain and recorded_rule(None) is None


def test_an_ask_human_reply_and_a_tool_error_are_hidden_with_the_historys_texts() -> None:
    """With ``fields={"history": ["content"]}`` alone, the texts the agent repeats from the
    history are hidden too: an ``ask_human`` reply (the tool's result: ``human_decisions``
    ``answer``) and a tool error's ``message`` (the result the model read: ``tool_errors``)."""
    from agent import Agent, ask_human, define_tool
    from agent.providers import scripted

    def confirm(args: dict[str, Any], _ctx: Any) -> Any:
        return ask_human({"question": "confirm?"})

    def fail(args: dict[str, Any], _ctx: Any) -> Any:
        raise ValueError(f"no card {SECRET}")

    schema = {"type": "object", "properties": {}}
    calls = [{"id": "c1", "name": "fail", "args": {}}, {"id": "c2", "name": "confirm", "args": {}}]
    replies: list[Any] = [{"content": "", "tool_calls": calls}, "ok"]
    agent = (
        Agent.create(provider=scripted(replies), model="m", redaction=Redaction(fields={"history": ["content"]}))
        .tool(define_tool(name="confirm", description="Confirm.", input_schema=schema, execute=confirm))
        .tool(define_tool(name="fail", description="Fail.", input_schema=schema, execute=fail))
        .build()
    )
    paused = agent.run("go")
    assert isinstance(paused, Paused)
    first = list(agent.last_snapshot().commit_log)
    assert agent.resume(paused.checkpoint, f"yes, card {SECRET}") == "ok"
    second = list(agent.last_snapshot().commit_log)
    assert [row["message"] for row in replay(first)["tool_errors"]] == ["REDACTED"]
    answers = [op.value for c in second for op in c.trace if op.path[0] == "human_decisions"]
    assert [row.get("answer") for row in answers[-1]] == ["REDACTED"]
    assert leaking([("commit logs", [c.to_dict() for c in first + second])]) == []


def test_what_a_middleware_rewrote_is_hidden_in_the_ledger() -> None:
    """A message middleware that rewrites the user's message and the answer, a tool middleware
    that rewrites a call's args and its result: the ledger rows' ``before``/``after`` are
    ``"REDACTED"`` in the commit log when the rule hides those texts."""
    from agent import Agent, define_tool
    from agent.providers import scripted
    from governance import allow

    class Lower:
        name = "lower"

        def on_message(self, msg: Any) -> Any:
            return allow(msg.content.lower(), why="lower-cased")

    class Mask:
        name = "mask"

        def on_tool_call(self, call: Any) -> Any:
            return allow({"card": call.args["card"][-4:]}, why="last four")

        def on_tool_result(self, call: Any) -> Any:
            return allow(str(call.result).upper(), why="upper-cased")

    tool = define_tool(
        name="pay",
        description="Pay.",
        execute=lambda args, _ctx: f"paid {SECRET}",
        input_schema={"type": "object", "properties": {"card": {"type": "string"}}},
    )
    replies: list[Any] = [
        {"content": "", "tool_calls": [{"id": "c1", "name": "pay", "args": {"card": SECRET}}]},
        "Done",
    ]
    agent = (
        Agent.create(provider=scripted(replies), model="m", redaction=AGENT_RULE)
        .tool(tool)
        .message_middleware(Lower())
        .tool_middleware(Mask())
        .build()
    )
    agent.run(f"Pay {SECRET}")
    log = agent.last_snapshot().commit_log
    rows = replay(list(log))["middleware_decisions"]
    assert [(row["moment"], row["before"], row["after"]) for row in rows if row["changed"]] == [
        ("input", "REDACTED", "REDACTED"),
        ("before-tool", "REDACTED", "REDACTED"),
        ("after-tool", "REDACTED", "REDACTED"),
        ("output", "REDACTED", "REDACTED"),
    ]
    assert leaking([("commit log", [c.to_dict() for c in log])]) == []


def test_no_reader_of_an_agent_run_shows_a_hidden_value_but_the_call_asked_about(tmp_path: Path) -> None:
    """Two turns of a conversation (the first pauses on a check-in, approved from the store):
    every recorder hook, the commit logs and narratives, the stored columns but the raw ones,
    ``agent runs list/show/trace``, ``agent why``, ``agent view``, ``agent conversations show``,
    the stored traces through ``flowchart narrate/replay/why/view``, ``explain_answer``, and a
    stream of every kind — but for the check-in's call and the ``final`` event."""
    db_path = tmp_path / "runs.db"
    store, seen = SqliteStore(db_path), Everything(without=("on_stage_ops",))
    agent = probe_agent(store, recorders=[seen])
    paused = agent.run(f"pay with {SECRET}", conversation="c-1")
    assert isinstance(paused, Paused)
    db = ("--db", str(db_path))
    readings: list[tuple[str, Any]] = [
        ("runs list (paused)", cli(agent_cli.main, "runs", "list", *db).replace(json.dumps({"card": SECRET}), "")),
    ]
    agent.resume_run(paused.run_id, check_in_approved(request=paused.check_in, by="alice"))
    agent.follow_up(f"again {SECRET}")
    request, rest = paused.check_in.to_dict(), _without_the_call(paused.check_in.to_dict())
    for hook, event in seen.seen:
        text = repr(event).replace(repr(request), repr(rest))  # the pause and check-in events carry the call
        if hook == "on_run_end":
            continue  # its payload is the run's output, what ``run`` returns
        readings.append((f"recorder {hook}", text))
    readings += stored_rows(db_path, skip=RAW_COLUMNS)
    for record in store.list():
        page, trace_path = tmp_path / f"{record.turn}.html", tmp_path / f"{record.turn}.json"
        trace_path.write_text(cli(agent_cli.main, "runs", "trace", record.run_id, *db), encoding="utf-8")
        readings += [
            (f"turn {record.turn} show", cli(agent_cli.main, "runs", "show", record.run_id, *db)),
            (f"turn {record.turn} show --json", cli(agent_cli.main, "runs", "show", record.run_id, "--json", *db)),
            (f"turn {record.turn} why", cli(agent_cli.main, "why", record.run_id, "--drivers", "--keys", *db)),
            (f"turn {record.turn} why --json", cli(agent_cli.main, "why", record.run_id, "--json", *db)),
            (f"turn {record.turn} view", cli(agent_cli.main, "view", record.run_id, "-o", str(page), *db)),
            (f"turn {record.turn} page", page.read_text(encoding="utf-8")),
            (f"turn {record.turn} trace", trace_path.read_text(encoding="utf-8")),
            (f"turn {record.turn} narrate", cli(flowchart_cli.main, "narrate", str(trace_path))),
            (f"turn {record.turn} replay", cli(flowchart_cli.main, "replay", str(trace_path))),
            (f"turn {record.turn} flowchart why", cli(flowchart_cli.main, "why", str(trace_path), "final_content")),
            (f"turn {record.turn} explain", explain_answer(record_trace(record), drivers=True).to_dict()),
        ]
    readings += [
        ("conversations show", cli(agent_cli.main, "conversations", "show", "c-1", *db)),
        ("conversations show --json", cli(agent_cli.main, "conversations", "show", "c-1", "--json", *db)),
        ("runs list", cli(agent_cli.main, "runs", "list", "--conversation", "c-1", *db)),
    ]
    for event in probe_agent(stream=True, turns=1).stream(f"pay with {SECRET}"):
        shown = event.to_dict()
        if event.kind == "final":
            continue  # what ``run`` returns: the ``Paused`` with the request
        text = json.dumps(shown)
        request = (shown.get("payload") or shown.get("question") or {}) if event.kind in ("emit", "pause") else {}
        request = request.get("request") or request.get("check_in") if isinstance(request, dict) else None
        if request:
            text = text.replace(json.dumps(request), json.dumps(_without_the_call(request)))
        readings.append((f"stream {event.kind}", text))
    assert leaking(readings) == []
    assert AGENT_RULE.hides("user_message")  # the probe hides what this test looks for


def test_a_hidden_user_message_or_model_content_is_hidden_where_the_history_repeats_it(tmp_path: Path) -> None:
    """Hiding ``user_message`` alone hides each user's message in the history too (the
    ``[role=user].content`` of every entry: this turn's and the earlier turns'), and hiding
    ``llm_latest_content`` the model's replies there (a reply that calls a tool, here): in the
    commit log, the narrative, every stream event and the stored trace; what the rule does not
    name stays readable, and the live state keeps every text. (A later turn of the conversation
    reads the earlier turns as recorded: placeholders, as docs/conversations.md says.)"""
    from agent import Agent, define_tool
    from agent.providers import scripted

    add = define_tool(
        name="add",
        description="Add.",
        execute=lambda args, _ctx: f"sum {args['a'] + args['b']}",
        input_schema={"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}},
    )
    for hidden, secret_in, kept in (
        ("user_message", "user", "the model said 7"),
        ("llm_latest_content", "assistant", "my card is 1"),
    ):
        store = SqliteStore(tmp_path / f"{hidden}.db")
        replies = [
            {
                "content": f"adding for {SECRET}" if secret_in == "assistant" else "",
                "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 3, "b": 4}}],
            },
            "the model said 7",  # an answer is also ``final_content``, its own key
            "again",
        ]
        agent = (
            Agent.create(provider=scripted(replies), model="m", redaction=Redaction(keys=[hidden]), store=store)
            .tool(add)
            .build()
        )
        first = f"my card is {SECRET}" if secret_in == "user" else "my card is 1"
        agent.run(first, conversation="c-1")
        live = agent.last_snapshot().shared_state["history"]  # the live state keeps the real texts
        assert any(SECRET in m.get("content", "") for m in live if m["role"] == secret_in), hidden
        second = f"and {SECRET}" if secret_in == "user" else "more"
        events = [e.to_dict() for e in agent.stream(second, conversation="c-1")]
        records = store.list()
        readings: list[tuple[str, Any]] = [
            ("stream", [e for e in events if e["kind"] != "final"]),
            ("narrative", list(agent.last_snapshot().narrative)),
        ]
        for record in records:
            readings += [
                (f"commit log {record.run_id}", [c.to_dict() for c in record.commit_log]),
                (f"trace {record.run_id}", record_trace(record).to_json()),
            ]
        assert leaking(readings) == [], hidden
        assert any(kept in json.dumps(c.to_dict()) for record in records for c in record.commit_log), hidden
