"""The main demo: a governed support agent, run offline on the scripted provider.

A customer asks for a refund. The agent looks the order up, then asks to refund it; the
refund tool declares a check-in (amounts over 100 need a person), so the run PAUSES with
an evidence pack, and the paused run is stored in the embedded SQLite run store
(``runs/runs.db``). Alice approves; a freshly built agent (as another process would)
resumes the stored run by its id, the refund runs, and the agent answers. Who approved is
part of the record: the decision is committed under ``human_decisions`` (the narrative,
the trace, the viewer and ``agent runs show`` all say "alice approved issue_refund(...)").
The decision is accepted once: answering the same request again is refused by the database.

Along the way an input middleware masks card numbers before the model or the history
sees them — and files a ledger row saying so. The row keeps the text it changed as
evidence in the live state; a redaction rule hides it in every recording (commit log,
trace). Each tool call the model makes is printed as it happens, with its arguments and
result, and so is each approval it needs (the agent's ``tool.*`` and ``checkin.*`` events —
on a real model, what it really did). At the end the demo prints the narrative and the
ledger, saves a trace under ``runs/`` and ends with ``agent why``: the story of why the
answer is what it is.

Run it with ``make demo`` (or ``python examples/support_agent.py``). Set ``PROVIDER=openai``
(with OPENAI_API_KEY / OPENAI_BASE_URL), ``PROVIDER=anthropic`` (ANTHROPIC_API_KEY) or
``PROVIDER=ollama`` (OLLAMA_HOST, MODEL) to run the same agent on a real model.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agent import Agent, Paused, define_tool, explain_answer
from agent.providers import scripted
from flowchart import Redaction
from flowchart.store import SqliteStore
from flowchart.store.export import record_trace
from governance import HUMAN_DECISIONS, ResumeDecisionError, allow, check_in_approved
from governance.human import decision_sentence

ORDERS = {
    "A-1001": {"order_id": "A-1001", "item": "Noise-cancelling headphones", "amount": 129.0, "status": "charged twice"}
}
CARD = re.compile(r"\b(?:\d[ -]?){13,16}\b")
QUESTION = "Hi, I was charged twice for order A-1001 (card 4111 1111 1111 1111). Please refund the extra charge."
RUNS = Path(os.environ.get("RUNS_DIR", "runs"))


def lookup_order(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
    """Look an order up by id."""
    order = ORDERS.get(args["order_id"])
    if order is None:
        raise LookupError(f"no order {args['order_id']}")
    return order


def issue_refund(args: dict[str, Any], ctx: Any) -> str:
    """Refund an amount on an order (idempotent per call: see ctx.idempotency_key)."""
    return f"refunded {args['amount']:.2f} on {args['order_id']}"


TOOLS = [
    define_tool(
        name="lookup_order",
        description="Look up an order by its id.",
        input_schema={"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
        execute=lookup_order,
    ),
    define_tool(
        name="issue_refund",
        description="Refund an amount on an order.",
        input_schema={
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id", "amount"],
        },
        execute=issue_refund,
        check_in=lambda args, ctx: args["amount"] > 100,
    ),
]


def mask_cards(message: Any) -> Any:
    """Input/output middleware: card numbers never reach the model or the history."""
    masked = CARD.sub("[card]", message.content)
    return allow(masked, why="masked a card number") if masked != message.content else allow()


CARD_MASK = SimpleNamespace(name="mask-cards", on_message=mask_cards)

SCRIPT: list[Any] = [
    {
        "content": "Let me look up that order.",
        "tool_calls": [{"id": "call-1", "name": "lookup_order", "args": {"order_id": "A-1001"}}],
    },
    {
        "content": "The order was charged twice; refunding the extra charge.",
        "tool_calls": [{"id": "call-2", "name": "issue_refund", "args": {"order_id": "A-1001", "amount": 129.0}}],
    },
    "I've refunded the duplicate charge of 129.00 on order A-1001. You'll see it on your card in 3-5 days.",
]


def make_provider() -> Any:
    """The scripted provider (offline, deterministic) or a real one chosen by PROVIDER.

    The scripted one answers by the conversation's position, so a freshly built agent
    resuming the stored run (this demo, ``agent runs approve``, the inbox) continues it."""
    kind = os.environ.get("PROVIDER", "scripted")
    if kind == "scripted":
        return scripted(SCRIPT)
    from agent.providers import anthropic, ollama, openai_compatible

    model = os.environ.get("MODEL")
    if kind == "openai":
        return openai_compatible(
            base_url=os.environ.get("OPENAI_BASE_URL", "https://api.openai.com/v1"),
            model=model or "gpt-4o-mini",
            timeout=float(os.environ.get("OPENAI_TIMEOUT", "60")),  # a local CPU model can take minutes
            # what the server takes ("llama.cpp" for make demo-local); unset: OpenAI's
            capabilities=os.environ.get("OPENAI_CAPABILITIES") or None,
        )
    if kind == "anthropic":
        return anthropic(model=model or "claude-3-5-haiku-latest")
    if kind == "ollama":
        return ollama(model or "llama3.1")
    raise SystemExit(f"PROVIDER must be scripted, openai, anthropic or ollama, got {kind!r}")


def build_agent(store: SqliteStore | None = None) -> Agent:
    """The support agent.

    With a ``store`` every run is recorded there and a pause is resumed by run id;
    without one, a pause is resumed from its checkpoint (``agent.resume``).
    """
    return (
        Agent.create(
            provider=make_provider(),
            model=os.environ.get("MODEL", "scripted"),
            store=store,
            max_tokens=int(os.environ.get("MAX_TOKENS", "0")) or None,  # a small local model rambles
            # the raw input and the text a middleware rewrote stay out of every recording
            redaction=Redaction(keys={"input_message"}, fields={"middleware_decisions": ["before"]}),
        )
        .system("You are a support agent for an electronics shop. Look orders up before acting. Be brief.")
        .tools(TOOLS)
        .message_middleware(CARD_MASK)
        .check_in(evidence="standard")
        .max_iterations(5)
        .build()
    )


def heading(text: str) -> None:
    """Print a section heading."""
    print(f"\n== {text} ==")


def watch(agent: Agent) -> Agent:
    """Print each tool call the model made, with its arguments and result, as it happens, and
    each approval a call needed (the agent's events; a real model's calls are seen live)."""

    def started(_name: str, event: dict[str, Any]) -> None:
        print(f"  -> {event['tool_name']}({json.dumps(event['args'], ensure_ascii=False)})", flush=True)

    def ended(_name: str, event: dict[str, Any]) -> None:
        print(f"  <- {event['tool_name']}: {event['result']}", flush=True)

    def asked(_name: str, event: dict[str, Any]) -> None:
        print(f"  ?? {event['tool_name']} needs a person's approval (check-in)", flush=True)

    def decided(_name: str, event: dict[str, Any]) -> None:
        verdict = "approved" if event["approved"] else "declined"
        print(f"  ok {event['by']} {verdict} {event['tool_name']}", flush=True)

    agent.on("tool.start", started).on("tool.end", ended)
    return agent.on("checkin.request", asked).on("checkin.decision", decided)


def show_pause(paused: Paused) -> None:
    """Print what a person is asked to decide, with the evidence."""
    request = paused.check_in
    assert request is not None
    heading(f"PAUSED: {request.tool} needs a person ({paused.kind})")
    print(f"request id : {request.id}")
    print(f"will do    : {request.evidence.will_do}")
    if request.intent:
        print(f"intent     : {request.intent}")
    evidence = request.to_dict()["evidence"]
    for driver in evidence.get("drivers", [])[:3]:
        print(f"driver     : {driver['score']:.3f}  {driver['text']}")
    trail = evidence.get("trail")
    if trail:
        print(f"trail      : {trail['summary']}")


def main() -> int:
    """Run the conversation, the pause, the approval and the explanation."""
    RUNS.mkdir(parents=True, exist_ok=True)
    store = SqliteStore(RUNS / "runs.db")
    heading("CUSTOMER")
    print(QUESTION)
    heading("WHAT THE MODEL DID (each tool call as it happens)")
    first_agent = watch(build_agent(store))
    first = first_agent.run(QUESTION)
    # the trace is saved whatever the run did (a real model may answer without pausing)
    paused = isinstance(first, Paused)
    first_trace = RUNS / ("support.paused.trace.json" if paused else "support.trace.json")
    first_agent.last_snapshot().result.trace().save(first_trace)
    if not isinstance(first, Paused):
        heading("ANSWER (no call needed an approval)")
        print(first)
        print(f"trace      : {first_trace}")
        heading(f"WHY this answer? (agent why {first_trace})")
        print(explain_answer(first_trace).format())
        return 0
    show_pause(first)
    record = store.get(first.run_id)
    print(f"stored run : {record.run_id} ({record.status}) in {RUNS / 'runs.db'}")

    heading("APPROVED by alice — a fresh agent resumes the stored run")
    resumed_agent = watch(build_agent(SqliteStore(RUNS / "runs.db")))
    decision = check_in_approved(
        request=first.check_in, by="alice", note="duplicate charge confirmed", at="2026-12-01T00:00:00Z"
    )
    answer = resumed_agent.resume_run(first.run_id, decision)
    snapshot = resumed_agent.last_snapshot()
    try:
        resumed_agent.resume_run(first.run_id, decision)
    except ResumeDecisionError as refused:
        print(f"answering twice is refused: {type(refused).__name__}")

    heading("DECIDED (human_decisions, as committed)")
    for row in snapshot.shared_state.get(HUMAN_DECISIONS, []):
        print(f"{decision_sentence(row)} (at {row['at']}, request {row['request_id']})")
    heading("NARRATIVE (resumed run)")
    for line in snapshot.narrative:
        if not line.startswith("Step"):
            print(line)
    heading("LEDGER (middleware_decisions, as recorded: the rewritten text is redacted)")
    rows = snapshot.shared_state.get("middleware_decisions", [])
    if resumed_agent.redaction is not None:
        rows, _hidden = resumed_agent.redaction.scrub_fields("middleware_decisions", rows)
    for row in rows:
        print(json.dumps(row, ensure_ascii=False))
    heading("ANSWER")
    print(answer)
    print(f"stored run : {first.run_id} ({store.get(first.run_id).status})")

    # the store holds the whole run — both segments, before and after the pause — so the
    # trace and the explanation reach back to the customer's message
    stored = store.get(first.run_id)
    trace_file = record_trace(stored, redaction=resumed_agent.redaction).save(RUNS / "support.trace.json")
    print(f"See it: .venv/bin/agent view {trace_file} -o {RUNS / 'support.html'}")
    heading(f"WHY this answer? (agent why {trace_file})")
    print(explain_answer(trace_file).format())
    return 0


if __name__ == "__main__":
    sys.exit(main())
