"""The agent's view of a run in ``flowchart view``: the story first, then the chart.

Law: everything here is READ from the trace — the final (replayed) state's ``history``,
``middleware_decisions``, ``human_decisions`` (who answered each pause, as committed) and
``tool_errors`` (the exceptions of tools that raised), the initial state's
``paused_tool_call`` (a resumed run), the checkpoint's ``pause_data`` (a paused run), the
``call-llm`` stage's commits (every model reply, the final answer too) and the answer's
explanation (``agent._edge.explain.explain_answer``, read from the same record) — never
recomputed or guessed. A value the trace hides (``"REDACTED"``) or that has an unexpected
shape is reported as such, not repaired. ``written_at`` links a history message or ledger
row to the commit whose ``append`` added it or whose ``set`` first made the list that long
(``None`` when it came with the initial state or was written another way).

This module is the agent's ``flowchart.viewer.Panel`` (``PANEL``): the viewer knows no agent
state key. ``agent view`` passes it; so does ``flowchart view --panel agent.viewer_panel:PANEL``.
The page opens on the story — the question, the answer, why (the explanation), the model
calls in order with what each was sent and returned, the tools with their results, the
human decisions (who approved, when), the ledger, the cost (each model call's recorded usage
and cost and the totals, as ``agent why --cost`` words them); what the answering call was told besides
its messages (injected facts, skills, RAG chunks, recalled memory with their origins) and the
handoffs (``handoffs``), each collapsed and linked to its commit — and the chart and timeline
follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from typing import Any

import attrs

from agent._chart.conversation_turns import loaded_origin
from agent._chart.state import FINAL_CONTENT as FINAL
from agent._chart.state import HANDOFFS, HISTORY, LLM_COST, TOOL_ERRORS, USER_MESSAGE
from agent._chart.state import HUMAN_DECISIONS as HUMAN
from agent._chart.state import LLM_LATEST_CONTENT as REPLY
from agent._chart.state import LLM_LATEST_TOOL_CALLS as REPLY_CALLS
from agent._chart.state import MIDDLEWARE_DECISIONS as LEDGER
from agent._chart.state import PAUSED_TOOL_CALL as PAUSED
from agent._edge.cost_report import cost_of, report_lines
from agent._edge.explain import ExplainError, explain_answer, mounted_agent
from flowchart import Commit, Trace
from flowchart.lowlevel import apply_commit
from flowchart.viewer import Panel

CALL_STAGE = "call-llm"


def written_at(commits: Sequence[Commit], key: str, initial: Any) -> list[int | None]:
    """For each item of the list at ``key``, the commit whose ``append`` / ``set`` first made room for it."""
    size = len(initial) if isinstance(initial, list) else 0
    out: list[int | None] = [None] * size
    for commit in commits:
        for op in commit.trace:
            if op.path != (key,) or not isinstance(op.value, list):
                continue
            if op.verb == "append":
                out.extend([commit.idx] * len(op.value))
            elif op.verb == "set":
                out.extend([commit.idx] * max(0, len(op.value) - len(out)))
                del out[len(op.value) :]
    return out


def model_calls(history: list[Any], at: list[int | None]) -> list[dict[str, Any]]:
    """One entry per assistant message: the messages new since the last call, the reply, its tool results."""
    calls: list[dict[str, Any]] = []
    fresh: list[int] = []
    for i, message in enumerate(history):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            calls.append(
                {"message": i, "inputs": fresh, "seen": i, "results": [], "commit": at[i] if i < len(at) else None}
            )
            fresh = []
        elif message.get("role") == "tool" and calls and _answers(calls[-1], history, message):
            calls[-1]["results"].append(i)
        else:
            fresh.append(i)
    return calls


def _asked_ids(message: Any) -> set[Any]:
    asked = message.get("tool_calls") if isinstance(message, dict) else None
    if not isinstance(asked, list):  # a trace is untrusted: any shape may come
        return set()
    return {c["id"] for c in asked if isinstance(c, dict) and isinstance(c.get("id"), (str, int))}


def with_unlisted_replies(
    calls: list[dict[str, Any]], history: list[Any], commits: Sequence[Commit]
) -> list[dict[str, Any]]:
    """``calls`` plus each model reply of this log no history message holds (a final answer has none).

    A model reply is a commit of the ``call-llm`` stage (the reply is the ``llm_latest_content``
    it set, ``None`` when it set none); it is listed in ``history``
    when an assistant message there asked for the same tool call ids. An unlisted reply
    becomes a call with ``message`` ``None`` and its ``answer`` (and ``tool_calls``) as
    committed; calls are ordered by the commit that wrote them, earlier runs' first.
    """
    listed = {i for call in calls for i in _asked_ids(history[call["message"]])}
    said = [history[c["message"]].get("content") for c in calls if c["commit"] is not None]
    extra = []
    for commit in commits:
        ops = {op.path: op.value for op in commit.trace if op.verb == "set" and len(op.path) == 1}
        if commit.stage_id != CALL_STAGE:
            continue
        asked = ops.get((REPLY_CALLS,))
        ids = _asked_ids({"tool_calls": asked})
        if (ids and ids <= listed) or (not ids and ops.get((REPLY,)) in said):
            continue
        extra.append(
            {
                "message": None,
                "inputs": [],
                "seen": None,
                "results": [],
                "commit": commit.idx,
                "answer": ops.get((REPLY,)),
                "tool_calls": asked if isinstance(asked, list) else [],
            }
        )
    if not extra:
        return calls
    return sorted([*calls, *extra], key=lambda call: (call["commit"] is not None, call["commit"] or 0))


def _this_run(call: dict[str, Any], loaded: set[int]) -> dict[str, Any]:
    """``call`` with the messages an earlier turn said taken out of what it was sent (counted
    in ``earlier``: the model was sent them, this run did not write them)."""
    inputs = [i for i in call["inputs"] if i not in loaded]
    return {**call, "inputs": inputs, "earlier": len(call["inputs"]) - len(inputs)}


def _answers(call: dict[str, Any], history: list[Any], message: dict[str, Any]) -> bool:
    asked = history[call["message"]].get("tool_calls")
    asked = asked if isinstance(asked, list) else []  # a trace is untrusted: any shape may come
    ids = [c.get("id") for c in asked if isinstance(c, dict)]
    return message.get("tool_call_id") in ids or not ids


def _check_in(pause: Any) -> dict[str, Any] | None:
    if isinstance(pause, dict) and isinstance(pause.get("check_in"), dict):
        return dict(pause["check_in"])
    return None


def _answer_to(rows: Any, at: list[int | None], paused: dict[str, Any]) -> tuple[Any, int | None]:
    """The ``human_decisions`` row (and its commit) that answered the pause ``paused`` describes."""
    if not isinstance(rows, list):
        return None, None
    for i in range(len(rows) - 1, -1, -1):
        row = rows[i]
        same_call = isinstance(row, dict) and row.get("tool_call_id") == paused.get("tool_call_id")
        if same_call and paused.get("request_id") in (None, row.get("request_id")):
            return row, at[i] if i < len(at) else None
    return None, None


def agent_panels(
    final_state: dict[str, Any],
    initial_state: dict[str, Any],
    commits: Sequence[Commit],
    pause_data: Any,
) -> dict[str, Any] | None:
    """The agent panels' payload, or ``None`` when the run is not an agent run."""
    if HISTORY not in final_state and LEDGER not in final_state and HUMAN not in final_state:
        return None
    out: dict[str, Any] = {"notes": []}
    history = final_state.get(HISTORY)
    if isinstance(history, list):
        at = written_at(commits, HISTORY, initial_state.get(HISTORY))
        out["history"] = history
        out["history_at"] = at
        calls = with_unlisted_replies(model_calls(history, at), history, commits)
        # a conversation turn's history starts with the earlier turns' messages (its seed loaded
        # them): they are shown in the history, never counted as this run's calls and tools
        loaded = [i for i in range(len(history)) if loaded_origin(final_state, i) is not None]
        if loaded:
            out["loaded"] = loaded
            calls = [_this_run(call, set(loaded)) for call in calls if call["message"] not in loaded]
        out["calls"] = calls
    elif HISTORY in final_state:
        out["notes"].append(f"history is not a list in this trace: {str(history)[:80]}")
    for key, name in ((LEDGER, "ledger"), (TOOL_ERRORS, "tool_errors"), (HUMAN, "decisions"), (HANDOFFS, "handoffs")):
        rows = final_state.get(key)
        if isinstance(rows, list):
            out[name] = rows
            out[f"{name}_at"] = written_at(commits, key, initial_state.get(key))
        elif key in final_state:
            out["notes"].append(f"{key} is not a list in this trace: {str(rows)[:80]}")
    if LLM_COST in final_state:  # where the money went: the lines agent why --cost prints
        found = cost_of(commits, initial_state)
        out["cost"] = {
            "lines": report_lines(found),
            "calls": [{"iteration": r["iteration"], "commit": r["commit"]} for r in found["calls"]],
        }
    human = final_state.get(HUMAN)
    human_at = out.get("decisions_at") or written_at(commits, HUMAN, initial_state.get(HUMAN))
    request = _check_in(pause_data)
    if request is not None:
        out["check_in"] = {"request": request, "status": "pending", "decision": None}
    elif isinstance(pause_data, dict) and isinstance(pause_data.get("ask"), dict):
        out["ask"] = dict(pause_data["ask"])
    elif isinstance(initial_state.get(PAUSED), dict):
        paused = initial_state[PAUSED]
        result = None
        if isinstance(history, list):
            result = next(
                (
                    m
                    for m in history
                    if isinstance(m, dict)
                    and m.get("role") == "tool"
                    and m.get("tool_call_id") == paused.get("tool_call_id")
                ),
                None,
            )
        decision, decision_at = _answer_to(human, human_at, paused)
        out["resumed"] = {"paused": paused, "decision": decision, "decision_at": decision_at, "result": result}
    return out


TITLE_CHARS = 60


def run_title(data: dict[str, Any]) -> str | None:
    """An agent run is named by its own question (cut): "Agent run: Hi, I was …" — a
    conversation turn by its message, not the conversation's first."""
    history = data.get("history")
    if not isinstance(history, list):
        return None
    question = data.get("question")
    if isinstance(question, str):
        text = " ".join(question.split())
        return "Agent run: " + (text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…")
    return "Agent run"


def _question_and_answer(final_state: dict[str, Any], history: Any) -> tuple[Any, Any]:
    """This run's question — its ``user_message``, else the first user message of its history —
    and its answer."""
    question = final_state.get(USER_MESSAGE)
    if question is None and isinstance(history, list):
        loaded = {i for i in range(len(history)) if loaded_origin(final_state, i) is not None}
        question = next(
            (
                m.get("content")
                for i, m in enumerate(history)
                if i not in loaded and isinstance(m, dict) and m.get("role") == "user"
            ),
            None,
        )
    return question, final_state.get(FINAL) or None  # "" until the run answers


def explanation(trace: Trace) -> dict[str, Any] | None:
    """The answer's explanation (``AnswerExplanation.to_dict`` plus its text), or ``None`` when
    the run made no model call (a paused run explains its latest call)."""
    try:
        explained = explain_answer(trace)
    except ExplainError:
        return None
    return {**explained.to_dict(), "text": explained.format()}


_AGENT_KEYS = frozenset((HISTORY, LEDGER, HUMAN))


def _touches_agent_keys(trace: Trace) -> bool:
    """Whether the final state can hold any key ``agent_panels`` looks for: the run started with
    one or some op wrote one (a key neither did cannot be in the replayed state)."""
    if not _AGENT_KEYS.isdisjoint(trace.initial_state):
        return True
    return any(op.path[0] in _AGENT_KEYS for commit in trace.commit_log for op in commit.trace)


def _mounted(trace: Trace) -> dict[str, Any] | None:
    """The panel of the agent a chart run mounted (``add_agent``): its subflow's story, every link
    pointing at the mount's commit (where the page shows the subflow's own log)."""
    found = mounted_agent(trace.commit_log, dict(trace.subflows))
    if found is None:
        return None
    rid, sub = found
    prefix = f"{sub.mount_id}/"
    commits = [
        attrs.evolve(c, stage_id=c.stage_id[len(prefix) :]) if c.stage_id.startswith(prefix) else c
        for c in sub.commit_log
    ]
    state = dict(sub.initial_state)
    for commit in commits:
        apply_commit(state, commit)
    data = agent_panels(state, dict(sub.initial_state), commits, None)
    if data is None:
        return None
    mount = next((c.idx for c in trace.commit_log if c.runtime_stage_id == rid), None)
    for key in [k for k in data if k.endswith("_at")]:
        data[key] = [mount if n is not None else None for n in data[key]]
    for call in [*data.get("calls", []), *data.get("cost", {}).get("calls", [])]:
        call["commit"] = mount if call.get("commit") is not None else None
    data["mount"] = rid
    data["question"], data["answer"] = _question_and_answer(state, state.get(HISTORY))
    data["explanation"] = explanation(trace)
    return data


def build(trace: Trace) -> dict[str, Any] | None:
    """The agent panel's data for ``trace``, or ``None`` when it is not an agent run (told
    without replaying the log when no op touches the agent's keys); a chart run that mounted an
    agent shows that agent's story."""
    if not _touches_agent_keys(trace):
        return _mounted(trace) if trace.subflows else None
    checkpoint = trace.checkpoint
    final = trace.final_state
    data = agent_panels(final, trace.initial_state, trace.commit_log, checkpoint.pause_data if checkpoint else None)
    if data is None:
        return None
    data["question"], data["answer"] = _question_and_answer(final, final.get(HISTORY))
    data["explanation"] = explanation(trace)
    return data


def _static(name: str) -> str:
    return resources.files("agent._edge").joinpath(name).read_text(encoding="utf-8")


PANEL = Panel(
    name="agent", build=build, script=_static("viewer_panel.js"), title=run_title, style=_static("viewer_panel.css")
)
"""The agent's viewer panel: ``write_page(trace, path, [PANEL])``."""

__all__ = [
    "PANEL",
    "agent_panels",
    "build",
    "explanation",
    "model_calls",
    "run_title",
    "with_unlisted_replies",
    "written_at",
]
