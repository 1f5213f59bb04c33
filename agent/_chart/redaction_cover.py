"""The agent's redaction covers every copy the agent itself makes of what the rule hides.

Law: the rule an agent records its runs under (``recorded_rule``) is the user's rule plus
the keys and fields where the agent repeats a value the rule hides under another name —
so hiding a value once hides it in every record of the run:

- a rule that hides ``user_message`` hides the run input's ``input_message`` (the message
  as the caller sent it: the stored input, the trace's ``run_input``, ``agent runs show``), and
  one that hides ``identity`` the input's ``input_identity``;
- a tool call's argument hidden in one place — ``fields`` ``args.<path>`` of
  ``llm_latest_tool_calls``, or ``tool_calls.args.<path>`` of ``history``, or the whole
  ``llm_latest_tool_calls`` key (every argument) — is hidden wherever the agent repeats a
  call's arguments: both of those keys, the paused call (``paused_tool_call.args``) and the
  human decisions answering it (``human_decisions`` rows' ``args``, ``before``, ``after``);
- a rule that hides ``user_message`` hides the users' messages in ``history`` (its
  ``[role=user].content``: each turn's message, as the model was sent it), and one that hides
  ``llm_latest_content`` the model's replies there (``[role=assistant].content``) and the reply
  a structured output refused, kept in ``output_schema_error.content``;
- a rule that hides the history's texts (``fields={"history": ["content"]}``) hides the texts
  the agent repeats from it: a tool error's ``message`` (``tool_errors``, the result the model
  read) and an ``ask_human`` reply (``human_decisions`` rows' ``answer``, the tool's result);
- the ledger (``middleware_decisions``) keeps what a middleware rewrote, ``before`` and
  ``after``: a message (the user's, the answer), a call's args, a tool's result. A rule that
  hides a text — ``user_message``, ``llm_latest_content``, ``final_content``, or the history's
  ``content`` — hides every row's ``before`` and ``after`` (a row's kind is not a path); one
  that hides only tool arguments hides them inside ``before`` and ``after``;
- what the agent repeats into its context and composition records (only for an agent that
  has context, memory, handoffs or sub-agent tools: ``composed``): a rule that hides the
  history's texts or any tool argument hides the text of every injected and dropped context
  row (``context_injected`` / ``context_dropped`` ``text``: a recalled memory item is what a
  ``remember`` call's argument said) and the sub-agent answers (``sub_agents`` ``answer``, the
  tool result the history holds); one that hides the answer (``llm_latest_content`` or
  ``final_content``) hides a handoff's ``answer`` (``handoffs``);
- an agent that hands off always hides the receiving agent's checkpoint a paused handoff holds
  (``handoff_paused.checkpoint``): it is the receiver's real state, kept for the resume only.

The live state, the checkpoint and what ``run`` returns keep the real values, as for any
rule. A rule that hides nothing of these is returned as it is (``None`` stays ``None``).
"""

from __future__ import annotations

from agent._chart.state import (
    CONTEXT_DROPPED,
    CONTEXT_INJECTED,
    FINAL_CONTENT,
    HANDOFF_PAUSED,
    HANDOFFS,
    HISTORY,
    HUMAN_DECISIONS,
    IDENTITY,
    INPUT_IDENTITY,
    INPUT_MESSAGE,
    LLM_LATEST_CONTENT,
    LLM_LATEST_TOOL_CALLS,
    MIDDLEWARE_DECISIONS,
    OUTPUT_SCHEMA_ERROR,
    PAUSED_TOOL_CALL,
    SUB_AGENTS,
    TOOL_ERRORS,
    USER_MESSAGE,
)
from flowchart import Redaction

_HELD = "checkpoint"
_CALL_ARGS = "args"
_HISTORY_ARGS = "tool_calls.args"
#: the history entries that repeat ``user_message`` and ``llm_latest_content``
_USER_TEXTS = "[role=user].content"
_MODEL_TEXTS = "[role=assistant].content"


def _argument_paths(rule: Redaction) -> list[str]:
    """The argument paths (``card``, ``card.num``; ``""`` for every argument) the rule hides."""
    if rule.hides(LLM_LATEST_TOOL_CALLS):
        return [""]
    found: list[str] = []
    for key, prefix in ((LLM_LATEST_TOOL_CALLS, _CALL_ARGS), (HISTORY, _HISTORY_ARGS)):
        for path in rule.fields.get(key, ()):
            if path == prefix:
                return [""]
            if path.startswith(prefix + "."):
                found.append(path[len(prefix) + 1 :])
    return sorted(set(found))


def _under(prefix: str, paths: list[str]) -> list[str]:
    return [prefix if not path else f"{prefix}.{path}" for path in paths]


def recorded_rule(rule: Redaction | None, composed: bool = False, handoffs: bool = False) -> Redaction | None:
    """``rule`` extended to the agent's own copies of what it hides (see the module law);
    ``composed``: the agent has context, memory, handoffs or sub-agent tools (their records are
    covered too; an agent without them records under the same rule as before); ``handoffs``:
    the agent hands off, so the receiver's checkpoint a paused handoff holds is hidden."""
    if handoffs:
        return _hold_hidden(recorded_rule(rule, composed))
    if rule is None or not rule.active:
        return rule
    keys = set(rule.keys)
    for state_key, input_key in ((USER_MESSAGE, INPUT_MESSAGE), (IDENTITY, INPUT_IDENTITY)):
        if rule.hides(state_key) and not rule.hides(input_key):
            keys.add(input_key)
    fields = {key: list(paths) for key, paths in rule.fields.items()}
    wanted: dict[str, list[str]] = {}
    arguments = _argument_paths(rule)
    if arguments:
        wanted = {
            LLM_LATEST_TOOL_CALLS: _under(_CALL_ARGS, arguments),
            HISTORY: _under(_HISTORY_ARGS, arguments),
            PAUSED_TOOL_CALL: _under(_CALL_ARGS, arguments),
            HUMAN_DECISIONS: [p for name in ("args", "before", "after") for p in _under(name, arguments)],
        }
    said = [path for key, path in ((USER_MESSAGE, _USER_TEXTS), (LLM_LATEST_CONTENT, _MODEL_TEXTS)) if rule.hides(key)]
    if said and "content" not in rule.fields.get(HISTORY, ()):  # the same texts, as history entries
        wanted.setdefault(HISTORY, []).extend(said)
    if rule.hides(LLM_LATEST_CONTENT):
        wanted[OUTPUT_SCHEMA_ERROR] = ["content"]
    history_texts = rule.hides(HISTORY) or "content" in rule.fields.get(HISTORY, ())
    if history_texts:
        wanted[TOOL_ERRORS] = ["message"]
        wanted.setdefault(HUMAN_DECISIONS, []).append("answer")
    if composed and (history_texts or arguments):
        wanted[CONTEXT_INJECTED] = ["text"]
        wanted[CONTEXT_DROPPED] = ["text"]
    if composed and history_texts:
        wanted[SUB_AGENTS] = ["answer"]
    if composed and (rule.hides(LLM_LATEST_CONTENT) or rule.hides(FINAL_CONTENT)):
        wanted[HANDOFFS] = ["answer"]
    texts = any(rule.hides(key) for key in (USER_MESSAGE, LLM_LATEST_CONTENT, FINAL_CONTENT))
    if texts or history_texts:
        wanted[MIDDLEWARE_DECISIONS] = ["before", "after"]
    elif arguments:
        wanted[MIDDLEWARE_DECISIONS] = [*_under("before", arguments), *_under("after", arguments)]
    for key, paths in wanted.items():
        if rule.hides(key):
            continue
        have = fields.setdefault(key, [])
        have.extend(path for path in paths if path not in have)
    if keys == rule.keys and fields == {key: list(paths) for key, paths in rule.fields.items()}:
        return rule
    return Redaction(keys=keys, patterns=rule.patterns, fields=fields)


def _hold_hidden(rule: Redaction | None) -> Redaction:
    """``rule`` hiding ``handoff_paused.checkpoint``: a receiving agent's checkpoint is its real
    state (what its own rule hides included) — resume plumbing, never a record's to show."""
    if rule is None:
        return Redaction(fields={HANDOFF_PAUSED: [_HELD]})
    fields = {key: list(paths) for key, paths in rule.fields.items()}
    held = fields.setdefault(HANDOFF_PAUSED, [])
    if _HELD not in held and not rule.hides(HANDOFF_PAUSED):
        held.append(_HELD)
    return Redaction(keys=rule.keys, patterns=rule.patterns, fields=fields)


__all__ = ["recorded_rule"]
