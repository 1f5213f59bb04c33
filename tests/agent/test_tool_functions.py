"""``@tool`` / ``define_tool(fn)``: a tool built from a typed function — schema inference
table-tested, docstrings read, typed values passed, every mistake refused by name."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
from typing import Annotated, Any, Literal, Optional, TypedDict

import attrs
import pytest

from agent import Agent, Tool, ToolContext, ToolDefinitionError, define_tool, tool
from agent._tools.tool_schema import schema_for
from agent.providers import scripted


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(TypedDict):
    street: str
    zip: int


class PartialAddress(TypedDict, total=False):
    street: str


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0
    tags: list[str] = dataclasses.field(default_factory=list)


@attrs.define
class Box:
    width: int
    color: Color = Color.RED


@dataclasses.dataclass
class Node:
    child: Node | None = None


SCHEMAS: list[tuple[Any, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, {"type": "null"}),
    (type(None), {"type": "null"}),
    (Any, {}),
    (Optional[int], {"type": ["integer", "null"]}),  # noqa: UP045 (Optional is what is under test)
    (int | None, {"type": ["integer", "null"]}),
    (int | str, {"type": ["integer", "string"]}),
    (list[str], {"type": "array", "items": {"type": "string"}}),
    (list, {"type": "array"}),
    (list[list[int]], {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (dict, {"type": "object"}),
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, "x"], {"type": ["integer", "string"], "enum": [1, "x"]}),
    (Literal["a"] | None, {"type": ["string", "null"], "enum": ["a", None]}),
    (Color, {"type": "string", "enum": ["red", "green"]}),
    (Level, {"type": "integer", "enum": [1, 2]}),
    (
        Address,
        {
            "type": "object",
            "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
            "required": ["street", "zip"],
        },
    ),
    (PartialAddress, {"type": "object", "properties": {"street": {"type": "string"}}}),
    (
        Point,
        {
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "y": {"type": "number", "default": 0.0},
                "tags": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["x"],
        },
    ),
    (
        Box,
        {
            "type": "object",
            "properties": {
                "width": {"type": "integer"},
                "color": {"type": "string", "enum": ["red", "green"], "default": "red"},
            },
            "required": ["width"],
        },
    ),
    (list[Point], {"type": "array", "items": schema_for(Point)}),
    (Point | None, {**schema_for(Point), "type": ["object", "null"]}),
    (Point | Address, {"anyOf": [schema_for(Point), schema_for(Address)]}),
    (Annotated[int, "how many"], {"type": "integer", "description": "how many"}),
]


@pytest.mark.parametrize(("annotation", "expected"), SCHEMAS, ids=[repr(a) for a, _ in SCHEMAS])
def test_each_annotation_maps_to_its_json_schema(annotation: Any, expected: dict[str, Any]) -> None:
    """The schema table: every supported annotation gives exactly this JSON Schema."""
    assert schema_for(annotation) == expected


UNSUPPORTED: list[tuple[Any, str]] = [
    (set[int], r"^set\[int\] has no JSON Schema$"),
    (tuple[int, int], r"^tuple\[int, int\] has no JSON Schema$"),
    (dict[int, str], r"^dict keys must be str \(JSON object keys\), got int$"),
    (Node, r"^Node refers to itself \(a recursive type has no finite schema\)$"),
    (bytes, r"^bytes has no JSON Schema$"),
]


@pytest.mark.parametrize(("annotation", "message"), UNSUPPORTED, ids=[repr(a) for a, _ in UNSUPPORTED])
def test_an_annotation_without_a_schema_is_refused(annotation: Any, message: str) -> None:
    """Types a model cannot send (sets, tuples, int-keyed dicts, bytes, recursive classes) are refused."""
    from agent._tools.tool_schema import UnsupportedAnnotation

    with pytest.raises(UnsupportedAnnotation, match=message):
        schema_for(annotation)


def test_a_decorated_function_becomes_a_tool_with_name_description_and_schema() -> None:
    """``@tool``: the name is the function's, the description its docstring's text, each argument
    described by its ``Args:`` entry, and parameters with defaults are not required."""

    @tool
    def weather(city: str, units: Literal["C", "F"] = "C", days: int = 1) -> str:
        """Get the weather forecast for a city.

        Looks the city up first.

        Args:
            city: The city's name,
                e.g. "Paris".
            units (str): Celsius or Fahrenheit.

        Returns:
            The forecast.
        """
        return f"{city}: 18{units} for {days} day(s)"

    assert isinstance(weather, Tool)
    assert weather.schema() == {
        "name": "weather",
        "description": "Get the weather forecast for a city.\n\nLooks the city up first.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": 'The city\'s name, e.g. "Paris".'},
                "units": {
                    "type": "string",
                    "enum": ["C", "F"],
                    "description": "Celsius or Fahrenheit.",
                    "default": "C",
                },
                "days": {"type": "integer", "default": 1},
            },
            "required": ["city"],
        },
    }


def test_numpy_style_parameters_describe_the_arguments() -> None:
    """A NumPy ``Parameters`` section describes the arguments like a Google ``Args:`` one."""

    def add(a: int, b: float) -> float:
        """Add two numbers.

        Parameters
        ----------
        a : int
            The first number.
        b : float
            The second
            number.
        """
        return a + b

    schema = define_tool(add).input_schema
    assert schema["properties"]["a"]["description"] == "The first number."
    assert schema["properties"]["b"]["description"] == "The second number."


def _run(tool_obj: Tool, args: dict[str, Any]) -> str:
    """One agent turn that calls ``tool_obj`` with ``args``; returns what the tool answered."""
    provider = scripted([{"content": "", "tool_calls": [{"id": "c1", "name": tool_obj.name, "args": args}]}, "done"])
    agent = Agent.create(provider=provider, model="m").tool(tool_obj).build()
    assert agent.run("go") == "done"
    tool_message = agent.last_snapshot().shared_state["history"][-1]
    assert tool_message["role"] == "tool"
    return str(tool_message["content"])


def test_the_function_receives_typed_values_enum_dataclass_and_attrs() -> None:
    """An Enum parameter receives the member, a dataclass or attrs parameter an instance."""
    seen: dict[str, Any] = {}

    @tool
    def paint(color: Color, where: Point, box: Box, points: list[Point] | None = None) -> str:
        """Paint a box."""
        seen.update(color=color, where=where, box=box, points=points)
        return "painted"

    args = {"color": "green", "where": {"x": 1.5}, "box": {"width": 3}, "points": [{"x": 2, "y": 1}]}
    assert _run(paint, args) == "painted"
    assert seen == {"color": Color.GREEN, "where": Point(1.5), "box": Box(3), "points": [Point(2, 1)]}


def test_arguments_are_checked_against_the_inferred_schema_before_the_function_runs() -> None:
    """A wrong type or a missing argument goes back to the model; the function does not run."""
    ran: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        ran.append(n)
        return n

    text = _run(count, {"n": "three"})
    assert text.startswith("Invalid arguments for tool 'count' — the call was not executed.\n- 'n': expected integer")
    assert ran == []


def test_a_ctx_parameter_receives_the_tool_context_and_is_not_offered_to_the_model() -> None:
    """``ctx`` gets the call's ToolContext (call id, iteration) and is absent from the schema."""

    @tool
    def whoami(label: str, ctx: ToolContext) -> str:
        """Say which call this is."""
        return f"{label}:{ctx.tool_call_id}:{ctx.iteration}"

    assert "ctx" not in whoami.input_schema["properties"]
    assert _run(whoami, {"label": "me"}) == "me:c1:1"


def test_an_async_function_is_awaited() -> None:
    """An ``async def`` tool is an async Tool, awaited by the agent."""

    @tool
    async def later(x: int) -> int:
        """Answer later."""
        await asyncio.sleep(0)
        return x * 2

    assert later.is_async
    assert _run(later, {"x": 21}) == "42"


def test_tool_with_options_and_define_tool_of_a_function_agree() -> None:
    """``@tool(name=..., description=..., check_in=...)`` overrides; ``define_tool(fn)`` is ``tool(fn)``."""

    def lookup(order_id: str) -> str:
        """Look an order up."""
        return order_id

    named = tool(name="find-order", description="Find an order.", check_in="always")(lookup)
    assert (named.name, named.description, named.check_in) == ("find-order", "Find an order.", "always")
    assert define_tool(lookup).schema() == tool(lookup).schema()


def test_the_keyword_form_of_define_tool_still_works() -> None:
    """``define_tool(name=, description=, input_schema=, execute=)`` builds the same kind of Tool as before."""
    made = define_tool(
        name="echo",
        description="Echo.",
        input_schema={"type": "object", "properties": {}},
        execute=lambda args, ctx: "ok",
    )
    assert made.schema() == {
        "name": "echo",
        "description": "Echo.",
        "input_schema": {"type": "object", "properties": {}},
    }


def _no_doc(city: str) -> str:
    return city


def _untyped(city):  # type: ignore[no-untyped-def]
    """Untyped."""
    return city


def _a_set(ids: set[int]) -> str:
    """Takes a set."""
    return ""


def _nested_bad(where: dict[str, bytes]) -> str:
    """Bytes inside a dict."""
    return ""


def _star(*cities: str) -> str:
    """Star args."""
    return ""


def _positional(city: str, /) -> str:
    """Positional only."""
    return city


def _typo(city: str) -> str:
    """Weather.

    Args:
        cty: The city.
    """
    return city


REFUSALS: list[tuple[Any, str]] = [
    (_no_doc, r"^tool '_no_doc': no description; give the function a docstring \(or pass description=\.\.\.\)$"),
    (_untyped, r"^tool '_untyped': parameter 'city' needs a type annotation \(it becomes the JSON Schema\)$"),
    (_a_set, r"^tool '_a_set': parameter 'ids' has an unsupported annotation: set\[int\] has no JSON Schema; use str"),
    (_nested_bad, r"^tool '_nested_bad': parameter 'where' has an unsupported annotation \(at where\{\}\): bytes "),
    (_star, r"^tool '_star': parameter 'cities' is \*args/\*\*kwargs; a tool's arguments must be named$"),
    (_positional, r"^tool '_positional': parameter 'city' is positional-only; the model passes arguments by name$"),
    (_typo, r"^tool '_typo': the docstring documents 'cty', which the function does not take; fix the docstring"),
    (lambda x: x, r"^tool\(lambda\): a lambda has no name; pass name=\.\.\. \(and description=\.\.\.\)$"),
]


@pytest.mark.parametrize(("fn", "message"), REFUSALS, ids=[getattr(f, "__name__", "?") for f, _ in REFUSALS])
def test_a_function_that_cannot_be_a_tool_is_refused_naming_the_problem(fn: Any, message: str) -> None:
    """Every mistake is a ToolDefinitionError at definition time, naming the function and parameter."""
    with pytest.raises(ToolDefinitionError, match=message):
        tool(fn)


def test_define_tool_refuses_a_function_together_with_a_schema() -> None:
    """``define_tool(fn, input_schema=...)`` is ambiguous and refused."""
    with pytest.raises(ToolDefinitionError, match=r"^define_tool\(fn, \.\.\.\): a function brings its own schema"):
        define_tool(_typo, input_schema={"type": "object"})
