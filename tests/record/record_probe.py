"""The probe of "redaction in every reader": a secret, runs that hide it, and every way to read them.

``SECRET`` is a distinctive string a run writes under hidden keys and hidden fields; a
reader leaks when its output (as text) contains it. ``Everything`` records every recorder
hook a run fires; ``cli`` runs a command line in-process and returns what it printed;
``stored_rows`` reads a SQLite store's tables column by column, as a person with the
database file would.
"""

from __future__ import annotations

import contextlib
import io
import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from flowchart import Pausable, Redaction, decide, flow_chart
from flowchart.events import ALL_HOOKS

SECRET = "S3CRET-4111"

#: the chart's rule: a whole key, a pattern, a nested field
CHART_RULE = Redaction(keys=["ssn"], patterns=[r"^tok"], fields={"profile": ["card"]})


def text_of(value: Any) -> str:
    """``value`` as the text a reader would show (JSON, else its repr)."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def leaking(readings: Iterable[tuple[str, Any]]) -> list[str]:
    """The labels of the readings whose text holds ``SECRET``."""
    return [label for label, value in readings if SECRET in text_of(value)]


class Everything:
    """Every recorder hook a run fires, as ``(hook, event)`` (the event's repr shows every field);
    ``without`` names hooks it lacks (a recorder with ``on_stage_ops`` gets no ``on_read``/``on_write``)."""

    def __init__(self, without: Iterable[str] = ()) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.hooks = frozenset(ALL_HOOKS) - frozenset(without)

    def __getattr__(self, name: str) -> Callable[[Any], None]:
        if name in self.__dict__.get("hooks", ()):
            return lambda event: self.seen.append((name, event))
        raise AttributeError(name)

    def readings(self) -> list[tuple[str, str]]:
        return [(f"recorder {hook}", repr(event)) for hook, event in self.seen]


def cli(main: Callable[[Sequence[str]], int], *argv: str) -> str:
    """What ``main(argv)`` printed (stdout and stderr); a failing command fails the probe."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    assert code == 0, f"{argv}: exit {code}: {err.getvalue()}"
    return out.getvalue() + err.getvalue()


def stored_rows(db: Path, *, skip: Iterable[str] = ()) -> list[tuple[str, Any]]:
    """Every stored cell as ``("table.column", value)``, but the columns named in ``skip``."""
    left_out = set(skip)
    con = sqlite3.connect(db)
    try:
        rows: list[tuple[str, Any]] = []
        for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
            columns = [info[1] for info in con.execute(f"PRAGMA table_info({table})")]
            for row in con.execute(f"SELECT * FROM {table}"):
                rows.extend(
                    (f"{table}.{c}", v) for c, v in zip(columns, row, strict=True) if f"{table}.{c}" not in left_out
                )
        return rows
    finally:
        con.close()


# -- the chart: a decider, a subflow, a loop, a pausable stage ----------------------------
def _seed(scope: Any) -> None:
    scope.ssn = SECRET
    scope.token = SECRET + "-t"
    scope.profile = {"name": "Ann", "card": SECRET + "-c"}
    scope.count = 0


def _work(scope: Any, ctx: Any) -> None:
    scope.count = scope.count + 1
    _ = (scope.ssn, scope.token, scope.profile)
    ctx.emit("progress", {"count": scope.count, "ssn": ctx.shown("ssn", scope.ssn)})


def _check(scope: Any) -> Any:
    return decide(
        scope,
        [
            {"when": {"count": {"lt": 2}}, "then": "again", "label": "More to do"},
            {"when": {"ssn": {"ne": ""}, "token": {"ne": ""}}, "then": "done", "label": "Has an ssn"},
        ],
        "done",
    )


def _inner(scope: Any) -> None:
    scope.seen = scope.ssn[:3]
    scope.token_copy = len(scope.token)


def _ask(scope: Any) -> Any:
    _ = scope.ssn
    return {"question": "approve?"}


def _answer(scope: Any, answer: Any) -> None:
    scope.answer = answer


def probe_chart() -> Any:
    """Seed → Work ⟲ Check (decider; loops once) → Sub (subflow, fed the hidden keys) → Approve (pauses)."""
    inner = flow_chart("Inner", _inner, "inner").build()
    return (
        flow_chart("Seed", _seed, "seed")
        .add_function("Work", _work, "work")
        .add_decider_function("Check", _check, "check")
        .add_function_branch("again", "Again", lambda scope: None, loop_to="work")
        .add_function_branch("done", "Done", lambda scope: None)
        .set_default("done")
        .end()
        .add_subflow_chart_next(
            "sf",
            inner,
            mount_name="Sub",
            input_mapper=lambda parent: {"ssn": parent["ssn"], "token": parent["token"]},
            output_mapper=lambda out, parent: {"seen": out["seen"]},
        )
        .add_pausable_function("Approve", Pausable(execute=_ask, resume=_answer), "approve")
        .build()
    )


# -- the agent: a tool taking the secret, a check-in, a middleware, a store ----------------
#: the agent's rule: the user's message, the model's content and answer; the card inside a tool call
AGENT_RULE = Redaction(
    keys=["user_message", "llm_latest_content", "final_content"],
    fields={"llm_latest_tool_calls": ["args.card"], "history": ["content"], "tool_errors": ["message", "traceback"]},
)


def _pay(args: dict[str, Any], _ctx: Any) -> str:
    if args["card"] == "bad":
        raise ValueError(f"card declined: {SECRET}")
    return f"paid with {args['card']}"


class Watch:
    """A tool middleware that allows every call and result (so the ledger has rows)."""

    name = "watch"

    def on_tool_call(self, call: Any) -> Any:
        from governance import allow

        return allow()

    def on_tool_result(self, call: Any) -> Any:
        from governance import allow

        return allow()


def probe_agent(store: Any = None, *, recorders: Sequence[Any] = (), stream: bool = False, turns: int = 2) -> Any:
    """An agent whose model calls ``pay`` twice in one turn (a bad card that raises, then the
    secret card, which needs a check-in) and answers with the card; then answers ``turns - 1``
    more turns the same way."""
    from agent import Agent, define_tool
    from agent.providers import scripted

    tool = define_tool(
        name="pay",
        description="Pay with a card.",
        execute=_pay,
        input_schema={"type": "object", "properties": {"card": {"type": "string"}}},
        check_in=lambda args, _ctx: args["card"] != "bad",
    )
    calls = [
        {"id": "c0", "name": "pay", "args": {"card": "bad"}},
        {"id": "c1", "name": "pay", "args": {"card": SECRET}},
    ]
    replies: list[Any] = [{"content": f"I will pay with {SECRET}", "tool_calls": calls}, f"done, card {SECRET}"]
    replies += [f"turn {n}: card {SECRET}" for n in range(2, turns + 1)]
    builder = Agent.create(
        provider=scripted(replies), model="m", redaction=AGENT_RULE, recorders=recorders, store=store, stream=stream
    )
    return builder.system("You pay bills.").tool(tool).tool_middleware(Watch()).check_in().build()


class CardBot:
    """A provider that answers from the conversation alone (any process gets the same replies):
    it calls ``pay`` with the secret card once, then answers quoting the card."""

    def complete(self, request: Any) -> Any:
        from agent.providers.types import LLMResponse, ToolCall

        if any(m["role"] == "tool" for m in request.messages):
            return LLMResponse(content=f"done, card {SECRET}")
        return LLMResponse(content="", tool_calls=(ToolCall("c1", "pay", {"card": SECRET}),))


def card_agent() -> Any:
    """``MODULE:ATTR`` for the ``agent`` command: the card bot, a check-in on every payment."""
    from agent import Agent, define_tool

    tool = define_tool(
        name="pay",
        description="Pay with a card.",
        execute=_pay,
        check_in="always",
        input_schema={"type": "object", "properties": {"card": {"type": "string"}}},
    )
    return Agent.create(provider=CardBot(), model="bot", redaction=AGENT_RULE).tool(tool).check_in().build()


__all__ = [
    "AGENT_RULE",
    "CHART_RULE",
    "SECRET",
    "CardBot",
    "Everything",
    "card_agent",
    "cli",
    "leaking",
    "probe_agent",
    "probe_chart",
    "stored_rows",
    "text_of",
]
