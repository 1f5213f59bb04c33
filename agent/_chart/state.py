"""The agent's state: every key its stages write, named once, and the pause payloads as values.

Law of this file: a state key of the agent is spelled in exactly one place — here — and
every module of ``agent`` reads and writes it through the constant (``scope[HISTORY]``,
``peek(scope, LLM_LATEST_TOOL_CALLS)``); the names are the public contract of
docs/api.md ("Agent state keys"), so a constant is never renamed. The two payloads a
pause leaves — ``paused_tool_call`` in the state and the checkpoint's ``pause_data`` —
are attrs values whose ``to_dict`` writes the wire shape byte for byte as before (same
keys, same order) and whose ``from_dict`` reads untrusted data fail-closed through the one
codec (``flowchart.lowlevel.structure_untrusted``: the untrusted-input limits, then a strict
converter): a missing or unknown key or a value of the wrong type is a ``CheckpointError``
naming the field's path.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from flowchart import CheckpointError
from flowchart.lowlevel import every_key, make_converter, structure_untrusted

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
#: what the model was offered besides the messages (``offer_of``: tool names and one digest of the
#: tools, output schema and form); written by call-llm when it differs from the previous call's
LLM_OFFER = "llm_offer"
LLM_RETRIES = "llm_retries"
LLM_NOT_STREAMED = "llm_not_streamed"  # calls made without streaming though stream=True, and why
TOTAL_INPUT_TOKENS = "total_input_tokens"
TOTAL_OUTPUT_TOKENS = "total_output_tokens"
USAGE_NOT_REPORTED = "usage_not_reported"
# -- written by call-llm on every model call (not with pricing=False: agent._chart.spend) ----------
LLM_COST = "llm_cost"  # the latest model call's usage as reported and cost, and the run's totals
BUDGET_STATE = "budget"  # the budget in force and the decisions taken on it (raised, stopped, wrapped up)
# -- written by wrap-up and final ---------------------------------------------------------
WRAP_UP_ASKED = "wrap_up_asked"
CONVERSATION = "conversation"  # seed of a conversation turn: where the loaded messages came from
FINAL_CONTENT = "final_content"
CONTEXT_INJECTED = "context_injected"  # what this model call was sent besides history (agent._chart.context)
CONTEXT_DROPPED = "context_dropped"  # what was available to it but not sent, and why
# -- written by tool-calls when a sub-agent tool answered (agent._run.compose.agent_tool) ----
SUB_AGENTS = "sub_agents"
# -- written by handoff (only with handoffs: agent._chart.handoff) -------------------------
HANDOFFS = "handoffs"
HANDOFF_PAUSED = "handoff_paused"  # the receiving agent paused: who, its checkpoint, the row so far
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


_WHAT = "agent checkpoint"


def _refuse(problem: str, path: str) -> CheckpointError:
    return CheckpointError(f"Invalid {_WHAT}: {problem} @ {path}", path=path)


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
    args: dict[str, Any]
    request_id: str
    position: dict[str, Any] | None = None
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
        """Read the state value back (untrusted) through the one codec
        (``flowchart.lowlevel.structure_untrusted``): ``CheckpointError`` naming the bad field.
        ``ask_index`` and ``middleware`` are an ask's, required there and refused elsewhere."""
        paused = structure_untrusted(_CONVERTER, data, PausedCall, what=_WHAT, path=path)
        for name in ("ask_index", "middleware"):
            if (paused.kind == "ask") != (getattr(paused, name) is not None):
                problem = "required key missing" if paused.kind == "ask" else f"only an ask pause has {name}"
                raise _refuse(problem, f"{path}.{name}")
        return paused


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
        """Read pause data back (untrusted) through the one codec: ``CheckpointError`` naming the
        bad field (the body's key is the kind's: ``check_in``, ``ask`` or ``data``)."""
        head = (
            {"kind": data["kind"]} if type(data) is dict and "kind" in data else data if type(data) is not dict else {}
        )
        kind = structure_untrusted(_CONVERTER, head, _PauseKind, what=_WHAT, path=path).kind
        wire = structure_untrusted(_CONVERTER, data, _PAUSE_WIRE[kind], what=_WHAT, path=path)
        return cls(kind, wire.tool_call_id, wire.tool_name, getattr(wire, PAUSE_BODY[kind]))


# -- the pause payloads as JSON: the one codec (flowchart.lowlevel.make_converter) -----------------
@attrs.frozen
class _PauseKind:
    kind: PauseKind


@attrs.frozen
class _CheckInPause:
    kind: PauseKind
    tool_call_id: str
    tool_name: str
    check_in: Any


@attrs.frozen
class _AskPause:
    kind: PauseKind
    tool_call_id: str
    tool_name: str
    ask: Any


@attrs.frozen
class _HumanPause:
    kind: PauseKind
    tool_call_id: str
    tool_name: str
    data: Any


_PAUSE_WIRE: dict[str, type[_CheckInPause | _AskPause | _HumanPause]] = {
    "check_in": _CheckInPause,
    "ask": _AskPause,
    "ask_human": _HumanPause,
}
_CONVERTER = make_converter()
_CONVERTER.register_structure_hook(
    PausedCall, every_key(PausedCall, _CONVERTER, optional=("position", "ask_index", "middleware", "index"))
)
for _wire in (_PauseKind, _CheckInPause, _AskPause, _HumanPause):
    _CONVERTER.register_structure_hook(_wire, every_key(_wire, _CONVERTER))
