"""The ``agent`` command: operate durable agent runs kept in a run store.

    agent runs list [--status paused] [--limit N] [--conversation ID] [--after CURSOR]
                                                      runs, newest first (a conversation's turns)
    agent runs show RUN [--json]                      the question, evidence, narrative so far
    agent runs approve RUN --by NAME [--note TEXT] --agent MODULE:ATTR
    agent runs decline RUN --by NAME [--note TEXT] --agent MODULE:ATTR
    agent runs retry RUN --agent MODULE:ATTR          continue a failed run at the stage that failed
    agent runs trace RUN > run.trace.json             a trace file for ``flowchart why``
    agent why TRACE|RUN [--call N] [--drivers] [--scorer S] [--dropped] [--keys] [--cost] [--json]
                                                      why the answer is what it is, in content
    agent view TRACE|RUN [-o PAGE]                    the run as one HTML page: its story first
                                                      (default RUN.html here; a run id that is not
                                                      a plain file name gets a safe one)
    agent conversations show ID [--json]              a conversation's transcript, turn by turn
    agent diff A B [--json]                           where run B (trace or id) went differently from A
    agent runs export RUN... -o DIR                   shown trace files: fixtures for pytest --replay DIR

Every command takes ``--db PATH`` (SQLite; default ``$AGENT_RUNS_DB`` or ``runs.db``) or
``--dsn DSN`` (PostgreSQL; default ``$AGENT_RUNS_DSN``). ``--db`` opens a run store and
nothing else: a file that is not one (another application's SQLite database, an empty
``.json``, any other file) is refused, naming it, before anything is written; an absent or
empty path becomes a new, empty store only with ``--create`` (every command takes it). ``approve``/``decline`` resume
the run, so they need the agent's definition: ``--agent MODULE:ATTR`` names a built
``Agent`` or a zero-argument function returning one (default ``$AGENT_SPEC``), imported
from the installed packages and ``$PYTHONPATH`` — from a directory only with
``--app-dir DIR`` (``--app-dir .`` for the current one); with
``--queue MODULE:ATTR`` (a Celery app from ``agent.celery.make_app``) the answer is
recorded and the run is handed to the workers instead.

Laws: ``--by`` is recorded exactly as given — this command does not authenticate
anyone; whoever can run it with access to the store can answer runs, so authenticate
and authorise callers before them. A mistake prints ONE line ``agent: error: ...`` on
stderr and exits 2 — never a traceback. A decision is accepted once, across processes.
Every command hides what the run hid: the redaction stored with the run is applied to
what the store keeps raw (the input) before anything is printed — no ``--agent`` needed.
A failed run shows its error, the stage that raised and the narrative up to it; a tool
that raised shows its exception class and short traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from typing import Any

from agent._chart.config import TOOL_ERRORS
from agent._edge.cli_common import close_opened, load_object, open_store, shown_input, shown_output
from agent._edge.conversation_cli import add_commands as add_conversation_commands
from agent._edge.conversation_cli import earlier_turn_lines, turn_input
from agent._edge.replay_cli import add_commands as add_replay_commands
from agent._run.loading import load_agent
from flowchart import replay
from flowchart._cli_support import CliError, OneLineParser, add_app_dir_option, run_cli
from flowchart.store import RunRecord, StoreError

_STATUSES = ("running", "paused", "done", "failed")


# -- showing ------------------------------------------------------------------------------------
def _when(stamp: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(stamp))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def question_line(record: RunRecord) -> str:
    """One line saying what the run waits for ('' when it waits for nothing)."""
    from governance import CheckInRequest, MiddlewareAsk

    question = record.question
    if record.status != "paused" or question is None:
        return ""
    if isinstance(question, CheckInRequest):
        return f"check-in: {question.tool} {_compact(question.args)}"
    if isinstance(question, MiddlewareAsk):
        return f"ask ({question.middleware}): {question.question}"
    if isinstance(question, dict) and question.get("kind") == "budget":
        return f"budget: {question.get('question')}"
    data = question.get("data", question) if isinstance(question, dict) else question
    if isinstance(data, dict) and "reconcile" in data:
        return f"reconcile: {data.get('question')} (approve: it happened; decline: it did not)"
    return f"ask_human: {_compact(data)}"


def question_json(question: Any) -> Any:
    """The JSON form of a stored question (a typed request as its pause data shape)."""
    from governance import CheckInRequest, MiddlewareAsk

    if isinstance(question, CheckInRequest):
        return {"kind": "check_in", "check_in": question.to_dict()}
    if isinstance(question, MiddlewareAsk):
        return {"kind": "ask", "ask": question.to_dict()}
    return question


def decisions_of(record: RunRecord) -> list[Any]:
    """The run's ``human_decisions`` rows, as its (redacted) commit log recorded them."""
    from flowchart import replay
    from governance import HUMAN_DECISIONS

    if not any(HUMAN_DECISIONS in commit.written_keys for commit in record.commit_log):
        return []
    rows = replay(record.commit_log).get(HUMAN_DECISIONS)
    return list(rows) if isinstance(rows, list) else []


def cmd_list(args: argparse.Namespace) -> str | list[str]:
    """``runs list``: one line per run, newest first."""
    conversation = getattr(args, "conversation", None)
    records = open_store(args).list(
        status=args.status, limit=args.limit, conversation=conversation, after=getattr(args, "after", None)
    )
    # a run whose stored row does not load is listed as unreadable, never hides the others
    unreadable = getattr(records, "unreadable", ())
    if args.json:
        bad = [{"run_id": e.run_id, "status": "unreadable", "error": str(e)} for e in unreadable]
        return json.dumps([*(summary(r) for r in records), *bad], ensure_ascii=False, indent=2)
    if not records and not unreadable:
        return (
            "no runs"
            + (f" with status {args.status}" if args.status else "")
            + (f" in conversation {conversation}" if conversation else "")
        )
    turn = f"{'TURN':>4}  " if conversation else ""
    lines = [f"{turn}{'RUN':32}  {'STATUS':7}  {'KIND':5}  {'UPDATED':20}  {'COMMITS':>7}  QUESTION"]
    for r in records:
        turn = f"{r.turn:>4}  " if conversation else ""
        lines.append(
            f"{turn}{r.run_id:32}  {r.status:7}  {r.kind:5}  {_when(r.updated_at):20}  {r.next_seq:>7}  "
            f"{question_line(r)}"
        )
    for error in unreadable:
        lines.append(f"{turn}{error.run_id:32}  UNREADABLE  {error}")
    if getattr(records, "next", None):
        lines.append(f"more: agent runs list --after {records.next}")
    return lines


def tool_errors(record: RunRecord) -> list[dict[str, Any]]:
    """The tools that raised during the run, as recorded (``tool_errors``, redacted by the log)."""
    rows = replay(list(record.commit_log)).get(TOOL_ERRORS) if record.commit_log else None
    return [row for row in rows if isinstance(row, dict)] if isinstance(rows, list) else []


def summary(record: RunRecord) -> dict[str, Any]:
    """A JSON-safe summary of a record (what ``show --json`` prints)."""
    out = {
        "run_id": record.run_id,
        "kind": record.kind,
        "status": record.status,
        "chart_fingerprint": record.chart_fingerprint,
        "input": shown_input(record),
        "commits": record.next_seq,
        "question": question_json(record.question),
        "answered": sorted(record.answered),
        "human_decisions": decisions_of(record),
        "output": shown_output(record),
        "error": record.error,
        "narrative": list(record.narrative),
        "created_at": _when(record.created_at),
        "updated_at": _when(record.updated_at),
    }
    if record.conversation_id is not None:
        out.update(conversation=record.conversation_id, turn=record.turn)
    if record.failure is not None:
        out["failure"] = record.failure.to_dict()
    errors = tool_errors(record)
    if errors:
        out["tool_errors"] = errors
    return out


def _tool_error_lines(row: dict[str, Any]) -> list[str]:
    head = (
        f"tool error: {row.get('tool_name')} (call {row.get('tool_call_id')}, iteration {row.get('iteration')}): "
        f"{row.get('error_type')}: {row.get('message')}"
    )
    trace = row.get("traceback")
    return [head] + ["  " + str(line) for line in trace] if isinstance(trace, list) else [head]


def cmd_show(args: argparse.Namespace) -> str | list[str]:
    """``runs show``: the run, its pending question with the evidence pack, who decided, why a
    finished agent run answered what it did (``agent why``), the narrative so far."""
    record = open_store(args).get(args.run)
    if args.json:
        return json.dumps(summary(record), ensure_ascii=False, indent=2)
    out = [
        f"run {record.run_id} ({record.kind}): {record.status}, {record.next_seq} commits, "
        f"updated {_when(record.updated_at)}",
        f"input: {_compact(turn_input(shown_input(record)))}",
    ]
    if record.conversation_id is not None:  # the loaded history: `agent conversations show`
        out.insert(1, f"conversation: {record.conversation_id}, turn {record.turn}")
    if record.status == "paused":
        from governance import CheckInRequest, MiddlewareAsk

        out.append(f"question: {question_line(record)}")
        request = record.question
        if isinstance(request, CheckInRequest | MiddlewareAsk):
            out.append(f"request id: {request.id}")
        if isinstance(request, CheckInRequest):
            evidence = request.evidence.to_dict()
            out.append("evidence:")
            out.extend("  " + line for line in json.dumps(evidence, ensure_ascii=False, indent=2).splitlines())
    if record.status == "done":
        out.append(f"output: {_answer_text(record)}")
    if record.failure is not None:
        out.append(f"error: {record.failure.error_type}: {record.failure.message}")
        if record.failure.runtime_stage_id or record.failure.stage_id:
            out.append(f"failed at: {record.failure.runtime_stage_id or record.failure.stage_id}")
        out.append(f"commits before the failure: {record.next_seq}")
    elif record.error:
        out.append(f"error: {record.error}")
    for row in tool_errors(record):
        out.extend(_tool_error_lines(row))
    if record.answered:
        out.append(f"answered: {', '.join(sorted(record.answered))}")
    rows = decisions_of(record)
    if rows:
        from governance.human import decision_sentence

        out.append("decided:")
        for row in rows:
            when = f" (at {row['at']})" if isinstance(row, dict) and "at" in row else ""
            out.append(f"  {decision_sentence(row) or _compact(row)}{when}")
    if any(c.stage_id == "call-llm" for c in record.commit_log):
        from agent._edge.cost_report import cost_lines

        lines = cost_lines(record.commit_log)
        if not lines[0].startswith("cost: not recorded"):  # where the money went (agent why --cost)
            out.extend(lines)
    if record.status == "done" and any(c.stage_id == "call-llm" for c in record.commit_log):
        from agent._edge.explain import explain_answer
        from flowchart.store.export import record_trace

        out.append("why the answer (agent why):")
        out.extend("  " + line for line in explain_answer(record_trace(record)).format().splitlines())
    out.append("narrative:" if record.narrative else "narrative: (none recorded)")
    out.extend("  " + line for line in record.narrative)
    return out


def cmd_trace(args: argparse.Namespace) -> str:
    """``runs trace``: the stored run as a trace file (JSON) for ``flowchart why``."""
    from flowchart.store.export import record_trace

    # the store keeps the real input (a queued run must start): the rule stored with the run
    # hides it; --agent names the rule for runs stored before rules were kept
    redaction = load_agent(args.agent, args.app_dir).recorded_redaction if args.agent else None
    return record_trace(open_store(args).get(args.run), redaction=redaction).to_json()


# -- answering ----------------------------------------------------------------------------------
def _decision(record: RunRecord, approved: bool, by: str, note: str | None) -> Any:
    from governance import CheckInRequest, MiddlewareAsk, check_in_approved, check_in_declined

    if record.status != "paused":
        raise CliError(f"run '{record.run_id}' is {record.status}: it is not waiting for an answer")
    request = record.question
    data = request.get("data", request) if isinstance(request, dict) else None
    if isinstance(request, dict) and request.get("kind") == "budget":  # raise the budget (as suggested) or not
        return {"approved": approved, "by": by, **({"note": note} if note else {})}
    if isinstance(data, dict) and "reconcile" in data:  # an effect in doubt: did it happen?
        return {"happened": approved, "by": by, **({"note": note} if note else {})}
    if not isinstance(request, CheckInRequest | MiddlewareAsk):
        raise CliError(
            f"run '{record.run_id}' waits for an ask_human answer, not an approval: answer it from code "
            "with agent.resume_run(run_id, value)"
        )
    make = check_in_approved if approved else check_in_declined
    return make(request=request, by=by, note=note)


def _answer(args: argparse.Namespace, approved: bool) -> str:
    from agent._chart.paused import Paused

    if args.queue:
        from agent.celery import answer_and_enqueue, app_store

        app = load_object(args.queue, "--queue", args.app_dir)
        store = open_store(args) if (args.db or args.dsn) else app_store(app)
        answer_and_enqueue(app, store, args.run, _decision(store.get(args.run), approved, args.by, args.note))
        return f"run {args.run}: {'approved' if approved else 'declined'} by {args.by}; queued for the workers"
    spec = args.agent or os.environ.get("AGENT_SPEC")
    if not spec:
        raise CliError(
            f"{'approve' if approved else 'decline'} resumes the run, so it needs the agent: pass --agent "
            "MODULE:ATTR (a built Agent or a function returning one), or --queue MODULE:ATTR for Celery workers"
        )
    agent = load_agent(spec, args.app_dir)
    agent.store = open_store(args, agent)
    outcome = agent.resume_run(args.run, _decision(agent.store.get(args.run), approved, args.by, args.note))
    verdict = f"run {args.run}: {'approved' if approved else 'declined'} by {args.by}"
    if isinstance(outcome, Paused):
        pending = outcome.check_in or outcome.ask
        again = f" on request {pending.id}" if pending is not None else ""
        return f"{verdict}; paused again{again}: {question_line(agent.store.get(args.run))}"
    return f"{verdict}; done: {_answer_text(agent.store.get(args.run))}"


def _answer_text(record: RunRecord) -> str:
    """The answer of a finished run as the stored rule shows it (``shown_output``), as one text."""
    output = shown_output(record)
    return output if isinstance(output, str) else _compact(output)


def cmd_approve(args: argparse.Namespace) -> str:
    """``runs approve``: approve the pending check-in or ask, and resume the run."""
    return _answer(args, True)


def cmd_decline(args: argparse.Namespace) -> str:
    """``runs decline``: decline the pending check-in or ask (the call never runs), and resume."""
    return _answer(args, False)


def cmd_retry(args: argparse.Namespace) -> str:
    """``runs retry``: continue a failed run at the stage that failed (once, across processes)."""
    from agent._chart.paused import Paused
    from agent._run import durable

    try:
        if args.queue:
            from agent.celery import app_store, retry_and_enqueue

            app = load_object(args.queue, "--queue", args.app_dir)
            store = open_store(args) if (args.db or args.dsn) else app_store(app)
            retry_and_enqueue(app, store, args.run)
            return f"run {args.run}: retrying at {_failed_stage(store.get(args.run))}; queued for the workers"
        spec = args.agent or os.environ.get("AGENT_SPEC")
        if not spec:
            raise CliError(
                "retry re-runs the failed stage, so it needs the agent: pass --agent MODULE:ATTR (a built Agent "
                "or a function returning one), or --queue MODULE:ATTR for Celery workers"
            )
        agent = load_agent(spec, args.app_dir)
        agent.store = open_store(args, agent)
        where = _failed_stage(agent.store.get(args.run))
        durable.retry_failed(agent.store, args.run)
        outcome = durable.advance_now(agent, args.run)
    except StoreError as exc:
        raise CliError(str(exc)) from None
    if isinstance(outcome, Paused):
        return f"run {args.run}: retried at {where}; paused: {question_line(agent.store.get(args.run))}"
    return f"run {args.run}: retried at {where}; done: {_answer_text(agent.store.get(args.run))}"


def _failed_stage(record: RunRecord) -> str:
    checkpoint = record.checkpoint
    if checkpoint is None or checkpoint.recovery is None:
        return "?"
    return checkpoint.recovery.runtime_stage_id


def cmd_why(args: argparse.Namespace) -> str:
    """``why``: the answer's provenance (a trace file, or a run id in the store)."""
    from agent._edge.explain import ExplainError, explain_answer
    from flowchart import causal_chain

    source: Any = args.target
    if not os.path.exists(args.target):
        from flowchart.store.export import record_trace

        source = record_trace(open_store(args).get(args.target))
    if args.cost:  # where the money went: each model call's recorded cost (agent._edge.cost_report)
        from agent._edge.cost_report import cost_lines, cost_of
        from agent._edge.explain import _load

        try:
            _run, commits, initial, _subflows = _load(source)
        except (OSError, ValueError) as exc:
            raise CliError(f"{args.target}: {exc}") from None
        if args.json:
            return json.dumps(cost_of(commits, initial), ensure_ascii=False, indent=2)
        return "\n".join(cost_lines(commits, initial))
    if args.keys:
        from flowchart import Trace

        trace = source if isinstance(source, Trace) else Trace.load(source)
        chain = causal_chain(trace.commit_log, "final_content")
        return "\n".join([chain.format(), *earlier_turn_lines(chain, trace.commit_log)])
    try:
        explanation = explain_answer(
            source, call=args.call, drivers=args.drivers, dropped=args.dropped, scorer=args.scorer
        )
    except ExplainError as exc:
        raise CliError(str(exc)) from None
    return json.dumps(explanation.to_dict(), ensure_ascii=False, indent=2) if args.json else explanation.format()


def cmd_view(args: argparse.Namespace) -> str:
    """``view``: the run (a trace file, or a run id in the store) as one self-contained HTML page
    with the agent's panel (``agent._edge.viewer_panel``): the story first, the chart and timeline below."""
    from agent._edge.viewer_panel import PANEL
    from flowchart import CheckpointError, Trace
    from flowchart.viewer import page_name, write_page

    if os.path.exists(args.target):
        try:
            trace = Trace.load(args.target)
        except (OSError, CheckpointError) as exc:
            raise CliError(f"{args.target}: {exc}") from None
        default = os.path.splitext(args.target)[0] + ".html"
    else:
        from flowchart.store.export import record_trace

        trace = record_trace(open_store(args).get(args.target))
        default = page_name(args.target)  # a run id is not a path: '../../x' stays here
    out = args.output or default
    try:
        return str(write_page(trace, out, [PANEL]))
    except OSError as exc:
        raise CliError(f"cannot write {out}: {exc.strerror or exc}") from None


# -- parsing ------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every command has ``--help``)."""
    store_options = OneLineParser(add_help=False)
    store_options.add_argument("--db", metavar="PATH", help="SQLite run store (default $AGENT_RUNS_DB or runs.db)")
    store_options.add_argument("--dsn", metavar="DSN", help="PostgreSQL run store (default $AGENT_RUNS_DSN)")
    store_options.add_argument(
        "--create",
        action="store_true",
        help="make a new, empty SQLite run store at --db PATH when nothing is there (else an absent or "
        "empty path is refused; a file that is not a run store always is)",
    )
    add_app_dir_option(store_options)
    parser = OneLineParser(prog="agent", description="Operate durable agent runs.")
    parser.add_version_option()
    groups = parser.add_subparsers(dest="group", required=True, metavar="COMMAND")
    runs = groups.add_parser("runs", help="list, show, answer and export stored runs")
    commands = runs.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, handler: Any, text: str) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=text, description=text, parents=[store_options])
        sub.set_defaults(handler=handler)
        return sub

    sub = command("list", cmd_list, "List runs, newest first.")
    sub.add_argument("--status", choices=_STATUSES, help="only runs with this status")
    sub.add_argument("--limit", type=int, default=50, metavar="N", help="at most N runs (default 50)")
    sub.add_argument("--conversation", metavar="ID", help="only the turns of this conversation, newest first")
    sub.add_argument("--after", metavar="CURSOR", help="the page after the one that printed this cursor")
    sub.add_argument("--json", action="store_true", help="print JSON")
    sub = command("show", cmd_show, "Show a run: its question, evidence pack and narrative so far.")
    sub.add_argument("run", metavar="RUN", help="the run id")
    sub.add_argument("--json", action="store_true", help="print JSON")
    for name, handler, text in (
        ("approve", cmd_approve, "Approve the run's pending check-in/ask and resume it."),
        ("decline", cmd_decline, "Decline the run's pending check-in/ask and resume it."),
    ):
        sub = command(name, handler, text)
        sub.add_argument("run", metavar="RUN", help="the run id")
        sub.add_argument("--by", required=True, metavar="NAME", help="who decides (recorded as given; not verified)")
        sub.add_argument("--note", metavar="TEXT", help="a note (on decline, the model reads it)")
        sub.add_argument("--agent", metavar="MODULE:ATTR", help="the agent (or factory) that resumes the run")
        sub.add_argument("--queue", metavar="MODULE:ATTR", help="a Celery app (agent.celery.make_app) to hand it to")
    sub = command("retry", cmd_retry, "Continue a failed run at the stage that failed (committed stages never re-run).")
    sub.add_argument("run", metavar="RUN", help="the run id")
    sub.add_argument("--agent", metavar="MODULE:ATTR", help="the agent (or factory) that continues the run")
    sub.add_argument("--queue", metavar="MODULE:ATTR", help="a Celery app (agent.celery.make_app) to hand it to")
    sub = command("trace", cmd_trace, "Write the run as a trace file (JSON) on stdout.")
    sub.add_argument("run", metavar="RUN", help="the run id")
    sub.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help="the agent whose redaction the trace applies (default: the rule stored with the run)",
    )
    text = "Explain why the answer is what it is: the model call, what it was sent and where each message came from."
    why = groups.add_parser("why", help=text, description=text, parents=[store_options])
    why.set_defaults(handler=cmd_why)
    why.add_argument("target", metavar="TRACE|RUN", help="a trace file, or a run id in the store")
    why.add_argument("--call", type=int, metavar="N", help="explain model call N (1-based) instead of the answer")
    why.add_argument("--drivers", action="store_true", help="rank the messages by the words they share with it")
    why.add_argument(
        "--scorer",
        choices=("jaccard", "containment"),
        help="how --drivers scores (default: containment when the call was sent context, else jaccard)",
    )
    why.add_argument("--dropped", action="store_true", help="also list the context available but not sent")
    why.add_argument("--keys", action="store_true", help="print the key-level causal chain of final_content instead")
    why.add_argument(
        "--cost", action="store_true", help="where the money went: each model call's cost, repeats, retries, budget"
    )
    why.add_argument("--json", action="store_true", help="print JSON")
    text = "Write the run as one self-contained HTML page: the question, the answer, why, then the chart."
    view = groups.add_parser("view", help=text, description=text, parents=[store_options])
    view.set_defaults(handler=cmd_view)
    view.add_argument("target", metavar="TRACE|RUN", help="a trace file, or a run id in the store")
    view.add_argument(
        "-o",
        "--output",
        metavar="PAGE",
        help="the page to write (default: TRACE with .html, or RUN.html in the current directory — an id that "
        "is not a plain file name gets a safe one, printed)",
    )
    add_conversation_commands(groups, store_options)
    add_replay_commands(groups, command, store_options)
    from .serve.cli import add_commands as add_serve_commands

    add_serve_commands(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 2 error)."""
    try:
        return run_cli("agent", build_parser, argv)
    finally:
        close_opened()


if __name__ == "__main__":
    raise SystemExit(main())
