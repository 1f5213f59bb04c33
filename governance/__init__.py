"""governance — middleware chains, the decision ledger, and human check-in with receipts.

A middleware is a pure decision (``allow`` / ``deny`` / ``ask``); the chain drivers walk
the links and RETURN a verdict plus ledger rows; the agent chart commits the rows under
``middleware_decisions`` and pauses on an ask or a tripped check-in. Nothing here imports
``agent`` or touches a run's state. See ``docs/governance.md`` for the laws with examples.

``__all__`` is the user API (docs/api.md), and the package's namespace holds nothing else
(``tests/test_public_api.py`` compares ``vars(governance)`` with it). The plumbing the agent
runs the gates with (chain runners, ledger-row and evidence builders, request ids,
validators) lives in the submodules and is imported from there
(``from governance.chains import run_tool_chain``).
"""

from governance.chains import AskPolicy, ChainResult
from governance.checkin import CheckInConfig, CheckInPredicateContext, CheckInRequest, MiddlewareAsk
from governance.decisions import CheckInDecision, check_in_approved, check_in_declined
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
from governance.human import HUMAN_DECISIONS
from governance.ledger import LEDGER_KEY
from governance.middleware import MessageInfo, MessageMiddleware, ToolCallInfo, ToolMiddleware
from governance.outcomes import Allow, Ask, Deny, Outcome, allow, ask, deny
from governance.permissions import PermissionChecker, PermissionDecision, PermissionRequest, PermissionVerdict
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
