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
  memory ledger keeps no arguments, and no crash survives it anyway): the ledger writes the new
  name's intent settled as superseded by it, in the intent's own transaction, and the call goes on
  — recovered as the table above says — under its first name and key; so no later segment finds
  the new name in doubt, and no later identical call is matched to it (it never ran). The run's unsettled intents
  are looked for with a segment's intents until one finds none; after that the segment's own
  calls are the only ones it could find, and none of them is in doubt from an earlier try.
- A tool that raises records a failed receipt; a retry of it (its ``Retry`` policy) runs again.
- Every such call leaves one row in ``tool_effects`` in the tool-calls commit — ``{"tool_call_id",
  "tool", "effect", "key", "outcome"}`` (and ``"called_as"``, the id the model gave a renamed
  call; its ``tool_call_id`` and ``key`` are the first name's) — so the record says which effects
  ran, and which were recovered how, once each. A ``read`` tool writes nothing (absent means byte-identical).
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


def _row(scope: Scope, tool: Any, call_id: str, key: str, outcome: str, named: str) -> None:
    row = {
        "tool_call_id": call_id,
        "tool": tool.name,
        "effect": effect_name(tool.effect),
        "key": key,
        "outcome": outcome,
    }
    if named != call_id:  # a renamed call: the effect is its first name's; the model called it ``named``
        row["called_as"] = named
    # a fresh dict of strings, handed over without a copy when they are plain ASCII (a tool name is;
    # a call id or run id the model or a caller chose may not be: then the ordinary, checking write)
    owned = key.isascii() and call_id.isascii() and named.isascii()
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
        body = {"tool": tool.name, "effect": effect_name(tool.effect), "tool_call_id": call_id, "iteration": iteration}
        look_back = segment is None or segment not in _CLEAR
        found, others = ledger.intend(run_id, key, body, args, look_back)
        renamed = found is not None and found["key"] != key
        if look_back and (found is None or renamed) and not others and segment is not None:
            if len(_CLEAR) >= _CLEAR_KEPT:
                _CLEAR.clear()
            # none in doubt from an earlier try but the call taken over here (settled by this call;
            # this segment's own calls never are)
            _CLEAR[segment] = None
        if found is None:
            return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "ran", call_id)
        if renamed:  # the same call, named differently on the re-run: the ledger settled the new name as
            key = found["key"]  # superseded; the call goes on under its first name, so its key is the same
            tool_ctx = attrs.evolve(tool_ctx, tool_call_id=str(found["body"].get("tool_call_id")))
        receipt = found["receipt"]
        if receipt is not None and not receipt.get("error"):
            _row(scope, tool, tool_ctx.tool_call_id, key, "receipt", call_id)
            return receipt.get("result", "")
        if receipt is not None:  # the last try raised: the tool said it did not happen; try again
            ledger.reopen(run_id, key)
            return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "ran", call_id)
        effect = tool.effect
        if effect == "idempotent":
            return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "re-sent", call_id)
        if isinstance(effect, Checkable):
            return _check(ledger, scope, tool, args, tool_ctx, run_id, key, call_id)
        return _ask(scope, tool, args, tool_ctx.tool_call_id, key, None, call_id)

    return execute


def _send(
    ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, outcome: str, named: str
) -> Any:
    """Run the tool; its receipt is written when it returns (a failed one when it raises)."""
    try:
        result = tool.execute(args, tool_ctx)
    except Exception as exc:
        ledger.settle(run_id, key, {"error": str(exc) or type(exc).__name__})
        raise
    if inspect.isawaitable(result):
        return _settle_later(ledger, scope, tool, result, tool_ctx, run_id, key, outcome, named)
    _receipt(ledger, tool, run_id, key, result)
    _row(scope, tool, tool_ctx.tool_call_id, key, outcome, named)
    return result


def _receipt(ledger: Any, tool: Any, run_id: str, key: str, result: Any) -> None:
    """The receipt of a call that returned: an idempotent tool's waits for the ledger's next write
    (a call in doubt is re-sent with its key, harmlessly); any other's is written now."""
    if tool.effect == "idempotent":
        ledger.settle_later(run_id, key, {"result": result_text(result)})
    else:
        ledger.settle(run_id, key, {"result": result_text(result)})


async def _settle_later(
    ledger: Any, scope: Scope, tool: Any, pending: Any, tool_ctx: Any, run_id: str, key: str, outcome: str, named: str
) -> Any:
    try:
        result = await pending
    except Exception as exc:
        ledger.settle(run_id, key, {"error": str(exc) or type(exc).__name__})
        raise
    _receipt(ledger, tool, run_id, key, result)
    _row(scope, tool, tool_ctx.tool_call_id, key, outcome, named)
    return result


def _check(ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, named: str) -> Any:
    """Ask the tool's check whether the call in doubt happened."""
    try:
        answer = tool.effect.fn(key, args)
    except Exception as exc:
        return _ask(scope, tool, args, tool_ctx.tool_call_id, key, exc, named)
    if inspect.isawaitable(answer):
        return _check_later(ledger, scope, tool, args, tool_ctx, run_id, key, answer, named)
    return _checked(ledger, scope, tool, args, tool_ctx, run_id, key, answer, named)


async def _check_later(
    ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, pending: Any, named: str
) -> Any:
    try:
        answer = await pending
    except Exception as exc:
        return _ask(scope, tool, args, tool_ctx.tool_call_id, key, exc, named)
    result = _checked(ledger, scope, tool, args, tool_ctx, run_id, key, answer, named)
    return await result if inspect.isawaitable(result) else result


def _checked(
    ledger: Any, scope: Scope, tool: Any, args: Any, tool_ctx: Any, run_id: str, key: str, answer: Any, named: str
) -> Any:
    if answer is None:
        return _send(ledger, scope, tool, args, tool_ctx, run_id, key, "checked: not sent before", named)
    ledger.settle(run_id, key, {"result": result_text(answer), "checked": True})
    _row(scope, tool, tool_ctx.tool_call_id, key, "checked: happened", named)
    return answer


def _ask(scope: Scope, tool: Any, args: Any, call_id: str, key: str, error: Exception | None, named: str) -> Any:
    """Pause for a person: the call may have run. Their answer becomes the call's result."""
    question = f"{_call_text(tool, args)} may have run; did it?"
    data: dict[str, Any] = {
        "reconcile": {"tool": tool.name, "tool_call_id": call_id, "key": key, "args": args},
        "question": question,
    }
    if error is not None:
        data["check_failed"] = f"{type(error).__name__}: {error}"
    _row(scope, tool, call_id, key, "asked a person", named)
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
