"""The agent's state: every key its stages write, named once, and the pause payloads as values.

Law of this file: a state key of the agent is spelled in exactly one place — here — and
every module of ``agent`` reads and writes it through the constant (``scope[HISTORY]``,
``peek(scope, LLM_LATEST_TOOL_CALLS)``); the names are the public contract of
docs/api.md ("Agent state keys"), so a constant is never renamed. The two payloads a
pause leaves — ``paused_tool_call`` in the state and the checkpoint's ``pause_data`` —
are attrs values whose ``to_dict`` writes the wire shape byte for byte as before (same
keys, same order) and whose ``from_dict`` reads untrusted data fail-closed: a missing
key or a value of the wrong type is a ``CheckpointError`` naming the field's path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from flowchart import CheckpointError
from flowchart.lowlevel import json_type

# -- the run input (``durable.make_input``) ---------------------------------------------
INPUT_MESSAGE = "input_message"
INPUT_IDENTITY = "input_identity"
CONVERSATION_INPUT = "conversation_input"  # a conversation turn: the earlier turns' messages (agent._run.conversations)

# -- written by seed ----------------------------------------------------------------------
USER_MESSAGE = "user_message"
HISTORY = "history"
ITERATION = "iteration"
MAX_ITERATIONS = "max_iterations"
IDENTITY = "identity"
SYSTEM_PROMPT = "system_prompt"
# -- written by call-llm ------------------------------------------------------------------
LLM_LATEST_CONTENT = "llm_latest_content"
LLM_LATEST_TOOL_CALLS = "llm_latest_tool_calls"
LLM_MODEL = "llm_model"
LLM_RETRIES = "llm_retries"
LLM_NOT_STREAMED = "llm_not_streamed"  # calls made without streaming though stream=True, and why
TOTAL_INPUT_TOKENS = "total_input_tokens"
TOTAL_OUTPUT_TOKENS = "total_output_tokens"
USAGE_NOT_REPORTED = "usage_not_reported"
# -- written by call-llm (only with pricing= or budget=: agent._chart.spend) ------------------------
LLM_COST = "llm_cost"  # the latest model call's usage as reported and cost, and the run's totals
BUDGET_STATE = "budget"  # the budget in force and the decisions taken on it (raised, stopped, wrapped up)
# -- written by wrap-up and final ---------------------------------------------------------
WRAP_UP_ASKED = "wrap_up_asked"
CONVERSATION = "conversation"  # seed of a conversation turn: where the loaded messages came from
FINAL_CONTENT = "final_content"
# -- written by call-llm (only with an output_schema: agent._chart.structured) ----------------------
OUTPUT_SCHEMA_FORM = "output_schema_form"  # how the shape was asked for, and the forms a server refused
# -- written by output-retry (only with an output_schema: agent._chart.structured) ---------------
OUTPUT_SCHEMA_RETRIES = "output_schema_retries"
OUTPUT_SCHEMA_ERROR = "output_schema_error"
# -- written by the gates -----------------------------------------------------------------
MIDDLEWARE_DECISIONS = "middleware_decisions"  # governance.LEDGER_KEY
HUMAN_DECISIONS = "human_decisions"  # governance.HUMAN_DECISIONS
TOOL_ERRORS = "tool_errors"
TOOL_EFFECTS = "tool_effects"  # calls of tools with an effect: how each ran or was recovered (agent._chart.effects_run)
POLICY_HALT = "policy_halt"
MESSAGE_DENIED_REASON = "message_denied_reason"
MESSAGE_DENIED_PHASE = "message_denied_phase"
MESSAGE_DENIED_BY = "message_denied_by"
PAUSED_TOOL_CALL = "paused_tool_call"

PauseKind = Literal["check_in", "ask", "ask_human"]
PAUSE_KINDS: tuple[str, ...] = ("check_in", "ask", "ask_human")
#: the key of each kind's body in the checkpoint's pause data
PAUSE_BODY = {"check_in": "check_in", "ask": "ask", "ask_human": "data"}


def _refuse(problem: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid agent checkpoint: {problem} @ {path}", path=path)


def _json_type(value: Any) -> str:
    return json_type(value)


def _take(data: Mapping[str, Any], key: str, kinds: tuple[type, ...], path: str, what: str) -> Any:
    if key not in data:
        raise _refuse("required key missing", f"{path}.{key}")
    value = data[key]
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise _refuse(f"expected {what}, got {_json_type(value)}", f"{path}.{key}")
    return value


def _kind(data: Any, path: str) -> PauseKind:
    if not isinstance(data, Mapping):
        raise _refuse(f"expected an object, got {_json_type(data)}", path)
    kind = _take(data, "kind", (str,), path, "a string")
    if kind not in PAUSE_KINDS:
        raise _refuse(f"expected one of {', '.join(map(repr, PAUSE_KINDS))}, got {kind!r}", f"{path}.kind")
    return kind


@attrs.frozen
class PausedCall:
    """``paused_tool_call``: the call the run paused on, what a resume needs to answer it.

    ``ask_index`` and ``middleware`` (the asking link) are set for an ``ask`` only; ``index``
    (the call's place in the batch) is set when the stage commits it; ``position`` is absent
    from checkpoints written before pauses recorded where they happened.
    """

    kind: PauseKind
    tool_call_id: str
    tool_name: str
    args: Any
    request_id: str
    position: Any = None
    ask_index: int | None = None
    middleware: str | None = None
    index: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The state value, keys in the order they were always written."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            "args": self.args,
        }
        if self.kind == "ask":
            out["ask_index"] = self.ask_index
            out["middleware"] = self.middleware
        out["request_id"] = self.request_id
        if self.position is not None:  # a checkpoint written before positions existed has none
            out["position"] = self.position
        if self.index is not None:
            out["index"] = self.index
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = f"$.shared_state.{PAUSED_TOOL_CALL}") -> PausedCall:
        """Read the state value back (untrusted): ``CheckpointError`` naming the bad field."""
        kind = _kind(data, path)
        ask = kind == "ask"
        return cls(
            kind=kind,
            tool_call_id=_take(data, "tool_call_id", (str,), path, "a string"),
            tool_name=_take(data, "tool_name", (str,), path, "a string"),
            args=_take(data, "args", (Mapping,), path, "an object"),
            request_id=_take(data, "request_id", (str,), path, "a string"),
            position=_take(data, "position", (Mapping,), path, "an object") if "position" in data else None,
            ask_index=_take(data, "ask_index", (int,), path, "an integer") if ask else None,
            middleware=_take(data, "middleware", (str,), path, "a string") if ask else None,
            index=_take(data, "index", (int,), path, "an integer") if "index" in data else None,
        )


@attrs.frozen
class PauseData:
    """A checkpoint's ``pause_data``: which call paused, and the body a person answers —
    the ``check_in`` request, the middleware ``ask``, or an ``ask_human`` tool's ``data``."""

    kind: PauseKind
    tool_call_id: str
    tool_name: str
    body: Any

    def to_dict(self) -> dict[str, Any]:
        """The pause data, keys in the order they were always written."""
        return {
            "kind": self.kind,
            "tool_call_id": self.tool_call_id,
            "tool_name": self.tool_name,
            PAUSE_BODY[self.kind]: self.body,
        }

    @classmethod
    def from_dict(cls, data: Any, path: str = "$.pause_data") -> PauseData:
        """Read pause data back (untrusted): ``CheckpointError`` naming the bad field."""
        kind = _kind(data, path)
        body = PAUSE_BODY[kind]
        if body not in data:
            raise _refuse(f"a {kind} pause carries its {body}", f"{path}.{body}")
        return cls(
            kind=kind,
            tool_call_id=_take(data, "tool_call_id", (str,), path, "a string"),
            tool_name=_take(data, "tool_name", (str,), path, "a string"),
            body=data[body],
        )
