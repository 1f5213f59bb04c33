"""Running a tool whose calls change the world: intent before, receipt after, recovery in between.

Laws (docs/durable.md "Effects that happen once"):
- A call of a tool whose ``effect`` is not ``"read"`` is written to the effect ledger
  (``flowchart.store.effects``) BEFORE the tool runs — ``{"tool", "effect", "tool_call_id",
  "iteration"}`` and its arguments, under its idempotency key — durable at once, apart from the
  run's segment; its receipt (the text the model reads) AFTER it returns: at once for a
  checkable or unsafe tool, with the ledger's next write (the next intent, or the segment's end:
  ``flush``) for an idempotent one, whose call, if the process dies first, is re-sent with its key.
- Finding the key already in the ledger when the call is dispatched means an earlier try of this
  segment got that far before it died:
  - a receipt: the call happened; the receipt is its result and the tool is NOT run (``receipt``);
  - no receipt — the call is *in doubt*: ``idempotent`` → sent again with the same key
    (``re-sent``); ``checkable(fn)`` → ``fn(key, args)`` is asked: a result is recorded as the
    receipt (``checked: happened``), ``None`` sends the call (``checked: not sent before``), and a
    ``fn`` that raises leaves it in doubt and escalates to a person; ``unsafe`` → the run pauses
    with a reconciliation check-in (an ``ask_human`` pause: "issue_refund(...) may have run; did
    it?") whose answer becomes the call's result (``asked a person``) and, when it is given, the
    call's receipt (``settle_answered``).
  An unsettled intent of the same run with the same tool and arguments under another call id (a
  model that named the call differently on the re-run) is found too (in a store's ledger: the
  memory ledger keeps no arguments, and no crash survives it anyway). The run's unsettled intents
  are looked for with a segment's intents until one finds none; after that the segment's own
  calls are the only ones it could find, and none of them is in doubt from an earlier try.
- A tool that raises records a failed receipt; a retry of it (its ``Retry`` policy) runs again.
- Every such call leaves one row in ``tool_effects`` in the tool-calls commit — ``{"tool_call_id",
  "tool", "effect", "key", "outcome"}`` — so the record says which effects ran,
  and which were recovered how. A ``read`` tool writes nothing (absent means byte-identical).
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import attrs

from agent._chart.state import TOOL_EFFECTS
from agent._tools.effects import Checkable, effect_name
from agent._tools.tools import ask_human, result_text
from flowchart import Scope
from flowchart.lowlevel import append_owned_to, raw_read, set_owned

__all__ = ["guarded", "settle_answered"]


#: results that are never awaitable: no ``inspect.isawaitable`` for them (a tool's usual result)
_PLAIN = frozenset((str, int, float, bool, dict, list, tuple, type(None)))


def _row(scope: Scope, tool: Any, call_id: str, key: str, outcome: str) -> None:
    effect = tool.effect
    row = {
        "tool_call_id": call_id,
        "tool": tool.name,
        "effect": effect if type(effect) is str else effect_name(effect),
        "key": key,
        "outcome": outcome,
    }
    # a fresh dict of strings, handed over without a copy when they are plain ASCII (a tool name is;
    # a call id or run id the model or a caller chose may not be: then the ordinary, checking write)
    owned = key.isascii() and call_id.isascii()
    if raw_read(scope, TOOL_EFFECTS) is None:
        if owned:
            set_owned(scope, TOOL_EFFECTS, [row])
        else:
            scope[TOOL_EFFECTS] = [row]
    elif owned:  # appended without reading the rows before it (the stage does not look at them)
        append_owned_to(scope, TOOL_EFFECTS, row)
    else:
        scope[TOOL_EFFECTS].append(row)


def _call_text(tool: Any, args: Any) -> str:
    shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in (args or {}).values())
    return f"{tool.name}({shown})"


def _in_doubt(others: list[dict[str, Any]], tool: Any, args: Any) -> dict[str, Any] | None:
    """Of the run's other unsettled intents, one for the same tool and arguments."""
    for entry in others:
        body = entry["body"]
        if body.get("tool") == tool.name and body.get("args") == args:
            return entry
    return None


#: the segments (engine run ids: a fresh one per segment of a stored run) whose first intent found
#: no other unsettled intent of their run: their later intents need not look again (forgetting one
#: only costs a look)
_CLEAR: dict[str, None] = {}
_CLEAR_KEPT = 256


def guarded(ledger: Any, scope: Scope, tool: Any, iteration: int, segment: str | None = None) -> Any:
    """``tool.execute`` behind the ledger (see the module laws): call it as the tool is called,
    ``(args, ctx)``; it returns the result, or an awaitable of it for an async tool or check.
    ``segment``: the segment's engine run id (``ctx.run_id``), with which the run's intents in
    doubt are looked for once per segment, not once per call."""

    def execute(args: dict[str, Any], tool_ctx: Any) -> Any:
        run_id, call_id = tool_ctx.run_id, tool_ctx.tool_call_id
        key = tool_ctx.idempotency_key
        effect = tool.effect
        name = effect if type(effect) is str else effect_name(effect)
        body = {"tool": tool.name, "effect": name, "tool_call_id": call_id, "iteration": iteration}
        look_back = segment is None or segment not in _CLEAR
        found, others = ledger.intend(run_id, key, body, args, look_back)
        if look_back and found is None and not others and segment is not None:
            if len(_CLEAR) >= _CLEAR_KEPT:
                _CLEAR.clear()
            _CLEAR[segment] = None  # none in doubt from an earlier try (this segment's own calls never are)
        if found is None and others:
            other = _in_doubt(others, tool, args)
            if other is not None:  # the same call, named differently on the re-run: it goes on
                found, key = other, other["key"]  # under its first name, so its key is the same
                tool_ctx = attrs.evolve(tool_ctx, tool_call_id=str(other["body"].get("tool_call_id")))
        if found is None:
            return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "ran")
        receipt = found["receipt"]
        if receipt is not None and not receipt.get("error"):
            _row(scope, tool, call_id, key, "receipt")
            return receipt.get("result", "")
        if receipt is not None:  # the last try raised: the tool said it did not happen; try again
            ledger.reopen(run_id, key)
            return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "ran")
        effect = tool.effect
        if effect == "idempotent":
            return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "re-sent")
        if isinstance(effect, Checkable):
            return _check(ledger, scope, tool, args, tool_ctx, run_id, key)
        return _ask(scope, tool, args, call_id, key, None)

    return execute


def _send(ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, outcome: str) -> Any:
    """Run the tool; its receipt is written when it returns (a failed one when it raises)."""
    try:
        result = tool.execute(args, tool_ctx)
    except Exception as exc:
        ledger.settle(run_id, key, {"error": str(exc) or type(exc).__name__})
        raise
    if type(result) not in _PLAIN and inspect.isawaitable(result):
        return _settle_later(ledger, scope, tool, result, tool_ctx, run_id, key, outcome)
    _receipt(ledger, tool, run_id, key, result)
    _row(scope, tool, tool_ctx.tool_call_id, key, outcome)
    return result


def _receipt(ledger: Any, tool: Any, run_id: str, key: str, result: Any) -> None:
    """The receipt of a call that returned: an idempotent tool's waits for the ledger's next write
    (a call in doubt is re-sent with its key, harmlessly); any other's is written now."""
    if tool.effect == "idempotent":
        ledger.settle_later(run_id, key, {"result": result_text(result)})
    else:
        ledger.settle(run_id, key, {"result": result_text(result)})


async def _settle_later(
    ledger: Any, scope: Scope, tool: Any, pending: Any, tool_ctx: Any, run_id: str, key: str, outcome: str
) -> Any:
    try:
        result = await pending
    except Exception as exc:
        ledger.settle(run_id, key, {"error": str(exc) or type(exc).__name__})
        raise
    _receipt(ledger, tool, run_id, key, result)
    _row(scope, tool, tool_ctx.tool_call_id, key, outcome)
    return result


def _check(ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str) -> Any:
    """Ask the tool's check whether the call in doubt happened."""
    try:
        answer = tool.effect.fn(key, args)
    except Exception as exc:
        return _ask(scope, tool, args, tool_ctx.tool_call_id, key, exc)
    if inspect.isawaitable(answer):
        return _check_later(ledger, scope, tool, args, tool_ctx, run_id, key, answer)
    return _checked(ledger, scope, tool, args, tool_ctx, run_id, key, answer)


async def _check_later(
    ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, pending: Any
) -> Any:
    try:
        answer = await pending
    except Exception as exc:
        return _ask(scope, tool, args, tool_ctx.tool_call_id, key, exc)
    result = _checked(ledger, scope, tool, args, tool_ctx, run_id, key, answer)
    return await result if inspect.isawaitable(result) else result


def _checked(ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, answer: Any) -> Any:
    if answer is None:
        return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "checked: not sent before")
    ledger.settle(run_id, key, {"result": result_text(answer), "checked": True})
    _row(scope, tool, tool_ctx.tool_call_id, key, "checked: happened")
    return answer


def _ask(scope: Scope, tool: Any, args: Any, call_id: str, key: str, error: Exception | None) -> Any:
    """Pause for a person: the call may have run. Their answer becomes the call's result."""
    question = f"{_call_text(tool, args)} may have run; did it?"
    data: dict[str, Any] = {
        "reconcile": {"tool": tool.name, "tool_call_id": call_id, "key": key, "args": args},
        "question": question,
    }
    if error is not None:
        data["check_failed"] = f"{type(error).__name__}: {error}"
    _row(scope, tool, call_id, key, "asked a person")
    return ask_human(data)


def settle_answered(ledger: Any, run_id: str, tool: Any, call_id: str, args: Any, answer: Any) -> None:
    """A person answered the pause of an effect's call (a reconciliation, or the tool's own
    ``ask_human``): the answer is the call's receipt, so the intent is in doubt no more."""
    if ledger is None:
        return
    for entry in ledger.entries(run_id):
        body = entry["body"]
        same = body.get("tool_call_id") == call_id or body.get("args") == args
        if entry["receipt"] is None and body.get("tool") == tool.name and same:
            ledger.settle(run_id, entry["key"], {"result": result_text(answer), "answered": True})
            return
