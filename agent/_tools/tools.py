"""Tools: what an agent can call, how their arguments are checked, and ``ask_human``.

Laws:
- ``define_tool`` validates its own definition up front (name pattern, object schema,
  callable ``execute``, check-in demand) with an error that names the problem.
- Arguments the model sends are checked against ``input_schema`` BEFORE the tool runs
  (required keys, JSON types, enums, unions, bounds, nested objects and arrays); a failure goes back to
  the model as the tool's result, naming each problem, and the tool does not run.
- ``ask_human(data)`` inside a tool pauses the run at ``tool-calls``; the answer given
  to ``agent.resume`` becomes that call's result. The tool is not run again.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from agent.errors import ToolDefinitionError
from flowchart import Retry
from flowchart.lowlevel import NotJsonSafe, copy_json
from governance.checkin import validate_check_in_demand

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
NO_VALUE_RESULT = "(this tool returned no value)"


@attrs.frozen
class ToolContext:
    """What a tool's ``execute(args, ctx)`` is told about the call it serves.

    ``idempotency_key`` (``run_id:tool_call_id``) stays the same if a worker dies and the
    call is dispatched again, so a tool with side effects can deduplicate.
    """

    tool_call_id: str
    iteration: int
    run_id: str
    identity: Any = None
    #: the runtime id of the commit the call runs in (``tool-calls#4``): where what it does is recorded
    step: str | None = None
    #: the conversation and turn the run is (``None`` outside a conversation)
    conversation: str | None = None
    turn: int | None = None

    @property
    def idempotency_key(self) -> str:
        """``<run_id>:<tool_call_id>``."""
        return f"{self.run_id}:{self.tool_call_id}"


@attrs.frozen
class Tool:
    """A tool the model may call. Make one with ``define_tool``."""

    name: str
    description: str
    input_schema: dict[str, Any]
    execute: Callable[..., Any]
    check_in: Any = None
    is_async: bool = False
    #: where the tool came from (``ToolCallInfo.source``): ``None`` in code, an MCP server's name
    source: str | None = None
    #: the ``flowchart.Retry`` of the tool body (``define_tool(..., retry=...)``); ``None``: one try
    retry: Any = None
    #: what a call does to the world (``agent._tools.effects``): "read" (the default), "idempotent",
    #: "unsafe" or ``checkable(fn)``; every effect but "read" is recorded with an intent and a receipt
    effect: Any = "read"

    def schema(self) -> dict[str, Any]:
        """What the model is offered: ``{"name", "description", "input_schema"}``."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@attrs.frozen
class AgentAnswer:
    """What a sub-agent tool (``Agent.as_tool``) returns: the answer the model reads, and the
    sub-agent's run, which the caller's tool-calls commit records (``sub_agents``)."""

    text: str
    agent: str
    run_id: str | None
    model_calls: int = 0


def make_tool(
    *,
    name: Any,
    description: Any,
    input_schema: Any,
    execute: Any,
    check_in: Any = None,
    retry: Retry | None = None,
) -> Tool:
    """A ``Tool`` from its parts, each checked (``define_tool``'s keyword form; ``ToolDefinitionError``
    names the part and the fix)."""
    if retry is not None and not isinstance(retry, Retry):
        raise ToolDefinitionError(f"define_tool: retry must be a flowchart.Retry, got {type(retry).__name__}")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolDefinitionError(f"define_tool: name {name!r} must be 1-64 characters of letters, digits, '_' or '-'")
    if not isinstance(description, str) or not description.strip():
        raise ToolDefinitionError(f"define_tool('{name}'): description must be a non-empty string")
    if not isinstance(input_schema, Mapping) or input_schema.get("type") != "object":
        raise ToolDefinitionError(
            f"define_tool('{name}'): input_schema must be a JSON Schema object "
            '({"type": "object", "properties": {...}})'
        )
    try:
        schema = copy_json(dict(input_schema))
    except NotJsonSafe as exc:
        raise ToolDefinitionError(f"define_tool('{name}'): input_schema is not JSON: {exc}") from None
    if not callable(execute):
        raise ToolDefinitionError(f"define_tool('{name}'): execute must be callable as execute(args, ctx)")
    try:
        validate_check_in_demand(check_in)
    except ValueError as exc:
        raise ToolDefinitionError(f"define_tool('{name}'): {exc}") from None
    return Tool(name, description, schema, execute, check_in, inspect.iscoroutinefunction(execute), retry=retry)


class AskHumanSignal(BaseException):
    """Raised by ``ask_human`` inside a tool; the agent turns it into a pause."""

    def __init__(self, data: Any) -> None:
        super().__init__("ask_human")
        self.data = data


def ask_human(data: Any = None) -> Any:
    """Pause the run inside a tool and ask a person; the answer becomes the call's result.

    ``data`` (JSON-safe) is handed to whoever answers, as ``Paused.pause_data["data"]``.
    This function never returns: the tool is not run again after the resume.
    """
    try:
        payload = copy_json(data)
    except NotJsonSafe as exc:
        raise TypeError(f"ask_human(data): data must be JSON-safe ({exc})") from None
    raise AskHumanSignal(payload)


_NUMBERS = (int, float)
_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, _NUMBERS) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "null": lambda v: v is None,
}


# the exact types each ``type`` name accepts without a call (a subclass still goes through
# ``_JSON_TYPES``): what the check of that name says of a value of one of these types
_EXACT_TYPES: dict[str, frozenset[type]] = {
    "string": frozenset((str,)),
    "integer": frozenset((int,)),
    "number": frozenset((int, float)),
    "boolean": frozenset((bool,)),
    "object": frozenset((dict,)),
    "array": frozenset((list,)),
    "null": frozenset((type(None),)),
}


def _any_type(_value: Any) -> bool:
    """The check of a ``type`` this subset does not know: anything passes."""
    return True


def _type_name(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def _has_type(value: Any, expected: Any) -> bool:
    """``value`` is of the schema's ``type``: one name or a list of names (an unknown name passes)."""
    if isinstance(expected, list):
        return any(_JSON_TYPES.get(k, _any_type)(value) for k in expected)
    return _JSON_TYPES.get(expected, _any_type)(value)


def validate_args(args: Any, schema: Mapping[str, Any], path: str = "", *, root: str = "the arguments") -> list[str]:
    """Problems with ``args`` against ``schema`` (a practical JSON Schema subset), in order.

    Checked: ``type``, ``enum``, ``const``, ``anyOf``, ``required``, ``properties``,
    ``additionalProperties``, ``items``, ``minimum``/``maximum``, ``minLength``/``maxLength``,
    ``minItems``/``maxItems``; other keywords pass. ``root`` names the whole value in messages.
    """
    expected = schema.get("type")
    if expected is not None and not (type(expected) is str and type(args) in _EXACT_TYPES.get(expected, ())):
        check = _JSON_TYPES.get(expected) if type(expected) is str else None
        if not (check(args) if check is not None else _has_type(args, expected)):
            kinds = expected if isinstance(expected, list) else [expected]
            return [f"{_where(path, root)}: expected {' or '.join(kinds)}, got {_type_name(args)}"]
    issues: list[str] = []
    if not _RARE_KEYWORDS.isdisjoint(schema):
        where = _where(path, root)
        if "enum" in schema and args not in schema["enum"]:
            issues.append(f"{where}: expected one of {json.dumps(schema['enum'])}, got {_shown(args)}")
        if "const" in schema and args != schema["const"]:
            issues.append(f"{where}: expected {json.dumps(schema['const'])}, got {_shown(args)}")
        branches = schema.get("anyOf")
        if isinstance(branches, list) and branches:
            found = [validate_args(args, b, path, root=root) for b in branches if isinstance(b, Mapping)]
            if found and all(found):
                issues.append(f"{where}: matches none of the {len(found)} allowed shapes ({found[0][0]})")
    if not _BOUND_KEYWORDS.isdisjoint(schema):
        issues.extend(_bounds(args, schema, _where(path, root)))
    if isinstance(args, dict):
        prefix = path + "." if path else ""
        for key in schema.get("required", ()):
            if key not in args:
                issues.append(f"'{prefix}{key}' is required but missing")
        properties = schema.get("properties") or {}
        for key, sub in properties.items():
            if key in args and (type(sub) is dict or isinstance(sub, Mapping)):
                value = args[key]
                if type(sub) is dict and sub.keys() <= _LEAF_KEYWORDS:  # ``{"type": "number"}``: one test
                    expected = sub.get("type")
                    if type(expected) is str:
                        if type(value) in _EXACT_TYPES.get(expected, ()):  # the usual value: one set lookup
                            continue
                        check = _JSON_TYPES.get(expected)
                        if check is not None and check(value):
                            continue
                issues.extend(validate_args(value, sub, f"{prefix}{key}", root=root))
        extra = schema.get("additionalProperties")
        if extra is not None and (extra is False or isinstance(extra, Mapping)):  # else they pass unchecked
            for key in (k for k in args if k not in properties):
                if extra is False:
                    issues.append(f"'{prefix}{key}' is not allowed (no such property)")
                else:
                    issues.extend(validate_args(args[key], extra, f"{prefix}{key}", root=root))
    if isinstance(args, list) and isinstance(schema.get("items"), Mapping):
        for index, item in enumerate(args):
            issues.extend(validate_args(item, schema["items"], f"{path}[{index}]", root=root))
    return issues


_BOUNDS: tuple[tuple[str, Callable[[Any], bool], Callable[[Any], Any], str, bool], ...] = (
    ("minimum", _JSON_TYPES["number"], lambda v: v, "at least", True),
    ("maximum", _JSON_TYPES["number"], lambda v: v, "at most", False),
    ("minLength", _JSON_TYPES["string"], len, "at least {} characters long", True),
    ("maxLength", _JSON_TYPES["string"], len, "at most {} characters long", False),
    ("minItems", _JSON_TYPES["array"], len, "at least {} items long", True),
    ("maxItems", _JSON_TYPES["array"], len, "at most {} items long", False),
)

# the keywords a schema rarely has: a schema without any costs one set operation for each group
_BOUND_KEYWORDS = frozenset(keyword for keyword, *_rest in _BOUNDS)
_RARE_KEYWORDS = frozenset(("enum", "const", "anyOf"))
# a property schema with only these keywords is checked by its type alone (the usual tool argument)
_LEAF_KEYWORDS = frozenset(("type", "description", "title", "default", "examples"))


def _where(path: str, root: str) -> str:
    """How a message names the value at ``path``: ``'a.b'``, or ``root`` for the whole value."""
    return f"'{path}'" if path else root


def _bounds(value: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    """The ``minimum``/``maximum``/``min*``/``max*`` keywords ``value`` breaks."""
    issues = []
    for keyword, applies, measure, wording, lower in _BOUNDS:
        limit = schema.get(keyword)
        if not applies(value) or not _JSON_TYPES["number"](limit):
            continue
        size = measure(value)
        if (size < limit) if lower else (size > limit):
            text = wording.format(limit) if "{}" in wording else f"{wording} {limit}"
            issues.append(f"{where}: must be {text}, got {_shown(value) if size is value else size}")
    return issues


def _shown(value: Any) -> str:
    """``value`` as JSON for a message (``repr`` for what JSON cannot show)."""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def format_arg_issues(tool_name: str, issues: list[str]) -> str:
    """What the model reads when its arguments were refused (the tool did not run)."""
    lines = "\n".join(f"- {issue}" for issue in issues)
    return (
        f"Invalid arguments for tool '{tool_name}' — the call was not executed.\n{lines}\n"
        "Fix the arguments to match the tool's input schema and call it again."
    )


def result_text(value: Any) -> str:
    """What the model reads for a tool's return value: strings as they are, else JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return NO_VALUE_RESULT
    if type(value) is int:  # what json.dumps would write, without the encoder
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):
        return str(value)
