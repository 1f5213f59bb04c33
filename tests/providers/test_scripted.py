"""The scripted and mock providers: replies by position, requests recorded, exhaustion, usage."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

from agent.providers import (
    LLMRequest,
    LLMResponse,
    ScriptError,
    ScriptExhaustedError,
    Token,
    ToolCall,
    Usage,
    mock,
    scripted,
)


def request(text: str = "hi", system: str | None = "sys", model: str = "mock", after: int = 0) -> LLMRequest:
    """A request holding ``after`` earlier assistant turns (its position in the conversation)."""
    messages: list[dict[str, Any]] = []
    for turn in range(after):
        messages += [{"role": "user", "content": f"q{turn}"}, {"role": "assistant", "content": f"a{turn}"}]
    messages.append({"role": "user", "content": text})
    return LLMRequest(system_prompt=system, messages=messages, tools=[], model=model)


def test_string_reply_is_the_model_text() -> None:
    """A string reply becomes the response content with finish_reason stop and no calls."""
    response = scripted(["Paris is sunny."]).complete(request())
    assert response == LLMResponse(
        content="Paris is sunny.",
        tool_calls=(),
        usage=Usage(input_tokens=1, output_tokens=3),
        finish_reason="stop",
        model="mock",
    )


def test_dict_reply_with_tool_calls_is_tool_use() -> None:
    """A dict reply's tool calls become ToolCall values and finish_reason is tool_use."""
    provider = scripted(
        [
            {
                "content": "",
                "tool_calls": [{"id": "c1", "name": "weather", "args": {"city": "Paris"}}],
            }
        ]
    )
    response = provider.complete(request())
    assert response.tool_calls == (ToolCall(id="c1", name="weather", args={"city": "Paris"}),)
    assert response.finish_reason == "tool_use"
    assert response.content == ""


def test_dict_reply_keys_are_optional() -> None:
    """``{}`` is an empty answer; a call without args gets ``{}``."""
    provider = scripted([{}, {"tool_calls": [{"id": "c1", "name": "now"}]}])
    assert provider.complete(request()).content == ""
    assert provider.complete(request(after=1)).tool_calls == (ToolCall("c1", "now", {}),)


def test_replies_play_by_position_and_requests_are_recorded() -> None:
    """A request after n assistant turns gets reply n+1; ``requests`` holds every request received."""
    provider = scripted(["one", "two"])
    first, second = request("a"), request("b", after=1)
    assert provider.complete(first).content == "one"
    assert provider.complete(second).content == "two"
    assert provider.requests == [first, second]


def test_a_fresh_provider_continues_the_script_where_the_conversation_is() -> None:
    """Not the call count: a new provider object asked after two assistant turns plays reply 3
    (a freshly built agent resuming a stored run continues the script), and asking the same
    position twice plays the same reply."""
    provider = scripted(["one", "two", "three"])
    assert provider.complete(request(after=2)).content == "three"
    assert provider.complete(request(after=2)).content == "three"
    assert provider.complete(request()).content == "one"


def test_complete_answers_synchronously() -> None:
    """complete() returns the response itself, not an awaitable (the benchmark's hot path)."""
    result = scripted(["x"]).complete(request())
    assert not inspect.isawaitable(result)
    assert isinstance(result, LLMResponse)


def test_exhaustion_says_how_many_were_scripted_and_which_request() -> None:
    """Running out raises, naming the number of replies and the 1-based request position."""
    provider = scripted(["one", "two"])
    provider.complete(request())
    provider.complete(request(after=1))
    with pytest.raises(
        ScriptExhaustedError,
        match=r"^scripted provider exhausted: 2 replies were scripted but request #3 asked "
        r"for another; add a reply to the script$",
    ):
        provider.complete(request(after=2))
    assert len(provider.requests) == 3  # the request that found the script empty is recorded


def test_exhaustion_with_one_reply_is_singular() -> None:
    """The exhaustion message reads naturally for a one-reply script."""
    provider = scripted(["only"])
    provider.complete(request())
    with pytest.raises(ScriptExhaustedError, match=r"1 reply was scripted but request #2"):
        provider.complete(request(after=1))


def test_empty_script_fails_on_first_request() -> None:
    """An empty script is allowed; its first request is #1 and raises."""
    with pytest.raises(ScriptExhaustedError, match=r"0 replies were scripted but request #1"):
        scripted([]).complete(request())


def test_usage_is_characters_over_four_rounded_down() -> None:
    """input = (system + message contents) // 4, output = content // 4; None content counts 0."""
    req = LLMRequest(
        system_prompt="abcdefg",  # 7
        messages=[
            {"role": "user", "content": "abc"},  # 3
            {"role": "assistant", "content": None, "tool_calls": []},  # 0
            {"role": "tool", "content": "12345", "tool_call_id": "c", "tool_name": "t"},  # 5
        ],
        tools=[],
        model="m",
    )
    assert scripted(["first", "hello"]).complete(req).usage == Usage(input_tokens=3, output_tokens=1)


def test_usage_without_system_prompt() -> None:
    """A missing system prompt counts as zero characters."""
    assert scripted(["x"]).complete(request("12345678", system=None)).usage == Usage(2, 0)


def test_llm_response_reply_is_played_verbatim() -> None:
    """An LLMResponse in the script keeps its own usage, finish reason and model."""
    canned = LLMResponse(content="cut", usage=Usage(0, 0), finish_reason="max_tokens")
    assert scripted([canned]).complete(request()) is canned


def test_script_is_copied_at_build_time() -> None:
    """Editing the caller's script after scripted() does not change what is played."""
    args = {"city": "Paris"}
    provider = scripted([{"tool_calls": [{"id": "c1", "name": "w", "args": args}]}])
    args["city"] = "Rome"
    assert provider.complete(request()).tool_calls[0].args == {"city": "Paris"}


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ("hello", r"^scripted\(\) takes a list of replies, got str; wrap a single reply in a list"),
        ([42], r"^scripted: reply #1 must be a string, a dict \{'content', 'tool_calls'\} or an "),
        (
            ["ok", {"toolCalls": []}],
            r"^scripted: reply #2 has unknown key 'toolCalls'; allowed keys: 'content', "
            r"'tool_calls'$",
        ),
        ([{"content": 3}], r"^scripted: reply #1 'content' must be a string, got int$"),
        ([{"tool_calls": "c1"}], r"^scripted: reply #1 'tool_calls' must be a list, got str$"),
        (
            [{"tool_calls": [{"name": "w", "args": {}}]}],
            r"^scripted: reply #1 tool_calls\[0\] needs 'id': a non-empty string, got None$",
        ),
        (
            [{"tool_calls": [{"id": "c1", "name": "w", "args": "city=Paris"}]}],
            r"^scripted: reply #1 tool_calls\[0\] 'args' must be a dict, got str$",
        ),
        (
            [{"tool_calls": [{"id": "c1", "name": "w", "arguments": {}}]}],
            r"^scripted: reply #1 tool_calls\[0\] has unknown key 'arguments'",
        ),
        (
            [{"tool_calls": [{"id": "c1", "name": "a"}, {"id": "c1", "name": "b"}]}],
            r"^scripted: reply #1 repeats tool call id 'c1'; ids must be unique$",
        ),
    ],
)
def test_bad_scripts_are_refused_up_front(replies: object, message: str) -> None:
    """A malformed script raises ScriptError at build time, naming the reply (1-based)."""
    with pytest.raises(ScriptError, match=message):
        scripted(replies)  # type: ignore[arg-type]


def test_mock_always_answers_the_same() -> None:
    """mock(reply) answers every request with the same text and never runs out."""
    provider = mock(reply="pong")
    answers = [provider.complete(request(str(i))).content for i in range(5)]
    assert answers == ["pong"] * 5
    assert len(provider.requests) == 5
    assert provider.name == "mock"


def test_mock_defaults_to_text() -> None:
    """mock() with no argument answers "text"."""
    assert mock().complete(request()).content == "text"


def test_mock_refuses_a_non_string_reply() -> None:
    """mock(reply=...) takes text only."""
    with pytest.raises(ScriptError, match=r"^mock\(reply=\.\.\.\) must be a string, got dict$"):
        mock(reply={"content": "x"})  # type: ignore[arg-type]


async def test_stream_yields_words_then_the_response() -> None:
    """stream() yields whitespace-preserving word tokens, then the same response complete gives."""
    events = [e async for e in scripted(["Paris is  sunny.\n"]).stream(request())]
    assert events[:-1] == [Token(0, "Paris "), Token(1, "is  "), Token(2, "sunny.\n")]
    final = events[-1]
    assert isinstance(final, LLMResponse)
    assert final.content == "Paris is  sunny.\n"


def test_providers_are_deterministic() -> None:
    """Two providers built from the same script answer identical requests identically."""
    script: list[str | dict[str, Any]] = [
        "a",
        {"tool_calls": [{"id": "c", "name": "t", "args": {"k": [1]}}]},
    ]
    one, two = scripted(script), scripted(script)
    assert [one.complete(request(after=i)) for i in range(len(script))] == [
        two.complete(request(after=i)) for i in range(len(script))
    ]


def test_a_played_reply_is_the_value_the_class_call_makes() -> None:
    """Round five: a played reply is made by filling the slots of the validated template (no
    frozen ``__init__``, no second run of the finish_reason validator); it is the value
    ``LLMResponse(...)`` makes — equal, same repr and hash — and it stays frozen."""
    import attrs

    provider = scripted(["done", {"content": "", "tool_calls": [{"id": "c1", "name": "add", "args": {"a": 1}}]}])
    first, second = provider.complete(request("abcd")), provider.complete(request("abcd", model="m2", after=1))
    calls = (ToolCall("c1", "add", {"a": 1}),)
    assert first == LLMResponse("done", (), Usage(1, 1), "stop", "mock", ())
    assert second == LLMResponse("", calls, Usage(2, 0), "tool_use", "m2", ())  # (3 + 2 + 2 + 4) // 4
    called = LLMResponse("done", (), Usage(1, 1), "stop", "mock", ())
    assert repr(first) == repr(called) and hash(first) == hash(called) and type(first) is LLMResponse
    assert hash(first.usage) == hash(Usage(1, 1)) and repr(first.usage) == repr(Usage(1, 1))
    with pytest.raises(TypeError, match="unhashable"):
        hash(second)  # the call's args dict, as for the class call
    with pytest.raises(attrs.exceptions.FrozenInstanceError, match="can't set attribute"):
        first.content = "other"  # type: ignore[misc]


def test_a_request_extending_the_last_one_at_the_same_position_gets_the_next_reply() -> None:
    """The wrap-up: the agent drops a reply whose calls it will not run and asks again with one more
    user message; that request holds no more assistant turns, yet it is the next turn of the script."""
    provider = scripted(["one", "two", "three"])
    dropped = request("q", after=1)
    assert provider.complete(dropped).content == "two"
    wrap_up = LLMRequest(
        system_prompt="sys", messages=[*dropped.messages, {"role": "user", "content": "wrap up"}], tools=[], model="m"
    )
    assert provider.complete(wrap_up).content == "three"
