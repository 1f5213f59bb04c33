"""governance — middleware chains, the decision ledger, and human check-in with receipts.

A middleware is a pure decision (``allow`` / ``deny`` / ``ask``); the chain drivers walk
the links and RETURN a verdict plus ledger rows; the agent chart commits the rows under
``middleware_decisions`` and pauses on an ask or a tripped check-in. Nothing here imports
``agent`` or touches a run's state. See ``docs/governance.md`` for the laws with examples.

``__all__`` is the user API (docs/api.md). The plumbing the agent runs the gates with
(chain runners, ledger-row and evidence builders, request ids, validators) lives in the
submodules and is imported from there (``from governance.chains import run_tool_chain``);
those names, imported below as ``name as name``, stay importable from here for code written
before the split, but they are not part of the public surface.
"""

from governance.chains import AskPolicy, ChainResult
from governance.chains import run_after_tool_chain as run_after_tool_chain
from governance.chains import run_message_chain as run_message_chain
from governance.chains import run_tool_chain as run_tool_chain
from governance.checkin import CheckInConfig, CheckInPredicateContext, CheckInRequest, MiddlewareAsk
from governance.checkin import ask_human_request_id as ask_human_request_id
from governance.checkin import ask_request_id as ask_request_id
from governance.checkin import build_check_in_request as build_check_in_request
from governance.checkin import build_middleware_ask as build_middleware_ask
from governance.checkin import check_in_request_id as check_in_request_id
from governance.checkin import frozen_copy as frozen_copy
from governance.checkin import history_for_check_in as history_for_check_in
from governance.checkin import resolve_check_in_config as resolve_check_in_config
from governance.checkin import should_check_in as should_check_in
from governance.checkin import validate_check_in_demand as validate_check_in_demand
from governance.decisions import CheckInDecision, check_in_approved, check_in_declined
from governance.decisions import declined_result as declined_result
from governance.decisions import is_check_in_decision as is_check_in_decision
from governance.decisions import require_decision as require_decision
from governance.decisions import verify_decision as verify_decision
from governance.errors import (
    CheckInConfigError,
    DecisionInputError,
    DecisionRequiredError,
    GovernanceError,
    MessageDeniedError,
    MiddlewareDefinitionError,
    OutcomeError,
    PermissionDefinitionError,
    ResumeDecisionError,
    WireFormatError,
)
from governance.evidence import (
    AssemblerInput,
    CheckInEvidence,
    ContextFrame,
    Trail,
    TrailCall,
    minimal_evidence,
    standard_evidence,
)
from governance.evidence import units_from_history as units_from_history
from governance.human import HUMAN_DECISIONS
from governance.human import call_text as call_text
from governance.human import decision_sentence as decision_sentence
from governance.human import human_decision_row as human_decision_row
from governance.human import human_reply_row as human_reply_row
from governance.human import pending_request as pending_request
from governance.human import tell_latest as tell_latest
from governance.ledger import LEDGER_KEY
from governance.ledger import answer_why as answer_why
from governance.ledger import ask_answer_row as ask_answer_row
from governance.ledger import ask_resumed_second_ask_reason as ask_resumed_second_ask_reason
from governance.ledger import event_payload as event_payload
from governance.ledger import message_row as message_row
from governance.ledger import tool_row as tool_row
from governance.middleware import MessageInfo, MessageMiddleware, ToolCallInfo, ToolMiddleware
from governance.middleware import validate_chain as validate_chain
from governance.middleware import validate_message_middleware as validate_message_middleware
from governance.middleware import validate_tool_middleware as validate_tool_middleware
from governance.outcomes import Allow, Ask, Deny, Outcome, allow, ask, deny
from governance.permissions import PermissionChecker, PermissionDecision, PermissionRequest, PermissionVerdict
from governance.permissions import evaluate_permission as evaluate_permission
from governance.permissions import validate_permission_checker as validate_permission_checker
from governance.scorer import ContextUnit, Driver, ScoreInput, lexical_driver_scorer

__all__ = [
    "HUMAN_DECISIONS",
    "LEDGER_KEY",
    "Allow",
    "Ask",
    "AskPolicy",
    "AssemblerInput",
    "ChainResult",
    "CheckInConfig",
    "CheckInConfigError",
    "CheckInDecision",
    "CheckInEvidence",
    "CheckInPredicateContext",
    "CheckInRequest",
    "ContextFrame",
    "ContextUnit",
    "DecisionInputError",
    "DecisionRequiredError",
    "Deny",
    "Driver",
    "GovernanceError",
    "MessageDeniedError",
    "MessageInfo",
    "MessageMiddleware",
    "MiddlewareAsk",
    "MiddlewareDefinitionError",
    "Outcome",
    "OutcomeError",
    "PermissionChecker",
    "PermissionDecision",
    "PermissionDefinitionError",
    "PermissionRequest",
    "PermissionVerdict",
    "ResumeDecisionError",
    "ScoreInput",
    "ToolCallInfo",
    "ToolMiddleware",
    "Trail",
    "TrailCall",
    "WireFormatError",
    "allow",
    "ask",
    "check_in_approved",
    "check_in_declined",
    "deny",
    "lexical_driver_scorer",
    "minimal_evidence",
    "standard_evidence",
]
