"""``decide()`` and ``select()``: rule-based choices that leave evidence behind.

Laws (footprintjs's, in snake_case):
- ``decide``: rules are tried in order and the FIRST match wins; the evidence lists the
  rules evaluated up to and including the winner, then the chosen branch and the default.
- ``select``: EVERY rule is evaluated; each match selects its branch (once, in rule order).
- A filter rule ``{"key": {"op": threshold}}`` ANDs its conditions; ops are
  ``eq ne gt gte lt lte in not_in``; an unknown op or a missing key fails the condition;
  an EMPTY filter never matches (``{}`` is not a catch-all).
- A function rule ``{"when": callable}`` is called with the scope; the keys it reads are
  captured as ``inputs``; a rule that raises does not match and records ``match_error``.
- Values in evidence are summaries; redacted keys show ``"[REDACTED]"``.
Reads made by rules are ordinary scope reads, so they appear in the narrative and in the
stage's read set.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from flowchart._core.redaction import shown_summary
from flowchart._core.scope import Scope, ScopeObserver, transaction_of
from flowchart._core.values import NotJsonSafe, _text, copy_json

_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "gt": lambda a, b: a > b,
    "gte": lambda a, b: a >= b,
    "lt": lambda a, b: a < b,
    "lte": lambda a, b: a <= b,
    # membership needs a list threshold: a string threshold is not a set of characters
    "in": lambda a, b: isinstance(b, list | tuple) and a in b[:1000],
    "not_in": lambda a, b: isinstance(b, list | tuple) and a not in b[:1000],
}


@attrs.frozen
class Decision:
    """What ``decide()`` returns to a decider: the chosen ``branch`` id and its ``evidence``."""

    branch: str
    evidence: dict[str, Any]
    #: set by ``decide()`` alone: the evidence is plain JSON it built for the record (see ``_own``)
    _owned: bool = attrs.field(default=False, init=False, eq=False, repr=False)


@attrs.frozen
class Selection:
    """What ``select()`` returns to a selector: the chosen ``branches`` and the ``evidence``."""

    branches: tuple[str, ...]
    evidence: dict[str, Any]
    _owned: bool = attrs.field(default=False, init=False, eq=False, repr=False)


class _InputCapture:
    """Chains onto the transaction's observer to record what a function rule reads."""

    __slots__ = ("hides", "inner", "inputs")

    def __init__(self, inner: ScopeObserver | None, hides: Callable[[str], bool] | None) -> None:
        self.inner = inner
        self.hides = hides  # ``None``: nothing is hidden (no redaction on this run)
        self.inputs: dict[str, dict[str, Any]] = {}

    def read(self, key: str, value: Any) -> None:
        if key not in self.inputs:
            redacted = False if self.hides is None else self.hides(key)
            self.inputs[key] = {
                "key": key,
                "value_summary": shown_summary(redacted, value),
                "redacted": redacted,
            }
        if self.inner is not None:
            self.inner.read(key, value)

    def missing(self, key: str) -> None:
        if key not in self.inputs:
            redacted = False if self.hides is None else self.hides(key)
            self.inputs[key] = {"key": key, "value_summary": "undefined", "redacted": redacted}
        if self.inner is not None:
            self.inner.missing(key)

    def write(self, key: str, value: Any, operation: str) -> None:
        if self.inner is not None:
            self.inner.write(key, value, operation)


def _hides_nothing(_key: str) -> bool:
    return False


def _hides(scope: Scope) -> Callable[[str], bool]:
    hides = getattr(transaction_of(scope), "hides", None)
    return hides if callable(hides) else _hides_nothing


def _evaluate(scope: Scope, index: int, rule: Mapping[str, Any]) -> dict[str, Any]:
    if "then" not in rule or "when" not in rule:
        raise ValueError(f"rule {index} needs 'when' and 'then' keys, got {sorted(rule)}")
    when = rule["when"]
    label = rule.get("label")
    if callable(when):
        txn = transaction_of(scope)
        hides = getattr(txn, "hides", None)
        capture = _InputCapture(txn.observer, hides if callable(hides) else None)
        txn.observer = capture
        try:
            matched = bool(when(scope))
            error = None
        except Exception as exc:  # a rule that raises does not match; the error is evidence
            matched, error = False, f"{type(exc).__name__}: {exc}"
        finally:
            txn.observer = capture.inner
        entry: dict[str, Any] = {
            "type": "function",
            "rule_index": index,
            "branch": rule["then"],
            "matched": matched,
            "label": label,
            "inputs": list(capture.inputs.values()),
        }
        if error is not None:
            entry["match_error"] = error
        return entry
    entry = {"rule_index": index, "branch": rule["then"]}
    if not isinstance(when, Mapping):
        raise TypeError(f"rule {index}: 'when' must be a filter dict or a callable, got {type(when).__name__}")
    hides = _hides(scope)
    conditions = []
    for key, spec in when.items():
        if not isinstance(spec, Mapping):
            spec = {"eq": spec}
        for op, threshold in spec.items():
            present = key in scope
            actual = scope[key] if present else None
            redacted = hides(key)
            compare = _OPERATORS.get(op)
            try:
                result = bool(present and compare is not None and compare(actual, threshold))
            except TypeError:
                result = False
            # a key that is not there is footprintjs's ``undefined``, not ``null``
            shown = shown_summary(redacted, actual) if present or redacted else "undefined"
            conditions.append(
                {
                    "key": key,
                    "op": op,
                    "threshold": threshold,
                    "actual_summary": shown,
                    "result": result,
                    "redacted": redacted,
                }
            )
    matched = bool(conditions) and all(c["result"] for c in conditions)
    return {"type": "filter", **entry, "matched": matched, "label": label, "conditions": conditions}


def decide(scope: Scope, rules: Sequence[Mapping[str, Any]], default: str | Mapping[str, Any]) -> Decision:
    """Pick the first rule that matches; otherwise ``default``. Return it with evidence.

    ``default`` is a branch id, or ``{"branch": id, "label": text}`` to say why the
    fallback is taken (recorded as ``default_label``).
    """
    default_label = None
    if type(default) is dict or (type(default) is not str and isinstance(default, Mapping)):  # no ABC check for a dict
        default_label = default.get("label")
        default = str(default["branch"])
    evaluated = []
    chosen: str = default
    for index, rule in enumerate(rules):
        entry = _evaluate(scope, index, rule)
        evaluated.append(entry)
        if entry["matched"]:
            chosen = entry["branch"]
            break
    evidence: dict[str, Any] = {"rules": evaluated, "chosen": chosen, "default": default}
    if default_label is not None:
        evidence["default_label"] = default_label
    return _own(Decision(chosen, evidence), evaluated, (chosen, default), default_label)


def select(scope: Scope, rules: Sequence[Mapping[str, Any]]) -> Selection:
    """Pick every branch whose rule matches (rule order, no repeats). Return them with evidence."""
    evaluated = [_evaluate(scope, i, rule) for i, rule in enumerate(rules)]
    selected = tuple(dict.fromkeys(e["branch"] for e in evaluated if e["matched"]))
    return _own(Selection(selected, {"rules": evaluated, "selected": list(selected)}), evaluated, selected)


_Result = TypeVar("_Result", Decision, Selection)


def _own(result: _Result, evaluated: list[dict[str, Any]], ids: Sequence[Any], label: Any = None) -> _Result:
    """Mark ``result``'s evidence as the record's own when it is plain JSON already.

    The evidence is built here from fresh dicts and lists, summaries and scalars; only a
    few leaves come from the caller (branch ids, labels, a filter's keys and thresholds, an
    error message). When those are JSON-safe (a container threshold is copied now), the
    decider's commit keeps the evidence as it is instead of copying it again
    (``_engine/choices.decision_record``); anything else is left to that copy and its
    fallback, as before. A ``Decision`` made by hand is never marked.
    """
    # the texts are checked as they come (ASCII, the usual case, is one C call each; for a string,
    # ``is_json_safe`` is ``values._text``, called directly); every rule is still walked when one
    # is not, so the thresholds are copied as before
    plain = True
    for text in ids:
        if not (type(text) is str and (text.isascii() or _text(text))):
            plain = False
    if label is not None and not (type(label) is str and (label.isascii() or _text(label))):
        plain = False
    for rule in evaluated:
        branch, said = rule["branch"], rule["label"]
        if not (type(branch) is str and (branch.isascii() or _text(branch))):
            plain = False
        if said is not None and not (type(said) is str and (said.isascii() or _text(said))):
            plain = False
        if "match_error" in rule and not (type(rule["match_error"]) is str and _text(rule["match_error"])):
            plain = False
        for condition in rule.get("conditions", ()):
            key = condition["key"]
            if not (type(key) is str and (key.isascii() or _text(key))):
                plain = False
            threshold = condition["threshold"]
            if type(threshold) not in _PLAIN or (type(threshold) is float and not math.isfinite(threshold)):
                try:
                    condition["threshold"] = copy_json(threshold)
                except NotJsonSafe:
                    return result
            elif type(threshold) is str and not (threshold.isascii() or _text(threshold)):
                plain = False
            if type(condition["redacted"]) is not bool:
                return result
        for found in rule.get("inputs", ()):
            if type(found["redacted"]) is not bool:
                return result
    if plain:
        object.__setattr__(result, "_owned", True)
    return result


#: scalars a threshold may be as it is (a float only when finite)
_PLAIN = frozenset({str, int, float, bool, type(None)})
