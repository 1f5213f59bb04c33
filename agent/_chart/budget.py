"""``Budget``: the most a run (or a conversation) may spend on model calls, and what happens at it.

Laws:
- A budget names at least one limit — ``usd`` (dollars), ``tokens`` (input + output), ``calls``
  — each above 0; ``per`` is ``"run"`` or ``"conversation"``; ``on_exceed`` is ``"pause"`` (a
  person is asked to raise it), ``"stop"`` (``BudgetExceededError``) or ``"wrap_up"`` (one last
  call without tools). Anything else is refused when the ``Budget`` is made, naming the field.
- A person's raise is recorded in the state (``budget``: ``{"usd", "tokens", "calls"}`` as raised,
  and ``decisions``); ``BudgetState.apply`` gives the budget in force. Untrusted state is read
  fail-closed (a ``CheckpointError`` naming the path).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Literal

import attrs

from flowchart import CheckpointError

__all__ = ["Budget", "BudgetState", "Overrun"]

_LIMITS = ("usd", "tokens", "calls")


def _limit(field: str) -> Any:
    def check(_self: Any, _attribute: Any, value: Any) -> None:
        if value is None:
            return
        kinds: tuple[type, ...] = (int, float) if field == "usd" else (int,)
        if isinstance(value, bool) or not isinstance(value, kinds):
            what = "a number of US dollars" if field == "usd" else "a whole number"
            raise ValueError(f"Budget({field}=...) must be {what}, got {value!r}")
        if not float(value) > 0 or value != value or value == float("inf"):  # type: ignore[arg-type]
            raise ValueError(f"Budget({field}=...) must be above 0 and finite, got {value!r}")

    return check


def _one_of(field: str, allowed: tuple[str, ...]) -> Any:
    def check(_self: Any, _attribute: Any, value: Any) -> None:
        if value not in allowed:
            raise ValueError(f"Budget({field}=...) must be one of {', '.join(map(repr, allowed))}, got {value!r}")

    return check


@attrs.frozen
class Budget:
    """``Budget(usd=0.50, per="run", on_exceed="pause")``: checked before every model call."""

    usd: float | None = attrs.field(default=None, validator=_limit("usd"))
    tokens: int | None = attrs.field(default=None, validator=_limit("tokens"))
    calls: int | None = attrs.field(default=None, validator=_limit("calls"))
    per: Literal["run", "conversation"] = attrs.field(default="run", validator=_one_of("per", ("run", "conversation")))
    on_exceed: Literal["pause", "stop", "wrap_up"] = attrs.field(
        default="pause", validator=_one_of("on_exceed", ("pause", "stop", "wrap_up"))
    )

    def __attrs_post_init__(self) -> None:
        if self.usd is None and self.tokens is None and self.calls is None:
            raise ValueError("Budget(...) needs a limit: usd=, tokens= or calls=")

    def limits(self) -> dict[str, Any]:
        """The limits set, JSON-safe (``usd`` as a decimal string)."""
        out: dict[str, Any] = {}
        for field in _LIMITS:
            value = getattr(self, field)
            if value is not None:
                out[field] = str(Decimal(str(value))) if field == "usd" else value
        return out


@attrs.frozen
class Overrun:
    """The limit the next model call would break: ``spent`` so far plus ``estimate`` > ``limit``."""

    field: str
    spent: Any
    limit: Any
    estimate: Any
    per: str

    def describe(self) -> str:
        """``this run has spent $0.48 of $0.50`` (the question a person is asked)."""
        who = "this run" if self.per == "run" else "this conversation"
        if self.field == "usd":
            return f"{who} has spent ${_money(self.spent)} of ${_money(self.limit)}"
        noun = "tokens" if self.field == "tokens" else "model calls"
        return f"{who} has spent {self.spent} of {self.limit} {noun}"

    def suggestion(self) -> Any:
        """A raised limit that lets the next call through with room: double the limit."""
        return self.limit * 2

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form, for the record and the pause."""
        value = (lambda v: str(v)) if self.field == "usd" else (lambda v: int(v))
        return {
            "field": self.field,
            "spent": value(self.spent),
            "limit": value(self.limit),
            "estimate": value(self.estimate),
            "per": self.per,
        }


def _money(amount: Any) -> str:
    """Dollars as a person reads them: cents (``0.48``), or every digit when cents would hide them."""
    value = Decimal(str(amount))
    cents = value.quantize(Decimal("0.01"))
    if cents == value:
        return format(cents, "f")
    return format(value.normalize(), "f")


@attrs.frozen
class BudgetState:
    """The ``budget`` state key: the limits a person raised (``raised``) and every decision."""

    raised: dict[str, Any] = attrs.field(factory=dict)
    decisions: list[dict[str, Any]] = attrs.field(factory=list)

    def apply(self, budget: Budget) -> Budget:
        """``budget`` with the raised limits in force."""
        changes: dict[str, Any] = {k: (float(v) if k == "usd" else v) for k, v in self.raised.items()}
        return attrs.evolve(budget, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The state's shape."""
        return {"raised": dict(self.raised), "decisions": list(self.decisions)}

    @classmethod
    def from_dict(cls, data: Any, path: str = "$.state.budget") -> BudgetState:
        """Read the state key fail-closed (``CheckpointError`` naming the path)."""
        if not isinstance(data, dict) or not isinstance(data.get("raised"), dict):
            raise CheckpointError(f"Invalid agent checkpoint: expected {{'raised', 'decisions'}} @ {path}", path=path)
        raised = data["raised"]
        for key, value in raised.items():
            ok = key in _LIMITS and (
                (key == "usd" and isinstance(value, str) and _decimal_ok(value))
                or (key != "usd" and isinstance(value, int) and not isinstance(value, bool) and value > 0)
            )
            if not ok:
                raise CheckpointError(
                    f"Invalid agent checkpoint: bad raised limit {key!r}: {value!r} @ {path}.raised", path=path
                )
        decisions = data.get("decisions", [])
        if not isinstance(decisions, list):
            raise CheckpointError(f"Invalid agent checkpoint: expected a list @ {path}.decisions", path=path)
        return cls(dict(raised), list(decisions))


def _decimal_ok(text: str) -> bool:
    try:
        value = Decimal(text)
    except ArithmeticError:
        return False
    return value.is_finite() and value > 0


def check_budget_pause(state: Any) -> None:
    """Refuse (``CheckpointError``) a budget pause whose ``budget`` state is missing or malformed,
    or whose last decision is not the pause."""
    path = "$.state.budget"
    if "budget" not in state:
        raise CheckpointError(f"Invalid agent checkpoint: required key missing @ {path}", path=path)
    found = BudgetState.from_dict(state["budget"], path)
    if (
        not found.decisions
        or not isinstance(found.decisions[-1], dict)
        or found.decisions[-1].get("decision") != "paused"
    ):
        raise CheckpointError(f"Invalid agent checkpoint: the last budget decision is not a pause @ {path}", path=path)
    last = found.decisions[-1]
    if last.get("field") not in _LIMITS:
        raise CheckpointError(f"Invalid agent checkpoint: bad overrun field @ {path}.decisions", path=path)


def check_budget_answer(answer: Any) -> dict[str, Any]:
    """A budget pause's answer, checked before anything runs: ``{"approved": true|false}`` and, to
    raise it, new limits (``"usd"``, ``"tokens"``, ``"calls"``, each a valid ``Budget`` limit)."""
    if hasattr(answer, "to_dict") and callable(answer.to_dict):
        answer = answer.to_dict()
    if not isinstance(answer, dict) or not isinstance(answer.get("approved"), bool):
        raise ValueError(
            'a budget pause is answered with {"approved": true} (optionally the new limits, '
            f'{{"approved": true, "usd": 1.0}}) or {{"approved": false}}; got {answer!r}'
        )
    unknown = sorted(set(answer) - {"approved", "usd", "tokens", "calls", "by", "note", "request_id"})
    if unknown:
        raise ValueError(
            f"a budget pause's answer has unknown key {unknown[0]!r}; allowed: approved, usd, tokens, calls, by, note"
        )
    limits = {k: answer[k] for k in _LIMITS if k in answer}
    if limits:
        Budget(**limits)  # each limit checked as a Budget's (ValueError naming the field)
    return {k: v for k, v in answer.items() if k != "request_id"}
