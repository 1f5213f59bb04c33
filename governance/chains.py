"""The chain drivers — the one place a middleware chain is walked.

A middleware is a pure decision: it never touches the run's state. These drivers RETURN
rows; the caller (the agent chart) commits them under ``middleware_decisions`` and emits
one event per row. The laws, each pinned by a test:

1. **Order is declaration order**; each link sees the previous link's output (args,
   message text or tool result).
2. **The first non-allow answer wins**: after a deny or an ask, later links do not run.
3. **A link that raises is a denial, never a pass**: ``middleware '<name>' threw: <message>``.
   (Only ``Exception`` is caught; cancellation and other ``BaseException`` pass through.)
4. **A link that malfunctions is a denial**: at a message boundary, an ``ask`` (no pause
   exists there) or an ``allow`` of a non-string; anywhere, a hook that returns something
   that is not an outcome; before the tool, an ``allow`` of arguments that are not a dict;
   after the tool, an ``ask`` (the tool already ran).
5. **The result comes back through the onion**: ``run_after_tool_chain`` walks the same
   list in reverse, so the first-declared link has the first word about the call and the
   last about the result. An after-tool deny replaces what the model reads with the reason;
   the real result is still what the tool returned (``ChainResult.value``).
6. **A link with no hook for a moment files no row; every hook call files exactly one.**
7. **Chains never raise**: they return a ``ChainResult`` verdict plus the rows.

Hooks may be sync or async: a result that is awaitable is awaited.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs

from governance._json import describe_json_shape, describe_shape
from governance.ledger import Verdict, ask_resumed_second_ask_reason, message_row, tool_row
from governance.middleware import MessageInfo, ToolCallInfo, find_hook, link_name
from governance.outcomes import Allow, Ask, Deny

_RowMaker = Callable[..., dict[str, Any]]

AskPolicy = Literal["pause", "refuse"]
"""What a before-tool ``ask`` becomes: a pause (normal dispatch) or a denial (a resumed
dispatch, which has no second pause to carry it)."""


@attrs.frozen
class ChainResult:
    """What a chain decided, and the rows it filed.

    - ``verdict``: ``"allow"``, ``"deny"`` or ``"ask"``.
    - ``value``: the carried value. On allow, the final (possibly transformed) args, message
      or result. On a before-tool deny/ask, the args as transformed up to the deciding link;
      on a message deny, the text as transformed before the refusal; on an after-tool deny,
      the tool's REAL result (the model reads ``reason`` instead).
    - ``reason``: the denial's reason (what the model reads for a tool; what
      ``MessageDeniedError`` carries for a message). ``None`` unless deny.
    - ``middleware`` / ``index``: the deciding link's name and declaration index (deny, ask).
    - ``ask``: the ``Ask`` payload when the verdict is ask; resume the chain at ``index + 1``.
    - ``refused_ask``: True when the deny is an ask refused under ``ask_policy="refuse"``.
    - ``rows``: the ledger rows, in the order the hooks ran (JSON-safe dicts).
    """

    verdict: Literal["allow", "deny", "ask"]
    value: Any
    rows: list[dict[str, Any]]
    reason: str | None = None
    middleware: str | None = None
    index: int | None = None
    ask: Ask | None = None
    refused_ask: bool = False

    @property
    def allowed(self) -> bool:
        """True when the verdict is allow."""
        return self.verdict == "allow"


def _threw(name: str, exc: Exception) -> str:
    # A bare `raise ValueError()` has no message; its type is the most the reader can get.
    return f"middleware '{name}' threw: {str(exc) or type(exc).__name__}"


def _not_an_outcome(name: str, hook: str, got: object, verbs: str) -> str:
    if got is None:  # the commonest malfunction: a hook that forgot to ``return``
        return f"middleware '{name}' {hook} returned None; return allow(), deny() or ask()"
    return f"middleware '{name}' returned {describe_shape(got)} from {hook}, which is not an outcome. Return {verbs}."


_TOOL_VERBS = "allow(), allow(new_args, why), deny(reason) or ask(question)"
_RESULT_VERBS = "allow(), allow(new_result, why) or deny(reason)"
_MESSAGE_VERBS = "allow(), allow(text, why) or deny(reason)"


async def _consult(hook: Callable[[Any], Any], arg: object, name: str) -> tuple[object, str | None]:
    """Call a hook (awaiting an async one). Returns (outcome, None) or (None, threw-reason)."""
    try:
        answer = hook(arg)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:
        return None, _threw(name, exc)
    return answer, None


def _private(args: Mapping[str, Any]) -> dict[str, Any]:
    # Each link gets its own copy: an in-place edit must not become an undeclared transform.
    try:
        return copy.deepcopy(dict(args))
    except Exception:
        return dict(args)


def _tool_rows(call: ToolCallInfo, moment: Literal["before-tool", "after-tool"]) -> _RowMaker:
    def make(name: str, outcome: Verdict, why: str | None, **values: Any) -> dict[str, Any]:
        return tool_row(
            middleware=name,
            moment=moment,
            tool_name=call.tool_name,
            tool_call_id=call.tool_call_id,
            iteration=call.iteration,
            outcome=outcome,
            changed=bool(values),
            why=why,
            **values,
        )

    return make


async def run_tool_chain(
    links: Sequence[object],
    call: ToolCallInfo,
    *,
    start: int = 0,
    ask_policy: AskPolicy = "pause",
) -> ChainResult:
    """Walk the before-tool chain over ``call`` (laws 1-4, 6, 7), from link ``start``.

    ``start=0`` for a fresh dispatch; on resuming an approved ask, pass the asker's
    ``index + 1`` and ``ask_policy="refuse"`` (a second ask becomes a denial). Never raises.
    """
    make = _tool_rows(call, "before-tool")
    rows: list[dict[str, Any]] = []
    args: dict[str, Any] = dict(call.args)
    for index in range(max(start, 0), len(links)):
        link = links[index]
        hook = find_hook(link, "on_tool_call")
        if hook is None:
            continue
        name = link_name(link)
        answer, reason = await _consult(hook, attrs.evolve(call, args=_private(args)), name)
        refused_ask = False
        if reason is None:
            if isinstance(answer, Deny):
                reason = answer.reason
            elif isinstance(answer, Ask) and ask_policy == "refuse":
                reason, refused_ask = ask_resumed_second_ask_reason(name, answer.question), True
            elif isinstance(answer, Ask):
                rows.append(make(name, "ask", answer.question))
                return ChainResult("ask", args, rows, middleware=name, index=index, ask=answer)
            elif not isinstance(answer, Allow):
                reason = _not_an_outcome(name, "on_tool_call", answer, _TOOL_VERBS)
            elif answer.value is not None and not isinstance(answer.value, Mapping):
                reason = (
                    f"middleware '{name}' returned allow({describe_json_shape(answer.value)}) at "
                    f"the before-tool moment, and tool arguments are an object. Return "
                    f"allow(new_args, why) with a dict to rewrite them, allow() to pass them "
                    f"through unchanged, deny(reason) to refuse the call or ask(question) to ask "
                    f"a person."
                )
        if reason is not None:
            rows.append(make(name, "deny", reason))
            return ChainResult(
                "deny",
                args,
                rows,
                reason=reason,
                middleware=name,
                index=index,
                refused_ask=refused_ask,
            )
        assert isinstance(answer, Allow)  # every other answer returned above
        if answer.value is None:
            rows.append(make(name, "allow", answer.why))
            continue
        new_args = dict(answer.value)
        rows.append(make(name, "allow", answer.why, before=args, after=new_args))
        args = new_args
    return ChainResult("allow", args, rows)


async def run_after_tool_chain(links: Sequence[object], call: ToolCallInfo) -> ChainResult:
    """Walk the after-tool chain over a call that ran, in REVERSE declaration order (law 5).

    ``call.result`` is the tool's real result and ``call.args`` the args it ran with. Call
    this only for a call that executed. On deny, ``value`` is the real result and ``reason``
    is what the model reads. Never raises.
    """
    make = _tool_rows(call, "after-tool")
    rows: list[dict[str, Any]] = []
    current: Any = call.result
    for index in reversed(range(len(links))):
        link = links[index]
        hook = find_hook(link, "on_tool_result")
        if hook is None:
            continue
        name = link_name(link)
        info = attrs.evolve(call, args=_private(call.args), result=current)
        answer, reason = await _consult(hook, info, name)
        if reason is None:
            if isinstance(answer, Deny):
                reason = answer.reason
            elif isinstance(answer, Ask):
                reason = (
                    f"middleware '{name}' asked a person to decide after tool '{call.tool_name}' "
                    f"ran, and there is no pause after a tool runs to carry that ask: "
                    f"{answer.question}. Ask in on_tool_call, where a pause exists, or decide "
                    f"here with allow()/deny()."
                )
            elif not isinstance(answer, Allow):
                reason = _not_an_outcome(name, "on_tool_result", answer, _RESULT_VERBS)
        if reason is not None:
            # The model will read the reason instead of the result: that IS a change, and the
            # row keeps what was withheld. The caller still reports the real result.
            rows.append(make(name, "deny", reason, before=current, after=reason))
            return ChainResult("deny", call.result, rows, reason=reason, middleware=name, index=index)
        assert isinstance(answer, Allow)
        if answer.value is None:
            rows.append(make(name, "allow", answer.why))
            continue
        rows.append(make(name, "allow", answer.why, before=current, after=answer.value))
        current = answer.value
    return ChainResult("allow", current, rows)


async def run_message_chain(links: Sequence[object], message: MessageInfo) -> ChainResult:
    """Walk the message chain over ``message`` at its phase (laws 1-4, 6, 7). Never raises.

    On deny, ``value`` is the text as transformed before the refusal; ``reason`` and
    ``middleware`` are what ``MessageDeniedError`` reports.
    """
    rows: list[dict[str, Any]] = []
    content = message.content
    phase = message.phase

    def make(name: str, outcome: Verdict, why: str | None, **values: Any) -> dict[str, Any]:
        return message_row(
            middleware=name,
            phase=phase,
            iteration=message.iteration,
            outcome=outcome,
            changed=bool(values),
            why=why,
            **values,
        )

    for index, link in enumerate(links):
        hook = find_hook(link, "on_message")
        if hook is None:
            continue
        name = link_name(link)
        answer, reason = await _consult(hook, attrs.evolve(message, content=content), name)
        if reason is None:
            if isinstance(answer, Deny):
                reason = answer.reason
            elif isinstance(answer, Ask):
                reason = (
                    f"middleware '{name}' asked a person to decide about the {phase} message, "
                    f"and there is no pause at the message boundary to carry that ask: "
                    f"{answer.question}. Ask at a TOOL moment (on_tool_call), where a pause "
                    f"exists, or decide here with allow()/deny()."
                )
            elif not isinstance(answer, Allow):
                reason = _not_an_outcome(name, "on_message", answer, _MESSAGE_VERBS)
            elif answer.value is not None and not isinstance(answer.value, str):
                reason = (
                    f"middleware '{name}' returned allow({describe_json_shape(answer.value)}) at "
                    f"the {phase} message boundary, and a message is text. Return "
                    f"allow(some_string, why) to rewrite it, allow() to pass it through "
                    f"unchanged, or deny(reason) to refuse it."
                )
        if reason is not None:
            rows.append(make(name, "deny", reason))
            return ChainResult("deny", content, rows, reason=reason, middleware=name, index=index)
        assert isinstance(answer, Allow)
        if answer.value is None:
            rows.append(make(name, "allow", answer.why))
            continue
        rows.append(make(name, "allow", answer.why, before=content, after=answer.value))
        content = answer.value
    return ChainResult("allow", content, rows)
