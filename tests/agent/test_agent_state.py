"""``agent/_chart/state.py``: the agent's state keys named once, and the pause payloads as values."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import build, call, calls, refund_tool, weather_tool
from hypothesis import given
from hypothesis import strategies as st

import agent._chart.state as state
from agent import Paused, ask_human
from agent._chart.state import PAUSED_TOOL_CALL, PauseData, PausedCall
from flowchart import CheckpointError
from governance import allow, ask

REPO = Path(__file__).resolve().parents[2]
KEYS = {v for n, v in vars(state).items() if n.isupper() and isinstance(v, str)}


def _paused(kind: str) -> Paused:
    """A real agent paused by a check-in, a middleware ask, or ask_human."""
    reply = calls(call("c1", "refund", order_id="A-1", amount=5))
    if kind == "check_in":
        agent, _ = build([reply, "done"], refund_tool(check_in="always"))
    elif kind == "ask":

        class Asker:
            name = "asker"

            def on_tool_call(self, info: Any) -> Any:
                return ask("ok?") if info.tool_name == "refund" else allow()

        agent, _ = build([reply, "done"], refund_tool(), configure=lambda b: b.tool_middleware(Asker()))
    else:
        agent, _ = build(
            [calls(call("c1", "weather", city="Paris")), "done"], weather_tool(lambda a, c: ask_human({"q": 1}))
        )
    out = agent.run("go")
    assert isinstance(out, Paused) and out.kind == kind
    return out


@pytest.mark.parametrize("kind", ["check_in", "ask", "ask_human"])
def test_the_payloads_read_back_and_write_the_same_bytes(kind: str) -> None:
    """``to_dict(from_dict(x))`` is ``x`` byte for byte (same keys, same order) for what a real pause wrote."""
    paused = _paused(kind)
    written = dict(paused.checkpoint.shared_state[PAUSED_TOOL_CALL])
    assert json.dumps(PausedCall.from_dict(written).to_dict()) == json.dumps(written)
    assert json.dumps(PauseData.from_dict(paused.pause_data).to_dict()) == json.dumps(paused.pause_data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("tool_name"), r"required key missing @ \$\.shared_state\.paused_tool_call\.tool_name"),
        (lambda d: d.update(kind="other"), r"expected one of 'check_in', 'ask', 'ask_human', got 'other' @ .*\.kind"),
        (lambda d: d.update(args=[1]), r"expected an object, got a list @ .*paused_tool_call\.args"),
        (lambda d: d.update(index=True), r"expected an integer, got a boolean @ .*paused_tool_call\.index"),
        (lambda d: d.update(ask_index="0"), r"expected an integer, got a string @ .*paused_tool_call\.ask_index"),
    ],
)
def test_a_bad_paused_call_is_refused_naming_the_field(change: Any, message: str) -> None:
    """``PausedCall.from_dict`` fails closed with a ``CheckpointError`` naming the field's path."""
    data = dict(_paused("ask").checkpoint.shared_state[PAUSED_TOOL_CALL])
    change(data)
    with pytest.raises(CheckpointError, match=message):
        PausedCall.from_dict(data)


def test_pause_data_without_its_body_is_refused() -> None:
    """A check-in pause without its request is refused, naming where the request belongs."""
    with pytest.raises(CheckpointError, match=r"required key missing @ \$\.pause_data\.check_in"):
        PauseData.from_dict({"kind": "check_in", "tool_call_id": "c1", "tool_name": "refund"})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "kind": st.sampled_from(["check_in", "ask", "ask_human", "x"]) | JSON,
        "tool_call_id": st.text(max_size=3) | JSON,
        "tool_name": st.text(max_size=3) | JSON,
        "args": st.dictionaries(st.text(max_size=3), JSON, max_size=2) | JSON,
        "request_id": st.text(max_size=3) | JSON,
        "position": st.dictionaries(st.text(max_size=3), JSON, max_size=2) | JSON,
        "ask_index": st.integers() | JSON,
        "middleware": st.text(max_size=3) | JSON,
        "index": st.integers() | JSON,
        "check_in": JSON,
        "ask": JSON,
        "data": JSON,
    },
)


@given(FIELDS | JSON)
def test_the_loaders_accept_or_refuse_never_crash(data: Any) -> None:
    """Any JSON either loads and writes back what it read, or is a ``CheckpointError`` (never another error)."""
    for loader in (PausedCall.from_dict, PauseData.from_dict):
        try:
            value = loader(data)
        except CheckpointError:
            continue
        out = value.to_dict()
        assert {k: out[k] for k in out} == {k: data[k] for k in out}


def _literal_keys(path: Path) -> list[str]:
    """State keys spelled as literals where state is read or written (subscripts, peek/raw_read, ``in``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        literal = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            if node.value.id in ("scope", "state", "parent", "sub_state", "shared_state"):
                literal = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("peek", "raw_read"):
            literal = node.args[1] if len(node.args) > 1 else None
        elif isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn):
            right = node.comparators[0]
            if isinstance(right, ast.Name) and right.id in ("scope", "state", "s", "parent"):
                literal = node.left
        if isinstance(literal, ast.Constant) and literal.value in KEYS:
            found.append(f"{path.name}:{node.lineno}: {literal.value!r}")
    return found


def test_no_agent_module_spells_a_state_key_as_a_literal() -> None:
    """Stages, dispatch, paused, durable, explain... read and write state through ``agent._chart.state``'s constants."""
    offenders = [hit for p in sorted((REPO / "agent").glob("*.py")) if p.name != "state.py" for hit in _literal_keys(p)]
    assert offenders == []


def test_a_paused_call_without_a_position_still_loads() -> None:
    """A checkpoint written before pauses recorded their position resumes as before (the key stays absent)."""
    data = dict(_paused("check_in").checkpoint.shared_state[PAUSED_TOOL_CALL])
    del data["position"]
    paused = PausedCall.from_dict(data)
    assert paused.position is None and json.dumps(paused.to_dict()) == json.dumps(data)
