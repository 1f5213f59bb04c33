"""The message chain on the real agent: input at seed, output at route."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace as NS
from typing import Any

import pytest
from agent_helpers import build, call, calls, stage_ids, weather_tool

from governance import MessageDeniedError, allow, ask, deny

CARD = "4111 1111 1111 1111"


def mask_cards(msg: Any) -> Any:
    """Mask 16-digit card numbers in any message."""
    masked = re.sub(r"\b\d{4}(?:[ -]?\d{4}){3}\b", "[card]", msg.content)
    return allow(masked, "masked a card number") if masked != msg.content else allow()


MASK = NS(name="mask-cards", on_message=mask_cards)


def with_messages(*links: Any) -> Any:
    """A builder hook adding message middleware ``links``."""
    return lambda builder: builder.message_middleware(*links)


def test_input_transform_is_what_the_model_history_and_commits_see() -> None:
    """A masked input: the model, history and user_message see the mask; only the ledger row keeps the raw."""
    agent, provider = build(["Refund started."], configure=with_messages(MASK))
    assert agent.run(f"Refund my card {CARD} please") == "Refund started."
    masked = "Refund my card [card] please"
    assert provider.requests[0].messages == [{"role": "user", "content": masked}]
    state = agent.last_snapshot().shared_state
    assert state["user_message"] == masked
    assert state["history"] == [{"role": "user", "content": masked}]
    log = [c.to_dict() for c in agent.last_snapshot().commit_log]
    raw_in = [op["path"][0] for c in log for op in c["trace"] if CARD in json.dumps(op["value"])]
    assert set(raw_in) == {"middleware_decisions"}


def test_input_transform_row() -> None:
    """The input row: moment and phase input, iteration 0, before/after exact."""
    agent, _ = build(["ok"], configure=with_messages(MASK))
    agent.run(f"card {CARD}")
    rows = agent.last_snapshot().shared_state["middleware_decisions"]
    assert rows[0] == {
        "middleware": "mask-cards",
        "moment": "input",
        "at": "message",
        "phase": "input",
        "iteration": 0,
        "outcome": "allow",
        "changed": True,
        "why": "masked a card number",
        "before": f"card {CARD}",
        "after": "card [card]",
    }


def test_input_pass_through_row_has_no_values() -> None:
    """allow() files a row with changed False and no why/before/after."""
    agent, _ = build(["ok"], configure=with_messages(MASK))
    agent.run("no card here")
    assert agent.last_snapshot().shared_state["middleware_decisions"] == [
        {
            "middleware": "mask-cards",
            "moment": "input",
            "at": "message",
            "phase": "input",
            "iteration": 0,
            "outcome": "allow",
            "changed": False,
        },
        {
            "middleware": "mask-cards",
            "moment": "output",
            "at": "message",
            "phase": "output",
            "iteration": 1,
            "outcome": "allow",
            "changed": False,
        },
    ]


def refuse_secrets(msg: Any) -> Any:
    """Deny input that mentions a password."""
    return deny("no passwords, please") if msg.phase == "input" and "password" in msg.content else allow()


def test_input_deny_raises_before_any_provider_call() -> None:
    """An input deny raises MessageDeniedError with the exact text; the provider is never called."""
    agent, provider = build(["never"], configure=with_messages(NS(name="no-secrets", on_message=refuse_secrets)))
    with pytest.raises(
        MessageDeniedError, match=r"^Message denied at 'input' by 'no-secrets': no passwords, please$"
    ) as caught:
        agent.run("my password is hunter2")
    assert provider.requests == []
    assert "hunter2" not in str(caught.value)
    assert (caught.value.phase, caught.value.middleware, caught.value.reason) == (
        "input",
        "no-secrets",
        "no passwords, please",
    )
    assert "hunter2" not in repr(caught.value.args)


def test_input_deny_commits_why_and_stops_at_seed() -> None:
    """An input deny commits message_denied_* at seed and the run stops there."""
    agent, _ = build(["never"], configure=with_messages(NS(name="no-secrets", on_message=refuse_secrets)))
    with pytest.raises(MessageDeniedError, match=r"^Message denied at 'input' by 'no-secrets': no passwords, please$"):
        agent.run("password")
    snap = agent.last_snapshot()
    assert stage_ids(agent) == ["seed#0"]
    state = snap.shared_state
    assert (state["message_denied_reason"], state["message_denied_phase"], state["message_denied_by"]) == (
        "no passwords, please",
        "input",
        "no-secrets",
    )
    assert state["middleware_decisions"][-1]["outcome"] == "deny"


def test_a_throwing_input_link_is_a_denial() -> None:
    """A message link that raises denies with ``middleware '<name>' threw: <message>``."""

    def broken(_msg: Any) -> Any:
        raise RuntimeError("regex exploded")

    agent, provider = build(["never"], configure=with_messages(NS(name="broken", on_message=broken)))
    with pytest.raises(
        MessageDeniedError, match=r"^Message denied at 'input' by 'broken': middleware 'broken' threw: regex exploded$"
    ):
        agent.run("hello")
    assert provider.requests == []


def test_an_ask_at_the_message_boundary_is_a_denial() -> None:
    """A message link that asks is a malfunction: denied with the exact text."""
    asker = NS(name="asker", on_message=lambda msg: ask("Is this OK?"))
    agent, _ = build(["never"], configure=with_messages(asker))
    with pytest.raises(MessageDeniedError) as caught:
        agent.run("hello")
    assert caught.value.reason == (
        "middleware 'asker' asked a person to decide about the input message, and there is no pause at the "
        "message boundary to carry that ask: Is this OK?. Ask at a TOOL moment (on_tool_call), where a pause "
        "exists, or decide here with allow()/deny()."
    )


def test_allowing_a_non_string_message_is_a_denial() -> None:
    """allow(<number>) at a message boundary is a denial naming the shape."""
    numeric = NS(name="numeric", on_message=lambda msg: allow(42, "numbers are nicer"))
    agent, _ = build(["never"], configure=with_messages(numeric))
    with pytest.raises(MessageDeniedError) as caught:
        agent.run("hello")
    assert caught.value.reason == (
        "middleware 'numeric' returned allow(a number) at the input message boundary, and a message is text. "
        "Return allow(some_string, why) to rewrite it, allow() to pass it through unchanged, or deny(reason) "
        "to refuse it."
    )


def test_input_links_run_in_order_and_the_first_deny_wins() -> None:
    """Each link sees the previous output; after a deny later links do not run."""
    seen: list[tuple[str, str]] = []

    def shout(msg: Any) -> Any:
        seen.append(("shout", msg.content))
        return allow(msg.content.upper(), "shouting")

    def refuse(msg: Any) -> Any:
        seen.append(("refuse", msg.content))
        return deny("too loud")

    def later(msg: Any) -> Any:
        seen.append(("later", msg.content))
        return allow()

    links = (
        NS(name="shout", on_message=shout),
        NS(name="refuse", on_message=refuse),
        NS(name="later", on_message=later),
    )
    agent, _ = build(["never"], configure=with_messages(*links))
    with pytest.raises(MessageDeniedError, match=r"^Message denied at 'input' by 'refuse': too loud$"):
        agent.run("hi")
    assert seen == [("shout", "hi"), ("refuse", "HI")]


def sign_output(msg: Any) -> Any:
    """Append a signature to the final answer."""
    return allow(msg.content + " — Support", "signed the answer") if msg.phase == "output" else allow()


def test_output_transform_is_what_run_returns() -> None:
    """The transformed answer is what run returns, what llm_latest_content and final_content hold."""
    agent, _ = build(
        [calls(call("c1", "weather", city="Paris")), "It is sunny."],
        weather_tool(),
        configure=with_messages(NS(name="sign", on_message=sign_output)),
    )
    assert agent.run("Weather?") == "It is sunny. — Support"
    state = agent.last_snapshot().shared_state
    assert state["llm_latest_content"] == "It is sunny. — Support"
    assert state["final_content"] == "It is sunny. — Support"
    assert state["middleware_decisions"][-1] == {
        "middleware": "sign",
        "moment": "output",
        "at": "message",
        "phase": "output",
        "iteration": 2,
        "outcome": "allow",
        "changed": True,
        "why": "signed the answer",
        "before": "It is sunny.",
        "after": "It is sunny. — Support",
    }


def test_output_rows_commit_in_the_route_commit() -> None:
    """The output chain's rows are written by the route decider (main state, not the final subflow)."""
    agent, _ = build(["It is sunny."], configure=with_messages(NS(name="sign", on_message=sign_output)))
    agent.run("Weather?")
    route = agent.last_snapshot().commit_log[2].to_dict()
    assert route["runtime_stage_id"] == "route#2"
    assert {op["path"][0] for op in route["trace"]} == {"middleware_decisions", "llm_latest_content"}


def test_output_chain_sees_the_history() -> None:
    """At output, msg.history is the conversation and msg.iteration the run's iteration."""
    seen: list[Any] = []

    def look(msg: Any) -> Any:
        seen.append((msg.phase, len(msg.history), msg.iteration))
        return allow()

    agent, _ = build(
        [calls(call("c1", "weather", city="P")), "ok"],
        weather_tool(),
        configure=with_messages(NS(name="look", on_message=look)),
    )
    agent.run("hi")
    assert seen == [("input", 0, 0), ("output", 3, 2)]


def test_output_chain_does_not_run_on_tool_rounds() -> None:
    """The output chain runs once, on the final answer only (not on a wrap-up)."""
    phases: list[str] = []

    def look(msg: Any) -> Any:
        phases.append(msg.phase)
        return allow()

    replies = [calls(call("c1", "weather", city="P")), calls(call("c2", "weather", city="P")), "final"]
    agent, _ = build(
        replies, weather_tool(), max_iterations=2, configure=with_messages(NS(name="look", on_message=look))
    )
    assert agent.run("hi") == "final"
    assert phases == ["input", "output"]


def withhold(msg: Any) -> Any:
    """Deny any answer that mentions an internal code."""
    return deny("internal code in the answer") if msg.phase == "output" and "X-42" in msg.content else allow()


def test_output_deny_raises_and_withholds_the_answer() -> None:
    """An output deny raises MessageDeniedError (phase output); the answer is not returned."""
    agent, provider = build(["Use code X-42."], configure=with_messages(NS(name="guard", on_message=withhold)))
    with pytest.raises(
        MessageDeniedError, match=r"^Message denied at 'output' by 'guard': internal code in the answer$"
    ) as caught:
        agent.run("What code?")
    assert "X-42" not in str(caught.value)
    assert len(provider.requests) == 1
    state = agent.last_snapshot().shared_state
    assert (state["message_denied_phase"], state["message_denied_by"]) == ("output", "guard")
    assert state["final_content"] == ""
    assert stage_ids(agent) == ["seed#0", "call-llm#1", "route#2"]
