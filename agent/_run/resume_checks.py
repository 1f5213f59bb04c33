"""Before an agent resume trusts a checkpoint: its chart, its state's shape, its cross-references.

Law: ``agent.resume`` (and answering a stored run) reads a checkpoint as untrusted input.
Before any decision is checked or any stage runs, the checkpoint must be of THIS agent's
chart (fingerprint first, then the frames), and the state the ``tool-calls`` stage will
read must have the shape that stage wrote: ``paused_tool_call`` (kind, call id, tool,
args, position; for an ask the asker and its place in the chain), the batch
``llm_latest_tool_calls``, ``history``, ``iteration``, and the counters and texts the model
calls after it add to (``total_input_tokens``, ``total_output_tokens``, ``final_content``,
``usage_not_reported``). Every field a resume trusts is
cross-checked against the paused call: the pause data's ``kind``, call id and tool, the
call at the paused position (whose id becomes the tool's idempotency key), the history
of the batch so far, the asking middleware at ``ask_index``, the iteration budget and the
control fields that count iterations. A mismatch is a ``CheckpointError`` naming the path
— never a ``KeyError``, and never consent read as something else. (The call a person
approved is bound by the request id, which ``governance`` verifies.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent._chart.budget import check_budget_pause
from agent._chart.dispatch import PAUSED_KEY
from agent._chart.state import (
    FINAL_CONTENT,
    HISTORY,
    ITERATION,
    LLM_LATEST_CONTENT,
    LLM_LATEST_TOOL_CALLS,
    MAX_ITERATIONS,
    PAUSE_BODY,
    TOTAL_INPUT_TOKENS,
    TOTAL_OUTPUT_TOKENS,
    USAGE_NOT_REPORTED,
    PauseData,
    PausedCall,
)
from flowchart import Checkpoint, CheckpointError
from flowchart.lowlevel import check_checkpoint, json_type
from governance import CheckInRequest, MiddlewareAsk
from governance.errors import WireFormatError
from governance.middleware import link_name

if TYPE_CHECKING:
    from agent._chart.config import AgentConfig
    from flowchart import FlowChart

_STATE = "$.shared_state"
_PAUSED = f"{_STATE}.{PAUSED_KEY}"
_PAUSE_KEYS = PAUSE_BODY


def _refuse(problem: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid agent checkpoint: {problem} @ {path}", path=path)


def _field(data: dict[str, Any], key: str, kind: type, path: str) -> Any:
    if key not in data:
        raise _refuse("required key missing", f"{path}.{key}")
    value = data[key]
    if type(value) is not kind:
        names = {str: "a string", int: "an integer", dict: "an object", list: "a list"}
        raise _refuse(f"expected {names[kind]}, got {json_type(value)}", f"{path}.{key}")
    return value


def check_resumable(checkpoint: Any, cfg: AgentConfig | None = None, chart: FlowChart | None = None) -> None:
    """Refuse (``CheckpointError``) an agent checkpoint a resume cannot trust; see the law.

    ``chart`` and ``cfg`` (the agent's) add the checks that need the agent: its fingerprint
    and stages first, then its tools, its middleware chain and its iteration budget.
    Something that is not a ``Checkpoint`` is left to the caller's own ``TypeError``.
    """
    if not isinstance(checkpoint, Checkpoint):
        return
    if chart is not None:
        check_checkpoint(chart, checkpoint)
    state = checkpoint.shared_state
    if isinstance(checkpoint.pause_data, dict) and checkpoint.pause_data.get("kind") == "budget":
        check_budget_pause(state)  # a budget pause (agent._chart.budget): no tool call is waiting
        return
    paused = _field(state, PAUSED_KEY, dict, _STATE)
    call = PausedCall.from_dict(paused, _PAUSED)  # its shape: the one codec (kind, call, tool, args, an ask's asker)
    kind, call_id, tool, index = call.kind, call.tool_call_id, call.tool_name, call.index
    if index is None:  # the stage commits it with the pause: a resume needs it
        raise _refuse("required key missing", f"{_PAUSED}.index")
    if call.position is not None:  # where the pause happened: bound into the request id
        _field(call.position, "iteration", int, f"{_PAUSED}.position")
        _field(call.position, "step", str, f"{_PAUSED}.position")
    _check_pause_data(checkpoint.pause_data, kind, call_id, tool)
    calls = _field(state, LLM_LATEST_TOOL_CALLS, list, _STATE)
    for n, each in enumerate(calls):  # every call of the batch is dispatched after the resume
        _check_call(each, f"{_STATE}.{LLM_LATEST_TOOL_CALLS}[{n}]")
    _field(state, LLM_LATEST_CONTENT, str, _STATE)
    if not 0 <= index < len(calls):
        raise _refuse(f"index {index} is not a call of the batch (it has {len(calls)})", f"{_PAUSED}.index")
    where = f"{_STATE}.{LLM_LATEST_TOOL_CALLS}[{index}]"
    if type(calls[index]) is not dict:
        raise _refuse("expected an object", where)
    if _field(calls[index], "id", str, where) != call_id:
        raise _refuse(f"the call at the paused position is not the paused call '{call_id}'", f"{where}.id")
    if _field(calls[index], "name", str, where) != tool:
        raise _refuse(f"the call at the paused position is not a call of '{tool}'", f"{where}.name")
    _check_history(_field(state, HISTORY, list, _STATE), calls, index)
    for key in (TOTAL_INPUT_TOKENS, TOTAL_OUTPUT_TOKENS):  # the model calls after the resume add to them
        _field(state, key, int, _STATE)
    for key in (FINAL_CONTENT, USAGE_NOT_REPORTED):  # read as text when written (when present)
        if key in state:
            _field(state, key, str, _STATE)
    if cfg is not None:
        _check_against_agent(checkpoint, paused, cfg)


def _check_pause_data(data: Any, kind: str, call_id: str, tool: str) -> None:
    """The pause data says what the state's paused call says: same kind, same call, same tool."""
    if type(data) is not dict:
        raise _refuse("expected an object", "$.pause_data")
    if data.get("kind") != kind:
        raise _refuse(
            f"the pause data's kind {data.get('kind')!r} is not the paused call's {kind!r}: a resume reads one "
            "kind of answer, so the two must agree",
            "$.pause_data.kind",
        )
    for key, expected in (("tool_call_id", call_id), ("tool_name", tool)):
        if data.get(key) != expected:
            raise _refuse(f"expected the paused call's {expected!r}, got {data.get(key)!r}", f"$.pause_data.{key}")
    body = _PAUSE_KEYS[kind]
    PauseData.from_dict(data)  # its shape: the one codec (the kind's body present, no other key)
    try:
        if kind == "check_in":
            request: CheckInRequest | MiddlewareAsk = CheckInRequest.from_dict(data[body], f"$.pause_data.{body}")
        elif kind == "ask":
            request = MiddlewareAsk.from_dict(data[body], f"$.pause_data.{body}")
        else:
            return
    except WireFormatError as exc:
        raise CheckpointError(f"Invalid agent checkpoint: {exc}", path=exc.path) from None
    if request.tool != tool:
        raise _refuse(
            f"the request is about '{request.tool}', the paused call about '{tool}'", f"$.pause_data.{body}.tool"
        )


def _check_call(value: Any, where: str) -> None:
    """One model tool call as ``call-llm`` writes it: ``id``, ``name``, ``args`` (or ``args_error``)."""
    if type(value) is not dict:
        raise _refuse(f"expected an object, got {json_type(value)}", where)
    _field(value, "id", str, where)
    _field(value, "name", str, where)
    if "args_error" in value:
        _field(value, "args_error", str, where)
    elif "args" in value:
        _field(value, "args", dict, where)


_ROLES = ("user", "assistant", "tool", "system")


def _check_messages(history: list[Any]) -> None:
    """Every message as the stages write it: an object with a known ``role`` and string ``content``."""
    for n, message in enumerate(history):
        where = f"{_STATE}.history[{n}]"
        if type(message) is not dict:
            raise _refuse(f"expected a message object, got {json_type(message)}", where)
        role = _field(message, "role", str, where)
        if role not in _ROLES:
            raise _refuse(f"expected one of {', '.join(map(repr, _ROLES))}, got {role!r}", f"{where}.role")
        _field(message, "content", str, where)
        if role == "tool":
            _field(message, "tool_call_id", str, where)
        if role == "assistant" and "tool_calls" in message:
            for i, each in enumerate(_field(message, "tool_calls", list, where)):
                _check_call(each, f"{where}.tool_calls[{i}]")


def _check_history(history: list[Any], calls: list[Any], index: int) -> None:
    """The batch in ``history``: the assistant turn asking for ``calls``, then ``index`` results."""
    _check_messages(history)
    turn = next((i for i in range(len(history) - 1, -1, -1) if _role(history[i]) == "assistant"), None)
    if turn is None:
        raise _refuse("no assistant turn asks for the paused batch", f"{_STATE}.history")
    if [c["id"] for c in history[turn].get("tool_calls", [])] != [c["id"] for c in calls]:
        raise _refuse("the last assistant turn does not ask for the paused batch", f"{_STATE}.history[{turn}]")
    answered = history[turn + 1 :]
    if len(answered) != index or any(_role(m) != "tool" for m in answered):
        raise _refuse(
            f"the batch has {len(answered)} message(s) after its assistant turn, but the paused call is number "
            f"{index} (0-based): one tool result per call before it",
            f"{_PAUSED}.index",
        )


def _role(message: Any) -> Any:
    return message.get("role") if type(message) is dict else None


def _check_against_agent(checkpoint: Checkpoint, paused: dict[str, Any], cfg: AgentConfig) -> None:
    state = checkpoint.shared_state
    tool = paused["tool_name"]
    if tool not in cfg.tools:
        raise _refuse(f"this agent has no tool '{tool}'", f"{_PAUSED}.tool_name")
    if paused["kind"] == "ask":
        at, links = paused["ask_index"], cfg.tool_middleware
        if not 0 <= at < len(links) or link_name(links[at]) != paused["middleware"]:
            raise _refuse(
                f"link {at} of this agent's tool middleware is not '{paused['middleware']}'", f"{_PAUSED}.ask_index"
            )
    budget = _field(state, MAX_ITERATIONS, int, _STATE)
    if budget != cfg.max_iterations:
        raise _refuse(
            f"this agent's iteration budget is {cfg.max_iterations}, not {budget}", f"{_STATE}.max_iterations"
        )
    iteration = _field(state, ITERATION, int, _STATE)
    visits = checkpoint.visit_counts
    rounds = visits.get("tool-calls", 0) + visits.get("wrap-up", 0)
    if iteration != rounds or visits.get("call-llm", 0) != iteration:
        raise _refuse(
            f"iteration {iteration} contradicts visit_counts (call-llm ran {visits.get('call-llm', 0)} time(s), "
            f"tool-calls and wrap-up {rounds})",
            f"{_STATE}.iteration",
        )


__all__ = ["check_resumable"]
