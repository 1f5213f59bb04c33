"""Structured output on the scripted provider: schemas, validated answers, retries as commits,
``OutputSchemaError``, the stored failure, and nothing at all when no schema is set."""

from __future__ import annotations

import dataclasses
import enum
import json
import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest
from agent_helpers import call, calls, weather_tool
from hypothesis import given, settings
from hypothesis import strategies as st

from agent import Agent, AgentBuildError, AgentError, OutputSchemaError, Paused
from agent._chart.structured import answer_json, output_spec, parse_reply
from agent._tools.tools import validate_args
from agent.providers import OutputSchema, scripted
from flowchart.store import SqliteStore
from governance import check_in_approved

CITY_SCHEMA: dict[str, Any] = {
    "title": "city",
    "type": "object",
    "properties": {"name": {"type": "string"}, "population": {"type": "integer", "minimum": 0}},
    "required": ["name", "population"],
}
PARIS = '{"name": "Paris", "population": 2100000}'


@dataclasses.dataclass
class City:
    name: str
    population: int


class Size(enum.Enum):
    SMALL = "small"
    BIG = "big"


@attrs.frozen
class Place:
    name: str
    size: Size
    tags: list[str] = attrs.field(factory=list)


def _agent(replies: list[Any], schema: Any, **options: Any) -> tuple[Agent, Any]:
    provider = scripted(replies)
    return Agent.create(provider=provider, output_schema=schema, **options).build(), provider


def test_a_json_schema_dict_returns_the_validated_dict() -> None:
    """With a dict schema, ``run`` returns the parsed reply; the spec holds the schema, which the
    scripted provider (no native structured output) reads in its prompt, never on the request."""
    agent, provider = _agent([PARIS], CITY_SCHEMA)
    assert agent.run("Biggest French city?") == {"name": "Paris", "population": 2100000}
    assert agent.config.output.request == OutputSchema("city", CITY_SCHEMA, strict=False)
    assert provider.requests[0].output_schema is None and provider.requests[0].output_form == "instruction"


def test_the_scripted_provider_is_told_the_schema_in_the_system_prompt() -> None:
    """A provider without native structured output gets the instruction after the system prompt,
    and the seed records the prompt as sent."""
    provider = scripted([PARIS])
    agent = Agent.create(provider=provider, output_schema=CITY_SCHEMA).system("Be exact.").build()
    agent.run("Biggest French city?")
    expected = (
        "Be exact.\n\nGive your final answer as one JSON value, with no other text and no code fence, "
        "matching this JSON Schema (city):\n" + json.dumps(CITY_SCHEMA, sort_keys=True)
    )
    assert provider.requests[0].system_prompt == expected
    assert agent.last_snapshot().shared_state["system_prompt"] == expected


def test_a_dataclass_returns_an_instance() -> None:
    """A dataclass schema comes from its hints; the answer is an instance of it."""
    agent, _ = _agent([PARIS], City)
    assert agent.run("Biggest French city?") == City("Paris", 2100000)
    assert agent.config.output.request == OutputSchema(
        "City",
        {
            "type": "object",
            "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
            "required": ["name", "population"],
        },
    )


def test_an_attrs_class_returns_an_instance_with_enums_and_defaults() -> None:
    """An attrs class with an Enum field and a defaulted list: the instance has real members."""
    agent, _ = _agent(['{"name": "Oslo", "size": "small"}'], Place)
    assert agent.run("A small capital?") == Place("Oslo", Size.SMALL)


def test_a_pydantic_model_returns_an_instance_and_its_errors_go_back() -> None:
    """A pydantic model (pydantic is installed in this venv; never a dependency) validates itself:
    its refusal is what the model reads on the retry."""
    pydantic = pytest.importorskip("pydantic")

    class Town(pydantic.BaseModel):  # type: ignore[name-defined,misc]
        name: str
        population: int

    agent, provider = _agent(['{"name": "Lyon", "population": "many"}', '{"name": "Lyon", "population": 520000}'], Town)
    answer = agent.run("Third French city?")
    assert isinstance(answer, Town) and answer.population == 520000
    assert answer_json(answer) == {"name": "Lyon", "population": 520000}
    assert agent.config.output.schema == Town.model_json_schema()
    assert Town.__name__ in provider.requests[0].system_prompt
    (row,) = agent.last_snapshot().shared_state["output_schema_retries"]
    assert row["retry"] == 1 and row["errors"][0].startswith("'population': Input should be a valid integer")


def test_an_invalid_reply_is_retried_with_its_errors_and_each_retry_is_a_commit() -> None:
    """Missing field, then not JSON, then valid: two ``output-retry`` commits whose rows say what
    was wrong (retry n of N); the model read its reply and the correction each time."""
    agent, provider = _agent(['{"name": "Paris"}', "It is Paris.", f"```json\n{PARIS}\n```"], CITY_SCHEMA)
    assert agent.run("Biggest French city?") == {"name": "Paris", "population": 2100000}
    snapshot = agent.last_snapshot()
    assert snapshot.shared_state["output_schema_retries"] == [
        {"retry": 1, "of": 2, "errors": ["'population' is required but missing"]},
        {"retry": 2, "of": 2, "errors": ["the reply is not JSON (Expecting value at line 1 column 1)"]},
    ]
    retry_commits = [c for c in snapshot.commit_log if c.stage_id == "output-retry"]
    assert [c.runtime_stage_id for c in retry_commits] == ["output-retry#3", "output-retry#6"]
    assert provider.requests[1].messages[1:] == [
        {"role": "assistant", "content": '{"name": "Paris"}'},
        {
            "role": "user",
            "content": "Your reply does not match the required JSON Schema (city):\n"
            "- 'population' is required but missing\n"
            "Reply again with only the corrected JSON value (retry 1 of 2).",
        },
    ]


def test_the_narrative_says_why_each_retry_happened() -> None:
    """The route's decision and a sentence per retry are in the narrative, in order."""
    agent, _ = _agent(['{"name": "Paris", "population": -1}', PARIS], CITY_SCHEMA)
    agent.run("Biggest French city?")
    lines = agent.last_snapshot().narrative
    told = [line for line in lines if "output schema" in line]
    assert told == [
        '[Condition]: It examined "reply does not match the output schema": '
        'llm_latest_content="{"name": "Paris", "population": -1}", and chose RetryOutput.',
        "Retry 1 of 2: the reply did not match the output schema ('population': must be at least 0, got -1), "
        "so it was sent back to the model.",
    ]


def test_exhausted_retries_raise_output_schema_error_with_the_last_text_and_errors() -> None:
    """Still invalid after ``output_retries``: the failure is committed and ``OutputSchemaError``
    carries the last reply and its errors."""
    agent, provider = _agent(["nope", '{"name": 3}'], CITY_SCHEMA, output_retries=1)
    with pytest.raises(
        OutputSchemaError,
        match=r"^the model's reply does not match the output schema after 1 retry: "
        r"'population' is required but missing; 'name': expected string, got integer$",
    ) as raised:
        agent.run("Biggest French city?")
    assert isinstance(raised.value, ValueError)
    assert raised.value.text == '{"name": 3}'
    assert raised.value.errors == ["'population' is required but missing", "'name': expected string, got integer"]
    state = agent.last_snapshot().shared_state
    assert state["output_schema_error"] == {"errors": raised.value.errors, "content": '{"name": 3}', "retries": 1}
    assert state["final_content"] == ""  # the final stage never ran
    assert len(provider.requests) == 2
    assert agent.last_snapshot().narrative[-3:] == [
        "Step 3: Write output_schema_error = {errors, content, retries}",
        "The reply still did not match the output schema after 1 retry ('population' is required but missing; "
        "'name': expected string, got integer): the run ends without an answer.",
        "Execution stopped at RetryOutput.",
    ]


def test_no_retries_means_the_first_invalid_reply_fails() -> None:
    """``output_retries=0``: one model call, then the error."""
    agent, provider = _agent(["[]"], CITY_SCHEMA, output_retries=0)
    with pytest.raises(OutputSchemaError, match=r"after 0 retries: the reply: expected object, got array$"):
        agent.run("Biggest French city?")
    assert len(provider.requests) == 1


def test_tool_calls_still_work_and_only_the_final_reply_is_validated() -> None:
    """A reply with tool calls goes to tool-calls as before; the schema judges the final text."""
    agent = Agent.create(provider=scripted([calls(call("c1", "weather", city="Paris")), PARIS]), output_schema=City)
    built = agent.tool(weather_tool()).build()
    assert built.run("Paris?") == City("Paris", 2100000)
    assert [c.stage_id for c in built.last_snapshot().commit_log][:4] == ["seed", "call-llm", "route", "tool-calls"]


def test_a_stored_run_that_raises_output_schema_error_is_failed_with_its_commits(tmp_path: Path) -> None:
    """With a store the failed run keeps its retry commits and names the error."""
    store = SqliteStore(tmp_path / "runs.db")
    agent, _ = _agent(["{}", "{}"], CITY_SCHEMA, output_retries=1, store=store)
    with pytest.raises(OutputSchemaError, match=r"^the model's reply does not match the output schema after 1 retry: "):
        agent.run("Biggest French city?")
    (record,) = store.list()
    assert record.status == "failed"
    assert [c.stage_id for c in record.commit_log] == [
        "seed",
        "call-llm",
        "route",
        "output-retry",
        "call-llm",
        "route",
        "output-retry",
    ]
    assert record.failure is not None and record.failure.error_type == "OutputSchemaError"
    assert record.error is not None and "after 1 retry" in record.error


def test_a_stored_run_that_succeeds_stores_the_answer_text(tmp_path: Path) -> None:
    """A finished stored run returns the instance; the store keeps the JSON text as output."""
    store = SqliteStore(tmp_path / "runs.db")
    agent, _ = _agent([PARIS], City, store=store)
    assert agent.run("Biggest French city?") == City("Paris", 2100000)
    (record,) = store.list()
    assert (record.status, record.output) == ("done", PARIS)


def test_absent_schema_adds_no_stage_no_key_and_no_request_field() -> None:
    """No schema: the chart has no ``output-retry`` stage, the state no output key, the request
    no schema; a schema adds exactly that stage."""
    plain = Agent.create(provider=scripted(["hi"])).build()
    assert plain.run("hello") == "hi"
    assert "output-retry" not in plain.chart.graph
    assert not [k for k in plain.last_snapshot().shared_state if k.startswith("output_schema")]
    assert plain.config.provider.requests[0].output_schema is None
    shaped = Agent.create(provider=scripted([PARIS]), output_schema=CITY_SCHEMA).build()
    assert set(shaped.chart.graph) - set(plain.chart.graph) == {"output-retry"}


@pytest.mark.parametrize(
    ("schema", "retries", "message"),
    [
        (42, 2, r"expected a JSON Schema dict, an attrs class, a dataclass or a pydantic model, got int"),
        (City("x", 1), 2, r"got the instance City\(name='x', population=1\) \(pass the class itself\)$"),
        ({"type": "array"}, 2, r"the schema's root must be an object .*got type 'array'"),
        ({"type": "object", "default": {1, 2}}, 2, r"the JSON Schema is not JSON"),
        (City, -1, r"^Agent.create\(output_retries=...\): expected a non-negative integer, got -1$"),
        (None, "2", r"^Agent.create\(output_retries=...\): expected a non-negative integer, got '2'$"),
    ],
)
def test_bad_output_settings_are_refused_at_build(schema: Any, retries: Any, message: str) -> None:
    """Each bad ``output_schema``/``output_retries`` is an ``AgentBuildError`` naming the problem."""
    with pytest.raises(AgentBuildError, match=message):
        Agent.create(provider=scripted(["x"]), output_schema=schema, output_retries=retries).build()


def test_a_field_without_a_schema_and_a_name_taken_by_a_tool_are_refused() -> None:
    """A class field the model cannot send, and a schema named like a tool, fail at build."""

    @dataclasses.dataclass
    class Bad:
        where: set[int]

    with pytest.raises(AgentBuildError, match=r"Bad has a field with no JSON Schema \(at field where\)"):
        Agent.create(provider=scripted(["x"]), output_schema=Bad).build()
    clash = {**CITY_SCHEMA, "title": "weather"}
    with pytest.raises(AgentBuildError, match=r"the schema's name 'weather' is also a tool's name"):
        Agent.create(provider=scripted(["x"]), output_schema=clash).tool(weather_tool()).build()


def test_strict_is_set_only_for_closed_schemas() -> None:
    """OpenAI's strict flag is true when every object is closed and requires all its properties."""
    closed = {**CITY_SCHEMA, "additionalProperties": False}
    assert output_spec(closed, 2).request.strict is True
    assert output_spec(CITY_SCHEMA, 2).request.strict is False
    nested = {**closed, "properties": {**closed["properties"], "where": {"type": "object", "properties": {}}}}
    assert output_spec({**nested, "required": [*closed["required"], "where"]}, 2).request.strict is False


@pytest.mark.parametrize(
    ("value", "schema", "issues"),
    [
        (3, {"anyOf": [{"type": "string"}, {"type": "integer"}]}, []),
        (
            3.5,
            {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            ["the reply: matches none of the 2 allowed shapes (the reply: expected string, got number)"],
        ),
        (
            {"a": 1, "b": 2},
            {"type": "object", "properties": {"a": {}}, "additionalProperties": False},
            ["'b' is not allowed (no such property)"],
        ),
        (
            {"a": "x"},
            {"type": "object", "additionalProperties": {"type": "integer"}},
            ["'a': expected integer, got string"],
        ),
        ("v2", {"const": "v1"}, ['the reply: expected "v1", got "v2"']),
        ("ab", {"type": "string", "minLength": 3}, ["the reply: must be at least 3 characters long, got 2"]),
        ([1, 2, 3], {"type": "array", "maxItems": 2}, ["the reply: must be at most 2 items long, got 3"]),
        (11, {"type": "integer", "maximum": 10}, ["the reply: must be at most 10, got 11"]),
    ],
)
def test_the_validator_checks_unions_closed_objects_consts_and_bounds(value: Any, schema: Any, issues: list) -> None:
    """The keywords structured output needs (and tool arguments now get too)."""
    assert validate_args(value, schema, root="the reply") == issues


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_the_reply_parser_and_validator_never_raise_on_arbitrary_text(text: str) -> None:
    """Any text the model sends yields a value or a list of problems, never an exception."""
    value, issues = parse_reply(text)
    assert (value is None) or not issues
    for spec in (output_spec(CITY_SCHEMA, 2), output_spec(Place, 2)):
        answer, problems = spec.check(text)
        assert (answer is None) == bool(problems)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(JSON, st.sampled_from(["", "  ", "\n"]))
def test_any_json_value_parses_back_and_is_judged_by_the_schema(value: Any, pad: str) -> None:
    """Serialised JSON always parses to itself; the schema's verdict matches the validator's."""
    text = pad + json.dumps(value) + pad
    assert parse_reply(text) == (value, [])
    answer, problems = output_spec(CITY_SCHEMA, 2).check(text)
    assert problems == validate_args(value, CITY_SCHEMA, root="the reply")
    assert answer == (None if problems else value)


def test_a_stream_ends_with_the_instance_and_its_json_view() -> None:
    """``agent.stream``'s final event carries the instance ``run`` returns; its JSON shows the fields."""
    agent, _ = _agent(['{"name": "Oslo", "size": "small", "tags": ["north"]}'], Place)
    events = list(agent.stream("A small capital?"))
    final = events[-1]
    assert final.result == Place("Oslo", Size.SMALL, ["north"])
    assert final.to_dict()["output"] == {"name": "Oslo", "size": "small", "tags": ["north"]}
    json.dumps(final.to_dict())


def test_a_resumed_run_returns_the_validated_instance_too() -> None:
    """A run paused by a check-in, resumed on the checkpoint, ends with the instance (and retries
    still apply after the resume)."""
    replies = [calls(call("c1", "weather", city="Paris")), '{"name": "Paris"}', PARIS]
    provider = scripted(replies)
    agent = Agent.create(provider=provider, output_schema=City).tool(weather_tool(check_in="always")).build()
    paused = agent.run("Paris?")
    assert isinstance(paused, Paused) and paused.check_in is not None
    done = agent.resume(paused.checkpoint, check_in_approved(request=paused.check_in, by="alice", at="t"))
    assert done == City("Paris", 2100000)
    assert [row["retry"] for row in agent.last_snapshot().shared_state["output_schema_retries"]] == [1]


def test_many_retries_fit_the_loop_budget_of_a_small_agent() -> None:
    """``output_retries`` beyond the tool budget still runs every retry (the chart's loop cap
    counts them)."""
    provider = scripted(["x"] * 5 + [PARIS])
    agent = Agent.create(provider=provider, output_schema=City, output_retries=5).max_iterations(1).build()
    assert agent.run("Paris?") == City("Paris", 2100000)
    assert len(provider.requests) == 6


def test_output_schema_error_is_an_agent_error_and_pickles_with_its_fields() -> None:
    """One ``except AgentError`` catches it; it crosses a process boundary with text, errors, retries."""
    error = pickle.loads(pickle.dumps(OutputSchemaError("nope", ["the reply is empty"], 2)))
    assert isinstance(error, AgentError) and isinstance(error, ValueError)
    assert (error.text, error.errors, error.retries) == ("nope", ["the reply is empty"], 2)
    assert str(error) == "the model's reply does not match the output schema after 2 retries: the reply is empty"
