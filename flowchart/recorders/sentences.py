"""The narrative's sentence templates, one function per kind of entry.

The law: every sentence the narrative writes is worded here and nowhere else; each
function returns, character for character, the sentence footprintjs
9.24.0's narrative writes for the same facts (see ``tests/fixtures/footprintjs``).
Values arrive already summarised; only rule thresholds are rendered here, as
JavaScript's ``JSON.stringify`` would.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from flowchart._core.summary import js_json

__all__ = [
    "answer",
    "decision",
    "emit",
    "error",
    "fork",
    "loop",
    "mapped",
    "operation",
    "paused",
    "resumed",
    "selected",
    "stage",
    "step",
    "stopped",
    "subflow_entry",
    "subflow_exit",
    "subflow_input",
]

_CHECK = "\u2713"
_CROSS = "\u2717"


def stage(number: int, name: str, description: str | None, first: bool, passes: int) -> str:
    """``Stage N: ...`` — the first stage began, a revisited stage looped back, else next."""
    # each line in one string (no inner sentence joined to its prefix: this runs for every stage)
    if first:
        if description:
            return f"Stage {number}: The process began: {description}."
        return f"Stage {number}: The process began with {name}."
    if passes > 0:
        if description:
            return f"Stage {number}: Looped back: {description} (pass {passes})."
        return f"Stage {number}: Looped back to {name} (pass {passes})."
    if description:
        return f"Stage {number}: Next step: {description}."
    return f"Stage {number}: Next, it moved on to {name}."


def operation(
    kind: str, op: str, key: str, summary: str, include_values: bool = True, number: int | None = None
) -> str:
    """``Read k = v`` / ``Write k = v`` / ``Update k = v`` / ``Delete k``; with ``number``, the
    step's whole line, ``Step N: Write k = v`` (as :func:`step` words it, in one string)."""
    if op == "delete" and kind != "read":
        text = f"Delete {key}"
    else:
        if kind == "read":
            # footprintjs drops "= v" from a read whose summary is empty, not from a write
            show = include_values and summary != ""
            verb = "Read"
        else:
            show = include_values
            verb = "Update" if op == "update" else "Write"
        if number is not None:  # a stage's step: one string, not the operation and then its line
            return f"Step {number}: {verb} {key} = {summary}" if show else f"Step {number}: {verb} {key}"
        text = f"{verb} {key} = {summary}" if show else f"{verb} {key}"
    return text if number is None else step(number, text)


def _conditions(rule: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{c.get('key')} {c.get('actual_summary')} {c.get('op')} {js_json(c.get('threshold'))} "
        f"{_CHECK if c.get('result') else _CROSS}"
        for c in rule.get("conditions") or ()
    )


def _inputs(rule: Mapping[str, Any]) -> str:
    return ", ".join(f"{i.get('key')}={i.get('value_summary')}" for i in rule.get("inputs") or ())


def _label(rule: Mapping[str, Any]) -> str:
    label = rule.get("label")
    return f' "{label}"' if label else ""


def decision(
    chosen: str,
    description: str | None,
    rationale: str | None,
    evidence: Mapping[str, Any] | None,
) -> str:
    """``[Condition]: ...`` — the matched rule, the default fallback, or the plain choice."""
    if evidence:
        rules = evidence.get("rules") or ()
        matched = next((r for r in rules if r.get("matched")), None)
        if matched is not None:
            if matched.get("type") == "filter":
                body = (
                    f"It evaluated Rule {matched.get('rule_index')}{_label(matched)}: "
                    f"{_conditions(matched)}, and chose {chosen}."
                )
            else:
                # a rule that read nothing has no ": inputs" part (footprintjs prints ": ,")
                inputs = _inputs(matched)
                body = f"It examined{_label(matched)}{': ' + inputs if inputs else ''}, and chose {chosen}."
        else:
            errored = sum(1 for r in rules if "match_error" in r and r["match_error"] is not None)
            note = f" ({errored} rule{'s' if errored > 1 else ''} threw errors)" if errored else ""
            default_label = evidence.get("default_label")
            shown = f' "{default_label}"' if default_label else ""
            body = f"No rules matched{note}, fell back to default{shown}: {chosen}."
    elif description and rationale:
        body = f"It {description}: {rationale}, so it chose {chosen}."
    elif description:
        body = f"It {description} and chose {chosen}."
    elif rationale:
        body = f"A decision was made: {rationale}, so the path taken was {chosen}."
    else:
        body = f"A decision was made, and the path taken was {chosen}."
    return f"[Condition]: {body}"


def fork(children: Sequence[str]) -> str:
    """``[Parallel]: Forking into N parallel paths: a, b.`` (always "paths")."""
    return f"[Parallel]: Forking into {len(children)} parallel paths: {', '.join(children)}."


def mapped(name: str, count: int, failed: Sequence[int]) -> str:
    """``[Map]: Mapped Fetch over 12 items.`` — OURS: footprintjs has no map stage (docs/differences.md)."""
    noun = "item" if count == 1 else "items"
    text = f"[Map]: Mapped {name} over {count} {noun}"
    if failed:
        which = "item" if len(failed) == 1 else "items"
        text += f"; {which} {', '.join(map(str, failed))} failed"
    return text + "."


def selected(names: Sequence[str], total: int, evidence: Mapping[str, Any] | None) -> str:
    """``[Selected]: k of N paths selected ...``; with evidence each matched rule is shown."""
    if evidence:
        parts = []
        for rule in evidence.get("rules") or ():
            if not rule.get("matched"):
                continue
            detail = _conditions(rule) if rule.get("type") == "filter" else _inputs(rule)
            parts.append(f"{rule.get('branch')}{_label(rule)} ({detail})")
        return f"[Selected]: {len(names)} of {total} paths selected: {'; '.join(parts)}."
    return f"[Selected]: {len(names)} of {total} paths selected for execution: {', '.join(names)}."


def subflow_entry(name: str, description: str | None) -> str:
    """``Entering the X subflow.`` or ``Entering X: <description>.``."""
    return f"Entering {name}: {description}." if description else f"Entering the {name} subflow."


def subflow_exit(name: str) -> str:
    """``Exiting the X subflow.``."""
    return f"Exiting the {name} subflow."


def loop(target: str, iteration: int, description: str | None) -> str:
    """``On pass N through X.`` or ``On pass N: <description> again.``."""
    return f"On pass {iteration}: {description} again." if description else f"On pass {iteration} through {target}."


def retry(stage_name: str, attempt: int, attempts: int, error_type: str, message: str) -> str:
    """``[Retry]: retried X (attempt 2 of 3) after TimeoutError: <message>`` (no footprintjs
    counterpart: footprintjs has no retries)."""
    return f"[Retry]: retried {stage_name} (attempt {attempt} of {attempts}) after {error_type}: {message}"


def recovered(stage_name: str, error_type: str, message: str) -> str:
    """``Execution resumed at X after it failed with ValueError: <message>; its partial writes
    were discarded.`` — a failed run continued where it failed."""
    return (
        f"Execution resumed at {stage_name} after it failed with {error_type}: {message}; "
        "its partial writes were discarded."
    )


def error(stage_name: str, message: str) -> str:
    """``[Error]: An error occurred at X: <message>.``."""
    return f"[Error]: An error occurred at {stage_name}: {message}."


def step(number: int, text: str) -> str:
    """``Step N: <operation>`` (an operation with its step number)."""
    return f"Step {number}: {text}"


def subflow_input(key: str, summary: str, *, include_values: bool = True) -> str:
    """``Input: k = v`` — a key a subflow's input mapper handed in."""
    return f"Input: {key} = {summary}" if include_values else f"Input: {key}"


def emit(name: str, summary: str) -> str:
    """``[emit] name: payload``."""
    return f"[emit] {name}: {summary}"


def stopped(name: str) -> str:
    """``Execution stopped at X.``."""
    return f"Execution stopped at {name}."


def paused(name: str) -> str:
    """``Execution paused at X.``."""
    return f"Execution paused at {name}."


def resumed(name: str, has_input: bool) -> str:
    """``Execution resumed at X with input.`` / ``Execution resumed at X.``."""
    return f"Execution resumed at {name}{' with input.' if has_input else '.'}"


def answer(name: str) -> str:
    """``Recorded the answer at X.`` — a pausable's answer half (not in footprintjs)."""
    return f"Recorded the answer at {name}."
