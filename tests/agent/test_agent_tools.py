"""Tools on the real agent: results, errors, unknown tools, argument validation, definitions."""

from __future__ import annotations

from typing import Any

import pytest
from agent_helpers import CITY_SCHEMA, Counter, build, call, calls, refund_tool, tool_messages, weather_tool
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_values

from agent import ToolDefinitionError, define_tool
from agent.providers import LLMResponse, ToolCall


def run_one_call(tool: Any, tool_call: dict[str, Any]) -> list[str]:
    """Run one batch with ``tool_call`` and return what the model read for it."""
    agent, _ = build([calls(tool_call), "done"], tool)
    assert agent.run("go") == "done"
    return tool_messages(agent.last_snapshot().shared_state["history"])


def test_a_tool_that_raises_gives_the_model_its_message() -> None:
    """A raising tool: the model reads the error's message and the run goes on."""

    def broken(_args: dict[str, Any], _ctx: Any) -> str:
        raise RuntimeError("weather service is down")

    assert run_one_call(weather_tool(broken), call("c1", "weather", city="Paris")) == ["weather service is down"]


def test_a_tool_that_raises_without_message_gives_the_type_name() -> None:
    """A bare exception gives its type name, never an empty result."""

    def broken(_args: dict[str, Any], _ctx: Any) -> str:
        raise KeyError

    assert run_one_call(weather_tool(broken), call("c1", "weather", city="Paris")) == ["KeyError"]


def test_a_raising_tool_is_reported_as_an_error_event() -> None:
    """tool.end carries ``error: True`` for a tool that raised."""

    def broken(_args: dict[str, Any], _ctx: Any) -> str:
        raise ValueError("nope")

    ends: list[dict[str, Any]] = []
    agent, _ = build([calls(call("c1", "weather", city="X")), "done"], weather_tool(broken))
    agent.on("tool.end", lambda _n, p: ends.append(p))
    agent.run("go")
    assert ends == [{"tool_call_id": "c1", "tool_name": "weather", "result": "nope", "error": True}]


def test_unknown_tool() -> None:
    """A call to a tool the agent does not have reads ``Unknown tool: <name>``."""
    assert run_one_call(weather_tool(), call("c1", "teleport", to="Mars")) == ["Unknown tool: teleport"]


def test_non_string_results_are_json_encoded() -> None:
    """Dicts, lists and numbers reach the model as compact JSON."""
    body = Counter(lambda args: {"city": args["city"], "temp": 21, "tags": ["sunny", "é"]})
    assert run_one_call(weather_tool(body), call("c1", "weather", city="Paris")) == [
        '{"city":"Paris","temp":21,"tags":["sunny","é"]}'
    ]


def test_a_number_result_is_json() -> None:
    """An int result reads as its JSON text."""
    assert run_one_call(weather_tool(lambda a, c: 42), call("c1", "weather", city="P")) == ["42"]


def test_none_result_text() -> None:
    """A tool returning None reads ``(this tool returned no value)``."""
    assert run_one_call(weather_tool(lambda a, c: None), call("c1", "weather", city="P")) == [
        "(this tool returned no value)"
    ]


def test_tool_context() -> None:
    """execute(args, ctx) gets the call id, the iteration, the run id and the identity."""
    seen: list[Any] = []

    def body(args: dict[str, Any], ctx: Any) -> str:
        seen.append((ctx.tool_call_id, ctx.iteration, bool(ctx.run_id), ctx.identity))
        return "ok"

    agent, _ = build([calls(call("c1", "weather", city="P")), "done"], weather_tool(body))
    agent.run("go", identity={"user": "alice"})
    assert seen == [("c1", 1, True, {"user": "alice"})]


def test_the_tool_context_is_the_value_the_class_call_makes() -> None:
    """Round five: the context is made by filling its slots; it is ``ToolContext(...)`` — equal,
    same repr and hash (or the same refusal to hash an identity dict), frozen."""
    import attrs

    from agent import ToolContext

    seen: list[Any] = []
    agent, _ = build([calls(call("c1", "weather", city="P")), "done"], weather_tool(lambda a, c: seen.append(c)))
    agent.run("go")
    (made,) = seen
    called = ToolContext("c1", 1, made.run_id, None, step=made.step)
    assert made.step.startswith("tool-calls") and made.conversation is None and made.turn is None
    assert made == called and repr(made) == repr(called) and hash(made) == hash(called)
    assert type(made) is ToolContext and made.idempotency_key == f"{made.run_id}:c1"
    with pytest.raises(attrs.exceptions.FrozenInstanceError, match="can't set attribute"):
        made.iteration = 2  # type: ignore[misc]


def test_missing_required_argument_is_refused_and_the_tool_does_not_run() -> None:
    """A missing required key: the model reads the exact refusal, the tool never runs."""
    body = Counter()
    assert run_one_call(refund_tool(body), call("c1", "refund", order_id="A1")) == [
        "Invalid arguments for tool 'refund' — the call was not executed.\n"
        "- 'amount' is required but missing\n"
        "Fix the arguments to match the tool's input schema and call it again."
    ]
    assert body.runs == []


def test_wrong_types_are_refused_naming_each_problem() -> None:
    """Each wrong JSON type is named, in schema order; the tool does not run."""
    body = Counter()
    texts = run_one_call(refund_tool(body), call("c1", "refund", order_id=7, amount="ten"))
    assert texts == [
        "Invalid arguments for tool 'refund' — the call was not executed.\n"
        "- 'order_id': expected string, got integer\n"
        "- 'amount': expected number, got string\n"
        "Fix the arguments to match the tool's input schema and call it again."
    ]
    assert body.runs == []


def test_a_boolean_is_not_a_number() -> None:
    """``True`` for a number is refused (bool is not a JSON number)."""
    body = Counter()
    texts = run_one_call(refund_tool(body), call("c1", "refund", order_id="A", amount=True))
    assert "- 'amount': expected number, got boolean\n" in texts[0]
    assert body.runs == []


def test_nested_and_enum_validation() -> None:
    """Nested objects, arrays and enums are checked with their paths."""
    schema = {
        "type": "object",
        "properties": {
            "unit": {"enum": ["c", "f"]},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}, "required": ["lat"]},
            "days": {"type": "array", "items": {"type": "integer"}},
        },
    }
    body = Counter()
    tool = define_tool(name="forecast", description="Forecast.", input_schema=schema, execute=body)
    texts = run_one_call(tool, call("c1", "forecast", unit="k", where={}, days=[1, "2"]))
    assert texts == [
        "Invalid arguments for tool 'forecast' — the call was not executed.\n"
        '- \'unit\': expected one of ["c", "f"], got "k"\n'
        "- 'where.lat' is required but missing\n"
        "- 'days[1]': expected integer, got string\n"
        "Fix the arguments to match the tool's input schema and call it again."
    ]
    assert body.runs == []


def test_valid_args_run_the_tool() -> None:
    """Arguments that match the schema run the tool with exactly those args."""
    body = Counter(lambda a: "ok")
    assert run_one_call(refund_tool(body), call("c1", "refund", order_id="A", amount=5)) == ["ok"]
    assert body.runs == [{"order_id": "A", "amount": 5}]


def test_provider_args_error_does_not_run_the_tool() -> None:
    """A call whose arguments were not valid JSON: the model reads why, the tool never runs."""
    body = Counter()
    bad = LLMResponse(
        content="",
        tool_calls=(ToolCall(id="c1", name="weather", args={}, args_error="arguments are not valid JSON: '{city'"),),
        finish_reason="tool_use",
    )
    agent, _ = build([bad, "done"], weather_tool(body))
    agent.run("go")
    history = agent.last_snapshot().shared_state["history"]
    assert tool_messages(history) == [
        "Invalid arguments for tool 'weather' — the call was not executed.\n"
        "- the arguments are not valid JSON (arguments are not valid JSON: '{city')\n"
        "Fix the arguments to match the tool's input schema and call it again."
    ]
    assert body.runs == []
    assert history[1]["tool_calls"] == [{"id": "c1", "name": "weather", "args": {}}]


def test_every_call_of_a_batch_runs_in_order() -> None:
    """A batch of three calls runs in the model's order, each once."""
    body = Counter(lambda a: a["city"])
    agent, _ = build(
        [calls(*(call(f"c{i}", "weather", city=c) for i, c in enumerate(["A", "B", "C"]))), "done"],
        weather_tool(body),
    )
    agent.run("go")
    assert body.runs == [{"city": "A"}, {"city": "B"}, {"city": "C"}]
    assert tool_messages(agent.last_snapshot().shared_state["history"]) == ["A", "B", "C"]


def test_define_tool_refuses_a_bad_name() -> None:
    """A tool name outside [A-Za-z0-9_-]{1,64} is refused with the pattern."""
    with pytest.raises(
        ToolDefinitionError,
        match=r"^define_tool: name 'get weather' must be 1-64 characters of letters, digits, '_' or '-'$",
    ):
        define_tool(name="get weather", description="d", input_schema=CITY_SCHEMA, execute=print)


def test_define_tool_refuses_a_non_object_schema() -> None:
    """input_schema must be an object schema."""
    with pytest.raises(
        ToolDefinitionError,
        match=r"^define_tool\('w'\): input_schema must be a JSON Schema object "
        r'\(\{"type": "object", "properties": \{\.\.\.\}\}\)$',
    ):
        define_tool(name="w", description="d", input_schema={"type": "string"}, execute=print)


def test_define_tool_refuses_a_non_callable_execute() -> None:
    """execute must be callable."""
    with pytest.raises(
        ToolDefinitionError, match=r"^define_tool\('w'\): execute must be callable as execute\(args, ctx\)$"
    ):
        define_tool(name="w", description="d", input_schema=CITY_SCHEMA, execute="nope")  # type: ignore[arg-type]


def test_define_tool_refuses_an_empty_description() -> None:
    """The description must be non-empty."""
    with pytest.raises(ToolDefinitionError, match=r"^define_tool\('w'\): description must be a non-empty string$"):
        define_tool(name="w", description=" ", input_schema=CITY_SCHEMA, execute=print)


def test_define_tool_refuses_a_bad_check_in() -> None:
    """check_in must be None, "always" or a predicate."""
    with pytest.raises(
        ToolDefinitionError,
        match=r"^define_tool\('w'\): check_in=\.\.\.: expected None, \"always\" or a predicate\(args, ctx\) -> bool, "
        r"got 'sometimes'$",
    ):
        define_tool(name="w", description="d", input_schema=CITY_SCHEMA, execute=print, check_in="sometimes")


def test_every_tool_start_has_a_tool_end() -> None:
    """Calls that do not run (unknown tool, bad args) still close with tool.end, error True."""
    ends: list[tuple[str, bool]] = []
    batch = calls(call("c1", "teleport"), call("c2", "weather"), call("c3", "weather", city="P"))
    agent, _ = build([batch, "done"], weather_tool())
    agent.on("tool.end", lambda _n, p: ends.append((p["tool_call_id"], p["error"])))
    starts: list[str] = []
    agent.on("tool.start", lambda _n, p: starts.append(p["tool_call_id"]))
    agent.run("go")
    assert starts == ["c1", "c2", "c3"]
    assert ends == [("c1", True), ("c2", True), ("c3", False)]


def test_a_tool_that_changes_its_args_does_not_rewrite_the_record() -> None:
    """A tool gets its own copy of the args: mutating them (top level or nested) leaves
    the commit log, the history and the streamed tool call as the model asked."""
    import json

    from agent import tool

    @tool
    def tag(city: str, tags: list[str]) -> str:
        """Tag a city.

        Args:
            city: the city
            tags: the tags
        """
        tags.append("changed-by-the-tool")
        return city

    def rewriting(args: dict[str, Any], _ctx: Any) -> str:
        args["city"] = "Changed"
        return "ok"

    for chosen, tool_call in (
        (tag, call("c1", "tag", city="Paris", tags=["a"])),
        (weather_tool(rewriting), call("c1", "weather", city="Paris")),
    ):
        agent, _ = build([calls(tool_call), "done"], chosen)
        events = list(agent.stream("go"))
        record = json.dumps([c.to_dict() for c in agent.last_snapshot().commit_log])
        assert "Changed" not in record and "changed-by-the-tool" not in record
        (started,) = [e for e in events if e.kind == "tool_call"]
        assert started.args == tool_call["args"]


def test_a_property_with_only_type_and_description_is_still_type_checked() -> None:
    """The leaf fast path (a property schema of ``type`` plus wording keywords is one type test)
    refuses what the full check refused, with the same message; other keywords still apply."""
    from agent._tools.tools import validate_args

    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "number", "description": "first"},
            "b": {"type": "integer", "minimum": 3},
            "c": {"type": ["string", "null"]},
        },
        "required": ["a"],
    }
    assert validate_args({"a": 1.5, "b": 3, "c": None}, schema) == []
    assert validate_args({"a": "x", "b": 2, "c": 4}, schema) == [
        "'a': expected number, got string",
        "'b': must be at least 3, got 2",
        "'c': expected string or null, got integer",
    ]
    assert validate_args({"a": True}, schema) == ["'a': expected number, got boolean"]


class _Level(int):
    """An ``int`` subclass (as ``IntEnum`` members are): not of an exact type the fast path knows."""


@settings(max_examples=300, deadline=None)
@given(
    value=json_values(max_leaves=4) | st.builds(_Level, st.integers()) | st.just(True),
    name=st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", "decimal"]),
    wording=st.booleans(),
)
def test_the_exact_type_fast_path_judges_as_the_type_checks_do(value: Any, name: str, wording: bool) -> None:
    """Round five: a value of an exact type the ``type`` name accepts passes on one set lookup (no
    check function called), at the top and for a leaf property; every value is judged as
    ``_JSON_TYPES`` judges it (subclasses, ``True`` against numbers, an unknown name that passes)."""
    from agent._tools.tools import _JSON_TYPES, validate_args

    expected_ok = _JSON_TYPES[name](value) if name in _JSON_TYPES else True
    assert (validate_args(value, {"type": name}) == []) == expected_ok
    leaf: dict[str, Any] = {"type": name, "description": "d"} if wording else {"type": name}
    issues = validate_args({"p": value}, {"type": "object", "properties": {"p": leaf}})
    assert (issues == []) == expected_ok
    if not expected_ok:
        assert len(issues) == 1 and issues[0].startswith(f"'p': expected {name}, got ")
