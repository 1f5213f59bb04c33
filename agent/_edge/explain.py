"""``explain_answer``: why did the agent say this? The answer's provenance, in content.

Law: an explanation is read from the record alone — the commit log of a trace or a stored
run — never from a live agent, so it explains any run after the fact, in any process, and
shows exactly what the record shows (the run's redaction already applied: a redacted value
is quoted as ``REDACTED``, never the real text).

For one model call (the one whose reply became the final answer, or ``call=N``):
1. the call itself: its iteration, model and provider (when recorded), its usage (when the
   provider reported it);
2. what it was sent, message by message, each with its ORIGIN: the customer's message (and
   the input middleware that rewrote it), each assistant turn that asked for tools, each tool
   result (tool, args, call id, the after-tool middleware that changed it, the human decision
   that allowed or declined the call, a denial), an injected wrap-up instruction, the system
   prompt — each with a short snippet of its content;
   A message an earlier conversation turn said is labelled with that turn, its run id
   and the commit of that run that wrote it (``from_turn``/``from_run``/``from_commit``),
   so the answer is followed across turns into the earlier run's own record;
3. the decisions on the way (route choices with their rationale, denials, human answers);
4. optionally (``drivers=True``) the deterministic lexical Jaccard ranking of the sent
   messages by the words they share with the answer — the same scorer check-in uses.

5. what the call was TOLD besides its messages (``context_injected``, agent._chart.context):
   each injected fact, steering, instruction, skill, RAG chunk (with its source id) and
   memory item (with the run, conversation turn and commit that wrote it), and, with
   ``dropped=True``, what was available but not sent (``context_dropped``) and why;
6. an answer a handoff brought back: the receiving agent, the model's reason, its run; an
   answer of an agent mounted in a chart (``add_agent``): the mount, explained inside.
The driver ranking's scorer: ``"jaccard"`` (the check-in evidence's, agentfootprint's numbers)
or ``"containment"`` (the share of the answer's words a candidate holds: names the passage a
RAG answer restates, however short the question); by default containment when the call was
sent context, Jaccard otherwise.

Bookkeeping (iteration counters, token totals, ``llm_latest_*``) is never listed: the
explanation is about content. ``flowchart why`` keeps the key-level causal chain.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from agent._chart.config import WRAP_UP_INSTRUCTION
from agent._chart.conversation_turns import loaded_origin
from agent.errors import ExplainError
from flowchart import Commit, Record, ShownRecord, Trace, causal_chain
from flowchart.lowlevel import apply_commit
from governance import HUMAN_DECISIONS, LEDGER_KEY
from governance.human import call_text, decision_sentence
from governance.scorer import jaccard, tokens

SNIPPET = 90
"""Characters of content quoted per message (the rest is elided with ``…``)."""


@attrs.frozen
class SentMessage:
    """One message a model call was sent, with where it came from."""

    index: int
    role: str
    origin: str
    snippet: str
    details: tuple[str, ...] = ()
    tool_call_id: str | None = None
    score: float | None = None
    #: an earlier conversation turn's message: its turn, run and the commit of that run that wrote it
    from_turn: int | None = None
    from_run: str | None = None
    from_commit: int | None = None
    #: the commit of this run that put the message in the history (``tool-calls#4 (commit 5)``)
    commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``score`` only when drivers were ranked; ``from_*`` only for an
        earlier turn's message)."""
        out: dict[str, Any] = {"index": self.index, "role": self.role, "origin": self.origin, "snippet": self.snippet}
        if self.details:
            out["details"] = list(self.details)
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.score is not None:
            out["score"] = self.score
        if self.from_run is not None:
            out.update(from_turn=self.from_turn, from_run=self.from_run, from_commit=self.from_commit)
        return out


@attrs.frozen
class ModelCall:
    """One ``call-llm`` commit: which call, what it wrote."""

    number: int
    idx: int
    runtime_stage_id: str
    iteration: int | None
    model: str | None
    provider: str | None
    input_tokens: int | None
    output_tokens: int | None
    content: str
    tool_calls: tuple[str, ...]

    def headline(self, total: int) -> str:
        """``model call 3 of 3 (call-llm#8), iteration 3, model m via p, usage 80 in / 20 out``."""
        parts = [f"model call {self.number} of {total} ({self.runtime_stage_id})"]
        if self.iteration is not None:
            parts.append(f"iteration {self.iteration}")
        if self.model:
            parts.append(f"model {self.model}" + (f" via {self.provider}" if self.provider else ""))
        if self.input_tokens is not None and self.output_tokens is not None:
            parts.append(f"usage {self.input_tokens} in / {self.output_tokens} out")
        else:
            parts.append("usage not reported")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {
            "number": self.number,
            "idx": self.idx,
            "runtime_stage_id": self.runtime_stage_id,
            "iteration": self.iteration,
            "model": self.model,
            "provider": self.provider,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "content": self.content,
            "tool_calls": list(self.tool_calls),
        }


@attrs.frozen
class ContextItem:
    """One thing a model call was told besides its messages (an injection, a recalled item)."""

    index: int
    kind: str
    label: str
    snippet: str
    details: tuple[str, ...] = ()
    score: float | None = None
    text: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        out: dict[str, Any] = {"index": self.index, "kind": self.kind, "label": self.label, "snippet": self.snippet}
        if self.details:
            out["details"] = list(self.details)
        if self.score is not None:
            out["score"] = self.score
        return out


@attrs.frozen
class AnswerExplanation:
    """Why a model call said what it said: the call, what it was sent, the decisions."""

    run_id: str | None
    call: ModelCall
    calls: int
    is_final: bool
    answer: str
    sent: tuple[SentMessage, ...]
    decisions: tuple[str, ...]
    drivers: bool = False
    #: what the call was told besides its messages, and (``dropped=True``) what it was not
    context: tuple[ContextItem, ...] = ()
    dropped: tuple[str, ...] | None = None
    #: the answer came from a handoff: lines naming the receiving agent, reason and run
    handoff: tuple[str, ...] = ()
    #: the run explained is an agent mounted in a chart (``add_agent``): the mount
    mount: str | None = None
    #: out of the mount: the chart's stages the message it was sent was made from
    #: (``key ← Stage (rid)``), a mounted agent among them named with its model call
    mount_origin: tuple[str, ...] = ()

    def format(self) -> str:
        """The explanation as text (what ``agent why`` prints)."""
        what = "The answer" if self.is_final else f"Model call {self.call.number}"
        lines = [f"Inside the agent mounted at {self.mount}:"] if self.mount else []
        lines += [f"{what}: {quote(self.answer)}"]
        lines.extend(f"  {line}" for line in self.handoff)
        lines.append(f"  {'asked for by' if self.handoff else 'written by'} {self.call.headline(self.calls)}")
        lines.append(f"It was sent {len(self.sent)} message(s):")
        for msg in self.sent:
            score = f" [{msg.score:.3f}]" if msg.score is not None else ""
            lines.append(f"  {msg.index}. {msg.origin}{score}: {msg.snippet}")
            lines.extend(f"       {detail}" for detail in msg.details)
        if self.context:
            lines.append(f"It was told {len(self.context)} thing(s) in the system slot:")
            for item in self.context:
                score = f" [{item.score:.3f}]" if item.score is not None else ""
                lines.append(f"  c{item.index}. {item.label}{score}: {item.snippet}")
                lines.extend(f"       {detail}" for detail in item.details)
        if self.dropped is not None:
            lines.append(f"Available but not sent: {len(self.dropped) or 'nothing'}")
            lines.extend(f"  - {line}" for line in self.dropped)
        if self.mount_origin:
            lines.append(f"Out of the mount: the message {self.mount} sent was made from")
            lines.extend(f"  {line}" for line in self.mount_origin)
        if self.decisions:
            lines.append("Decisions on the way:")
            lines.extend(f"  - {line}" for line in self.decisions)
        if self.drivers:
            ranked = sorted((m for m in self.sent if m.score), key=lambda m: -(m.score or 0.0))
            told = sorted((c for c in self.context if c.score), key=lambda c: -(c.score or 0.0))
            if told and (not ranked or (told[0].score or 0.0) > (ranked[0].score or 0.0)):
                item = told[0]
                lines.append(f"Most likely driver: context c{item.index} ({item.label}), overlap {item.score:.3f}")
            elif ranked:
                top = ranked[0]
                lines.append(f"Most likely driver: message {top.index} ({top.origin}), overlap {top.score:.3f}")
                if top.commit is not None:
                    lines.append(f"  written at {top.commit}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form with stable keys."""
        return {
            "run_id": self.run_id,
            "call": self.call.to_dict(),
            "calls": self.calls,
            "is_final": self.is_final,
            "answer": self.answer,
            "sent": [m.to_dict() for m in self.sent],
            "decisions": list(self.decisions),
        } | self._extras()

    def _extras(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.context:
            out["context"] = [c.to_dict() for c in self.context]
        if self.dropped is not None:
            out["dropped"] = list(self.dropped)
        if self.handoff:
            out["handoff"] = list(self.handoff)
        if self.mount:
            out["mount"] = self.mount
        if self.mount_origin:
            out["mount_origin"] = list(self.mount_origin)
        return out


# -- text helpers -------------------------------------------------------------------------------
def snippet(value: Any, limit: int = SNIPPET) -> str:
    """A short quoted form of ``value`` (strings as-is, else compact JSON)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return quote(text, limit)


def quote(text: str, limit: int = SNIPPET) -> str:
    """``"text"`` cut at ``limit`` characters with ``…``, newlines folded."""
    flat = " ".join(text.split())
    return '"' + (flat if len(flat) <= limit else flat[: limit - 1] + "…") + '"'


# -- reading the record -------------------------------------------------------------------------
@attrs.frozen
class _Step:
    """A commit and the state after it (shared copy-on-write dicts: never mutated)."""

    commit: Commit
    before: dict[str, Any]
    after: dict[str, Any]


def _fold(log: Sequence[Commit], initial: dict[str, Any]) -> list[_Step]:
    state: dict[str, Any] = dict(initial)
    steps = []
    for commit in log:
        before = dict(state)
        apply_commit(state, commit)
        steps.append(_Step(commit, before, dict(state)))
    return steps


def _load(source: Any) -> tuple[str | None, list[Commit], dict[str, Any], dict[str, Any]]:
    """The run id, commit log and initial state of a ``Trace``, a trace path, a ``RunRecord`` or a
    ``RunResult`` (a resumed segment starts from the paused state: its ``initial_state``)."""
    if isinstance(source, str | Path):
        source = Trace.load(source)
    if isinstance(source, Trace):  # a file holds a shown record already
        return source.run_id, list(source.commit_log), dict(source.initial_state), dict(source.subflows)
    record: Record | ShownRecord
    if isinstance(source, Record | ShownRecord):
        record = source
    else:
        found = getattr(source, "record", None)
        if not isinstance(found, Record):
            raise TypeError(
                f"explain_answer takes a Trace, a trace file path, a Record, a stored RunRecord or a RunResult, "
                f"got {type(source).__name__}"
            )
        record = found
    # a resumed segment starts from the live paused state: shown as the run records it
    shown = record if isinstance(record, ShownRecord) else record.shown()
    return shown.run_id, list(shown.commits), dict(shown.initial_state), dict(shown.subflows)


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _model_calls(steps: Sequence[_Step]) -> list[tuple[_Step, ModelCall]]:
    calls: list[tuple[_Step, ModelCall]] = []
    for step in steps:
        if step.commit.stage_id != "call-llm":
            continue
        before, after = step.before, step.after
        used_in = _usage(before.get("total_input_tokens"), after.get("total_input_tokens"))
        used_out = _usage(before.get("total_output_tokens"), after.get("total_output_tokens"))
        written = {op.path[0] for op in step.commit.trace}
        if "total_input_tokens" not in written:
            used_in = used_out = None
        model = after.get("llm_model")
        model = model if isinstance(model, dict) else {}
        content = after.get("llm_latest_content")
        calls.append(
            (
                step,
                ModelCall(
                    number=len(calls) + 1,
                    idx=step.commit.idx,
                    runtime_stage_id=step.commit.runtime_stage_id,
                    iteration=_int(after.get("iteration")),
                    model=model.get("model"),
                    provider=model.get("provider"),
                    input_tokens=used_in,
                    output_tokens=used_out,
                    content=content if isinstance(content, str) else json.dumps(content),
                    tool_calls=tuple(
                        call_text(str(c.get("name")), c.get("args"))
                        for c in after.get("llm_latest_tool_calls") or ()
                        if isinstance(c, dict)
                    ),
                ),
            )
        )
    return calls


def _usage(before: Any, after: Any) -> int | None:
    b, a = _int(before), _int(after)
    return a - b if a is not None and b is not None else None


def _origins(steps: Sequence[_Step], initial: dict[str, Any]) -> list[_Step | None]:
    """For each history index, the step that first put a message there (``None``: it was in the
    state the trace starts from, e.g. the paused half of a resumed run)."""
    history = initial.get("history")
    origin: list[_Step | None] = [None] * (len(history) if isinstance(history, list) else 0)
    for step in steps:
        history = step.after.get("history")
        if isinstance(history, list):
            while len(origin) < len(history):
                origin.append(step)
            del origin[len(history) :]
    return origin


def _asking(history: Sequence[Any], position: int, call_id: str) -> tuple[int | None, dict[str, Any]]:
    """The assistant turn that asked for the tool result at ``position`` and its call: the
    NEAREST earlier one that names ``call_id`` (call ids repeat across turns: scripted providers
    and some servers say ``c1`` every time)."""
    for at in range(position - 1, -1, -1):
        message = history[at]
        if isinstance(message, dict) and message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and call.get("id") == call_id:
                    return at, call
    return None, {}


def _rows_between(key: str, first: _Step | None, last: _Step | None, state: dict[str, Any]) -> list[Any]:
    """The rows of the append-only list ``key`` committed from ``first`` through ``last`` (the
    asking turn's commit to the tool result's): the ones that belong to that call. Without both
    steps (a result loaded from an earlier turn) every row of ``state``."""
    if first is None or last is None:
        return list(_rows(state.get(key)))
    before = _rows(first.before.get(key))
    return list(_rows(last.after.get(key))[len(before) :])


def _human_for(decisions: Iterable[Any], call_id: str) -> list[dict[str, Any]]:
    found = []
    for row in decisions:
        if not isinstance(row, dict):
            continue
        if row.get("tool_call_id") == call_id:
            found.append(row)
    return found


def human_line(row: dict[str, Any]) -> str:
    """``approved by alice at <at> ("note")``; an edit, an ask's middleware or a reply noted."""
    if row.get("gate") == "ask_human":
        return f"a person answered {snippet(row.get('answer'), 60)}"
    verb = "approved" if row.get("approved") else "declined"
    text = f"{verb} by {row.get('by')}"
    if row.get("at"):
        text += f" at {row['at']}"
    if row.get("note"):
        text += f" ({quote(str(row['note']), 60)})"
    if row.get("gate") == "ask" and row.get("middleware"):
        text += f", asked by middleware {row['middleware']}"
    if "after" in row:
        text += f", args edited to {json.dumps(row['after'], ensure_ascii=False)}"
    return text


def _ledger_lines(rows: Iterable[Any], *, call_id: str | None = None, moment: str | None = None) -> list[str]:
    out = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        if call_id is not None and row.get("tool_call_id") != call_id:
            continue
        if moment is not None and row.get("moment") != moment:
            continue
        if row.get("outcome") == "allow" and not row.get("changed"):
            continue
        verb = {"allow": "changed by", "deny": "denied by", "ask": "asked by"}.get(str(row.get("outcome")), "by")
        why = f" ({row['why']})" if row.get("why") else ""
        out.append(f"{row.get('moment')} middleware: {verb} {row.get('middleware')}{why}")
    return out


def _describe(
    index: int,
    message: dict[str, Any],
    origins: Sequence[_Step | None],
    state: dict[str, Any],
    calls_by_idx: dict[int, int],
    history: Sequence[Any],
) -> SentMessage:
    origin = origins[index - 1]
    role = str(message.get("role"))
    content = message.get("content", "")
    ledger = _rows(state.get(LEDGER_KEY))
    seeded = origin.commit.stage_id == "seed" if origin is not None else index == 1
    if seeded and role == "user":
        return SentMessage(
            index, role, "the user's message", snippet(content), tuple(_ledger_lines(ledger, moment="input"))
        )
    if role == "user" and content == WRAP_UP_INSTRUCTION:
        return SentMessage(index, role, "wrap-up instruction (the iteration budget ran out)", snippet(content))
    if role == "assistant":
        asked = ", ".join(call_text(str(c.get("name")), c.get("args")) for c in message.get("tool_calls") or ())
        number = _asking_call(origin, calls_by_idx)
        who = f"model call {number}" if number else "the model"
        return SentMessage(index, role, f"{who} asked for {asked}" if asked else f"{who} replied", snippet(content))
    if role == "tool":
        call_id = message.get("tool_call_id")
        at, call = _asking(history, index - 1, str(call_id))
        asking = origins[at] if at is not None else None
        name = message.get("tool_name") or call.get("name") or "?"
        humans = _rows_between(HUMAN_DECISIONS, asking, origin, state)
        details = [human_line(row) for row in _human_for(humans, str(call_id))]
        details += _ledger_lines(_rows_between(LEDGER_KEY, asking, origin, state), call_id=str(call_id))
        details += [
            f"the answer of sub-agent {row.get('agent')!r}, its run {row.get('run_id')} "
            f"({row.get('model_calls')} model call(s); agent why {row.get('run_id')})"
            for row in _rows(state.get("sub_agents"))
            if isinstance(row, dict) and row.get("tool_call_id") == call_id
        ][:1]
        label = f"tool result of {call_text(str(name), call.get('args', {}))} [{call_id}]"
        return SentMessage(index, role, label, snippet(content), tuple(details), tool_call_id=str(call_id))
    where = origin.commit.runtime_stage_id if origin is not None else "before this trace"
    return SentMessage(index, role, f"{role} message from {where}", snippet(content))


def from_earlier_turn(sent: SentMessage, state: dict[str, Any], index: int) -> SentMessage:
    """``sent`` with its origin in an earlier conversation turn (run and commit), when the
    seed loaded it from there (the ``conversation`` record says so)."""
    found = loaded_origin(state, index)
    if found is None:
        return sent
    turn, run_id, idx = found
    origin = sent.origin.replace("model call", "that turn's model call")
    where = f"run {run_id}" + (f", commit {idx}" if idx is not None else "")
    return attrs.evolve(
        sent, origin=f"turn {turn}: {origin} ({where})", from_turn=turn, from_run=run_id, from_commit=idx
    )


def _asking_call(origin: _Step | None, calls_by_idx: dict[int, int]) -> int | None:
    """The number of the last model call committed before ``origin`` (the one that asked)."""
    if origin is None:
        return None
    earlier = [idx for idx in calls_by_idx if idx < origin.commit.idx]
    return calls_by_idx[max(earlier)] if earlier else None


def _decisions(steps: Sequence[_Step], upto: int) -> list[str]:
    """Route choices, human answers and denials committed at steps ``0..upto`` (positions)."""
    out: list[str] = []
    seen_humans = len(_rows(steps[0].before.get(HUMAN_DECISIONS))) if steps else 0
    for step in steps[: upto + 1]:
        decision = step.commit.decision
        if step.commit.stage_id == "route" and isinstance(decision, dict):
            out.append(f"{step.commit.runtime_stage_id}: chose {decision.get('chosen')} — {_rationale(decision)}")
        humans = _rows(step.after.get(HUMAN_DECISIONS))
        for row in humans[seen_humans:]:
            if isinstance(row, dict):
                sentence = decision_sentence(row) or human_line(row)
                when = f" (at {row['at']})" if row.get("at") else ""
                out.append(f"{step.commit.runtime_stage_id}: {sentence}{when}")
        seen_humans = max(seen_humans, len(humans))
    ledger = _rows(steps[min(upto, len(steps) - 1)].after.get(LEDGER_KEY)) if steps else []
    out += [f"{row.get('tool_name') or row.get('phase')}: {line}" for row, line in _denials(ledger)]
    return out


def _denials(rows: Iterable[Any]) -> list[tuple[dict[str, Any], str]]:
    return [
        (row, f"denied by {row.get('middleware')} ({row.get('why') or 'no reason given'})")
        for row in rows
        if isinstance(row, dict) and row.get("outcome") == "deny"
    ]


def _rows(value: Any) -> list[Any]:
    """A ledger kept in the state (``human_decisions``, ``middleware_decisions``): its rows, or none
    when a loaded record holds something else there (a trace or a stored row is untrusted)."""
    return value if isinstance(value, list) else []


def _rationale(decision: dict[str, Any]) -> str:
    evidence = decision.get("evidence")
    if not isinstance(evidence, dict):  # a loaded record's decision may hold anything
        return "default"
    rules = evidence.get("rules")
    for rule in rules if isinstance(rules, list) else ():
        if isinstance(rule, dict) and rule.get("matched"):
            return str(rule.get("label") or rule.get("branch"))
    return str(evidence.get("default_label") or "default")


def explain_answer(
    source: Any,
    *,
    call: int | None = None,
    drivers: bool = False,
    dropped: bool = False,
    scorer: str | None = None,
) -> AnswerExplanation:
    """Explain the final answer of the run in ``source`` (or model call ``call``, 1-based).

    ``source`` is a ``Trace``, a trace file path, a stored ``RunRecord`` (through
    ``record_trace``'s redaction when you pass its trace instead) or a ``RunResult``.
    ``dropped=True`` lists the context available to the call but not sent; ``scorer``
    (``"jaccard"`` or ``"containment"``) ranks the drivers (see the module notes).
    A chart run whose model calls are inside an agent mounted with ``add_agent`` is explained
    inside its last such mount.
    """
    if scorer not in (None, "jaccard", "containment"):
        raise ExplainError(f"scorer must be 'jaccard' or 'containment', got {scorer!r}")
    run_id, log, initial, subflows = _load(source)
    steps = _fold(log, initial)
    calls = _model_calls(steps)
    if not calls:
        inner = mounted_agent(log, subflows)
        if inner is None:
            raise ExplainError("the record holds no model call (no 'call-llm' commit): there is no answer to explain")
        mount, sub = inner
        # the mounted chart's stage ids carry the mount's path ("planner/call-llm"): read as the agent's own
        prefix = f"{getattr(sub, 'mount_id', '')}/"
        sub_log = [
            attrs.evolve(c, stage_id=c.stage_id[len(prefix) :]) if c.stage_id.startswith(prefix) else c
            for c in sub_commits(sub)
        ]
        sub_initial = dict(getattr(sub, "initial_state", {}) or {})
        explained = _explain(run_id, _fold(sub_log, sub_initial), sub_initial, call, drivers, dropped, scorer)
        return attrs.evolve(explained, mount=mount, mount_origin=mount_origin(log, subflows, initial, mount))
    return _explain(run_id, steps, initial, call, drivers, dropped, scorer)


def mount_origin(
    log: Sequence[Commit], subflows: dict[str, Any], initial: dict[str, Any], mount: str
) -> tuple[str, ...]:
    """Out of the mount ``mount``: the causal chain, in the chart's log, of each key its message
    function read (the mount commit's reads) — one ``key ← Stage (rid)`` line per commit, in
    the chain's order; a commit that is another mounted agent names its last model call (cross
    into it with ``agent why``/``flowchart why``)."""
    position = next((i for i, c in enumerate(log) if c.runtime_stage_id == mount), None)
    if position is None:
        return ()
    lines: list[str] = []
    seen: set[str] = set()
    for read in log[position].reads:
        chain = causal_chain(log[:position], read, initial=initial)
        if chain.root is None:
            lines.append(f"{read} ← the chart's initial state")
            continue
        for node in chain.nodes:
            if node.runtime_stage_id in seen:
                continue
            seen.add(node.runtime_stage_id)
            key = node.linked_by or read
            line = f"{key} ← {node.label}"
            sub = subflows.get(node.runtime_stage_id)
            calls = [c.runtime_stage_id for c in sub_commits(sub) if c.stage_id.endswith("/call-llm")] if sub else []
            if calls:
                line += f": the answer of the agent mounted there, its model call {calls[-1]}"
            lines.append(line)
    return tuple(lines)


def sub_commits(sub: Any) -> list[Commit]:
    """A subflow trace's commits (``commit_log``)."""
    return list(getattr(sub, "commit_log", ()) or ())


def mounted_agent(log: Sequence[Commit], subflows: dict[str, Any]) -> tuple[str, Any] | None:
    """(mount runtime id, subflow trace) of the last subflow whose log holds a model call."""
    found = None
    for key, sub in subflows.items():
        if "/" in key:  # a subflow inside the mount (the agent's own ``final``): not an agent run
            continue
        if any(c.stage_id == "call-llm" or c.stage_id.endswith("/call-llm") for c in sub_commits(sub)):
            rid = str(getattr(sub, "runtime_stage_id", key))
            order = next((c.idx for c in log if c.runtime_stage_id == rid), -1)
            if found is None or order >= found[0]:
                found = (order, rid, sub)
    return (found[1], found[2]) if found is not None else None


def _explain(
    run_id: str | None,
    steps: list[_Step],
    initial: dict[str, Any],
    call: int | None,
    drivers: bool,
    dropped: bool,
    scorer: str | None,
) -> AnswerExplanation:
    calls = _model_calls(steps)
    if not calls:
        raise ExplainError("the record holds no model call (no 'call-llm' commit): there is no answer to explain")
    final_state = steps[-1].after
    if call is None:
        step, chosen = calls[-1]
        answer_text = final_state.get("final_content") or chosen.content
        is_final = bool(final_state.get("final_content"))
    else:
        if not 1 <= call <= len(calls):
            made = len(calls)
            raise ExplainError(f"call {call} is out of range: the run made {made} model call(s) (1..{made})")
        step, chosen = calls[call - 1]
        answer_text, is_final = chosen.content, False
    history = step.before.get("history") or []
    origins = _origins(steps[: steps.index(step) + 1], initial)
    calls_by_idx = {s.commit.idx: c.number for s, c in calls}
    sent: list[SentMessage] = []
    prompt = final_state.get("system_prompt")
    if isinstance(prompt, str) and prompt:
        sent.append(SentMessage(0, "system", "the system prompt", snippet(prompt)))
    for index, message in enumerate(history):
        if isinstance(message, dict) and index < len(origins):
            described = _describe(index + 1, message, origins, final_state, calls_by_idx, history)
            origin = origins[index]
            if origin is not None:
                where = f"{origin.commit.runtime_stage_id} (commit {origin.commit.idx})"
                described = attrs.evolve(described, commit=where)
            sent.append(from_earlier_turn(described, final_state, index))
    context = _context_items(step)
    if drivers:
        rank = containment if (scorer or ("containment" if context else "jaccard")) == "containment" else jaccard
        answer_tokens = tokens(str(answer_text))
        texts = {0: prompt if isinstance(prompt, str) else ""}
        texts.update({i + 1: _text(m.get("content", "")) for i, m in enumerate(history) if isinstance(m, dict)})
        sent = [attrs.evolve(m, score=rank(answer_tokens, tokens(texts.get(m.index, "")))) for m in sent]
        context = [attrs.evolve(c, score=rank(answer_tokens, tokens(c.text))) for c in context]
    handoff = _handoff_lines(steps, final_state, str(answer_text)) if call is None else ()
    return AnswerExplanation(
        run_id=run_id,
        call=chosen,
        calls=len(calls),
        is_final=is_final,
        answer=str(answer_text),
        sent=tuple(sent),
        decisions=tuple(_decisions(steps, steps.index(step) if call is not None else len(steps) - 1)),
        drivers=drivers,
        context=tuple(context),
        dropped=tuple(_dropped_lines(step)) if dropped else None,
        handoff=handoff,
    )


def containment(answer: frozenset[str], candidate: frozenset[str]) -> float:
    """The share of the answer's words the candidate holds (``|a ∩ c| / |a|``; 0.0 for no words):
    the passage an answer restates scores high however long it is, a short question low."""
    return len(answer & candidate) / len(answer) if answer else 0.0


def _origin_line(origin: Any) -> str:
    """``written by run R, conversation 'c-1' turn 1, commit tool-calls#3 (tool call c1)``."""
    if not isinstance(origin, dict) or not origin:
        return "its origin was not recorded (written outside a run)"
    parts = [f"written by run {origin.get('run_id', '?')}"]
    if origin.get("conversation") is not None:
        parts.append(f"conversation {origin['conversation']!r} turn {origin.get('turn')}")
    if origin.get("commit") is not None:
        where = f"commit {origin['commit']}"
        if origin.get("tool_call_id") is not None:
            where += f" (tool call {origin['tool_call_id']})"
        parts.append(where)
    return ", ".join(parts)


def _context_items(step: _Step) -> list[ContextItem]:
    """What the call at ``step`` was told besides its messages (``context_injected`` after it)."""
    rows = step.after.get("context_injected")
    items: list[ContextItem] = []
    where = f"sent at {step.commit.runtime_stage_id} (commit {step.commit.idx})"
    for row in rows if isinstance(rows, list) else ():
        if not isinstance(row, dict):
            continue
        kind, text = str(row.get("kind")), row.get("text")
        text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
        details = [where] if kind != "memory" else [_origin_line(row.get("origin")), where]
        if kind == "memory":
            label = f"memory item {row.get('id')}"
        elif kind == "rag":
            score = row.get("score")
            label = f"RAG chunk {row.get('source') or '(no source id)'}" + (
                f" (retriever score {score})" if score is not None else ""
            )
        elif kind == "error":
            label = f"a failure of the {row.get('source') or 'context'}"
        else:
            label = f"{kind}{' ' + repr(row['name']) if row.get('name') else ''} ({row.get('trigger')})"
        items.append(ContextItem(len(items) + 1, kind, label, snippet(text), tuple(details), text=text))
    return items


def _dropped_lines(step: _Step) -> list[str]:
    rows = step.after.get("context_dropped")
    out = []
    for row in rows if isinstance(rows, list) else ():
        if isinstance(row, dict):
            kind = row.get("kind")
            what = (
                f"RAG chunk {row.get('source')}"
                if kind == "rag"
                else f"memory item {row.get('id')}"
                if kind == "memory"
                else str(kind)
            )
            out.append(f"{what} {snippet(row.get('text', ''), 60)}: {row.get('reason')}")
    return out


def _handoff_lines(steps: Sequence[_Step], final_state: dict[str, Any], answer: str) -> tuple[str, ...]:
    """When the answer is what a handoff brought back: who answered, why, where it is recorded."""
    rows = final_state.get("handoffs")
    if not isinstance(rows, list) or not rows or not isinstance(rows[-1], dict) or rows[-1].get("answer") != answer:
        return ()
    row = rows[-1]
    at = next((s.commit for s in reversed(steps) if s.commit.stage_id == "handoff"), None)
    where = f" at {at.runtime_stage_id} (commit {at.idx})" if at is not None else ""
    lines = [f"came from agent {row.get('to')!r} after a handoff{where}, reason {snippet(row.get('reason') or '')}"]
    sent = f"it was sent {row.get('messages_sent')} message(s)"
    if row.get("messages_left_out"):
        sent += f", {row['messages_left_out']} left out by the input_filter"
    lines.append(f"{sent}; its run: {row.get('run_id', '?')} (agent why {row.get('run_id', 'RUN')})")
    return tuple(lines)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
