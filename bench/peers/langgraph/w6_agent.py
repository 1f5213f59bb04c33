"""W6 — agent-shaped loop: seed → call_llm → route (edge) → tools → call_llm … → final (LangGraph).

The scripted mock LLM asks for one ``add`` tool call on turns 0..9 and answers on turn 10.
One iteration = call_llm + route + tools; a run = 10 iterations + the final call_llm/route/final.
Variant "plain dicts": dict messages appended with an ``operator.add`` reducer (footprintjs's data).
Variant "MessagesState": ``AIMessage``/``ToolMessage`` with ``add_messages`` (the usual idiom).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from bench.harness import Record, Settings, emit, record

TOOL_TURNS = 10
TOOLS = {"add": lambda a, b: a + b}


def mock_llm(turn: int) -> dict[str, Any]:
    """Deterministic reply for ``turn``: a tool call until turn 10, then an answer."""
    if turn < TOOL_TURNS:
        call = {"id": f"call_{turn}", "name": "add", "args": {"a": turn, "b": 1}}
        return {"role": "assistant", "content": "", "tool_calls": [call]}
    return {"role": "assistant", "content": f"done after {TOOL_TURNS} tool calls"}


class State(TypedDict, total=False):
    """Plain-dict agent state."""

    messages: Annotated[list[dict[str, Any]], operator.add]
    llm_calls: int
    answer: str


def build_dicts() -> Any:
    """The agent loop over plain dict messages."""

    def call_llm(s: State) -> dict[str, Any]:
        return {"messages": [mock_llm(s["llm_calls"])], "llm_calls": s["llm_calls"] + 1}

    def tools(s: State) -> dict[str, Any]:
        calls = s["messages"][-1]["tool_calls"]
        return {
            "messages": [
                {
                    "role": "tool",
                    "tool_call_id": tc["id"],
                    "content": str(TOOLS[tc["name"]](**tc["args"])),
                }
                for tc in calls
            ]
        }

    def route(s: State) -> str:
        return "tools" if s["messages"][-1].get("tool_calls") else "final"

    g = StateGraph(State)
    first = {"role": "user", "content": "add numbers ten times"}
    g.add_node("seed", lambda s: {"messages": [first], "llm_calls": 0})
    g.add_node("call_llm", call_llm)
    g.add_node("tools", tools)
    g.add_node("final", lambda s: {"answer": s["messages"][-1]["content"]})
    g.add_edge(START, "seed")
    g.add_edge("seed", "call_llm")
    g.add_conditional_edges("call_llm", route, ["tools", "final"])
    g.add_edge("tools", "call_llm")
    g.add_edge("final", END)
    return g.compile()


class MState(MessagesState, total=False):
    """MessagesState agent state."""

    llm_calls: int
    answer: str


def build_messages() -> Any:
    """The agent loop over langchain-core message objects."""

    def call_llm(s: MState) -> dict[str, Any]:
        m = mock_llm(s["llm_calls"])
        ai = AIMessage(content=m["content"], tool_calls=m.get("tool_calls", []))
        return {"messages": [ai], "llm_calls": s["llm_calls"] + 1}

    def tools(s: MState) -> dict[str, Any]:
        calls = s["messages"][-1].tool_calls  # type: ignore[attr-defined]
        return {
            "messages": [
                ToolMessage(content=str(TOOLS[tc["name"]](**tc["args"])), tool_call_id=tc["id"]) for tc in calls
            ]
        }

    def route(s: MState) -> str:
        return "tools" if s["messages"][-1].tool_calls else "final"  # type: ignore[attr-defined]

    g = StateGraph(MState)
    g.add_node("seed", lambda s: {"messages": [HumanMessage("add numbers ten times")], "llm_calls": 0})
    g.add_node("call_llm", call_llm)
    g.add_node("tools", tools)
    g.add_node("final", lambda s: {"answer": s["messages"][-1].content})
    g.add_edge(START, "seed")
    g.add_edge("seed", "call_llm")
    g.add_conditional_edges("call_llm", route, ["tools", "final"])
    g.add_edge("tools", "call_llm")
    g.add_edge("final", END)
    return g.compile()


def check(out: Any) -> None:
    """``llm_calls == 11``, 22 messages, a non-empty answer."""
    if out["llm_calls"] != TOOL_TURNS + 1 or len(out["messages"]) != 2 + 2 * TOOL_TURNS or not out.get("answer"):
        raise RuntimeError("W6 wrong result")


def main(quick: bool = False) -> list[Record]:
    """Emit the W6 rows: plain dicts and MessagesState."""
    cfg = Settings.once() if quick else Settings.from_env()
    out: list[Record] = []
    for variant, app in (
        ("agent loop, mock LLM (plain dicts)", build_dicts()),
        ("agent loop, mock LLM (MessagesState)", build_messages()),
    ):
        samples = cfg.bench(lambda app=app: check(app.invoke({})))
        emit(
            record("langgraph", "langgraph", "W6", variant, samples, per=TOOL_TURNS, unit="us/iter"),
            out,
        )
    return out


if __name__ == "__main__":
    main()
