"""``@tool``: a tool built from a typed Python function.

Laws:
- The function says everything: the tool's name is the function's name, its
  description the docstring's text, each argument's description the docstring's
  ``Args:`` (Google) or ``Parameters`` (NumPy) entry, and its ``input_schema`` comes from
  the type hints (``agent._tools.tool_schema``); a parameter with a default is not required.
- A parameter named ``ctx`` (or annotated ``ToolContext``) receives the call's
  ``ToolContext`` and is not offered to the model. ``async def`` functions are awaited.
- Every problem is a ``ToolDefinitionError`` raised when the tool is made, naming the
  function and the parameter: a missing or unsupported annotation, ``*args``/``**kwargs``,
  a positional-only parameter, no docstring (and no ``description=``), a docstring that
  documents a parameter the function does not have.
- The model's arguments are checked against the schema before the function runs (as for
  every tool); Enum, dataclass and attrs parameters then receive real instances.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Any, overload

import attrs

from agent._tools.docstrings import parse_docstring
from agent._tools.effects import check_effect
from agent._tools.tool_schema import (
    NO_DEFAULT,
    UnsupportedAnnotation,
    json_default,
    needs_structuring,
    parameter_schemas,
    structure,
)
from agent._tools.tools import Tool, ToolContext, ToolDefinitionError, make_tool
from flowchart import Retry


def _is_context(param: inspect.Parameter, hint: Any) -> bool:
    return param.name == "ctx" or hint is ToolContext


def tool_from_function(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None, check_in: Any = None
) -> Tool:
    """The ``Tool`` that calls ``fn`` (see the module laws); ``name``/``description`` override."""
    if not callable(fn):
        raise ToolDefinitionError(f"tool(...): expected a function, got {type(fn).__name__}")
    label = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", repr(fn))
    tool_name = name if name is not None else getattr(fn, "__name__", "")
    if name is None and tool_name == "<lambda>":
        raise ToolDefinitionError("tool(lambda): a lambda has no name; pass name=... (and description=...)")
    try:
        signature = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (NameError, TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"tool '{label}': cannot read its signature and type hints ({exc})") from None
    params: dict[str, Any] = {}
    context: str | None = None
    defaults: dict[str, Any] = {}
    for param in signature.parameters.values():
        hint = hints.get(param.name, inspect.Parameter.empty)
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool '{label}': parameter '{param.name}' is *args/**kwargs; a tool's arguments must be named"
            )
        if param.kind is inspect.Parameter.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"tool '{label}': parameter '{param.name}' is positional-only; the model passes arguments by name"
            )
        if _is_context(param, hint):
            context = param.name
            continue
        if hint is inspect.Parameter.empty:
            raise ToolDefinitionError(
                f"tool '{label}': parameter '{param.name}' needs a type annotation (it becomes the JSON Schema)"
            )
        params[param.name] = hint
        if param.default is not inspect.Parameter.empty:
            defaults[param.name] = param.default
    try:
        properties = parameter_schemas(params)
    except UnsupportedAnnotation as exc:
        parameter = exc.where.split(".")[0].split("[")[0].split("{")[0]
        inside = f" (at {exc.where})" if exc.where != parameter else ""
        raise ToolDefinitionError(
            f"tool '{label}': parameter '{parameter}' has an unsupported annotation{inside}: {exc.what}; "
            "use str, int, float, bool, None, list[...], dict[str, ...], Literal, an Enum, a TypedDict, "
            "a dataclass or an attrs class"
        ) from None
    doc = parse_docstring(inspect.getdoc(fn))
    unknown = sorted(set(doc.args) - set(params) - {context or ""})
    if unknown:
        raise ToolDefinitionError(
            f"tool '{label}': the docstring documents {', '.join(repr(u) for u in unknown)}, "
            "which the function does not take; fix the docstring or the signature"
        )
    text = description if description is not None else doc.description
    if not text:
        raise ToolDefinitionError(
            f"tool '{label}': no description; give the function a docstring (or pass description=...)"
        )
    for arg, arg_text in doc.args.items():
        if arg in properties and arg_text:
            properties[arg] = {**properties[arg], "description": arg_text}
    for arg, value in defaults.items():
        shown = json_default(value)
        if shown is not NO_DEFAULT:
            properties[arg] = {**properties[arg], "default": shown}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    required = [p for p in params if p not in defaults]
    if required:
        schema["required"] = required
    execute = _executor(fn, params, context)
    return make_tool(name=tool_name, description=text, input_schema=schema, execute=execute, check_in=check_in)


def _executor(fn: Callable[..., Any], params: dict[str, Any], context: str | None) -> Callable[..., Any]:
    """``execute(args, ctx)`` calling ``fn`` by keyword, with typed values where needed."""
    typed = {name: hint for name, hint in params.items() if needs_structuring(hint)}

    def arguments(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        kwargs = {name: args[name] for name in params if name in args}
        for name, hint in typed.items():
            if name in kwargs:
                kwargs[name] = structure(kwargs[name], hint)
        if context is not None:
            kwargs[context] = ctx
        return kwargs

    if inspect.iscoroutinefunction(fn):

        async def execute_async(args: dict[str, Any], ctx: ToolContext) -> Any:
            return await fn(**arguments(args, ctx))

        return execute_async

    def execute(args: dict[str, Any], ctx: ToolContext) -> Any:
        return fn(**arguments(args, ctx))

    return execute


@overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    check_in: Any = None,
    effect: Any = "read",
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    check_in: Any = None,
    effect: Any = "read",
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool of a typed function: ``@tool`` or ``@tool(name=..., check_in="always")``.

    See the module laws (name, description and schema come from the function); ``effect`` as
    ``define_tool``'s.
    """
    if fn is not None:
        return with_effect(tool_from_function(fn, name=name, description=description, check_in=check_in), effect)

    def decorate(function: Callable[..., Any]) -> Tool:
        made = tool_from_function(function, name=name, description=description, check_in=check_in)
        return with_effect(made, effect)

    return decorate


def define_tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    execute: Callable[..., Any] | None = None,
    check_in: Any = None,
    retry: Retry | None = None,
    effect: Any = "read",
) -> Tool:
    """Define a tool: ``execute(args, ctx)`` (sync or async) returns its result.

    ``effect`` says what a call does to the world (``agent._tools.effects``, docs/durable.md):
    ``"read"`` (the default: safe to repeat), ``"idempotent"``, ``"unsafe"`` or ``checkable(fn)``.

    ``define_tool(fn)`` builds it from a typed function instead, as ``@tool`` does:
    ``name``/``description`` then override the function's. ``retry`` (a ``flowchart.Retry``)
    runs the body again when it raises an error the policy names; each failed attempt is a
    ``tool_errors`` row (``attempt``, ``retried``). A tool body is at-least-once: a retried or
    re-dispatched call may have run before.
    """
    if fn is None:
        made = make_tool(
            name=name,
            description=description,
            input_schema=input_schema,
            execute=execute,
            check_in=check_in,
            retry=retry,
        )
        return with_effect(made, effect)
    if input_schema is not None or execute is not None:
        raise ToolDefinitionError(
            "define_tool(fn, ...): a function brings its own schema and body; "
            "drop input_schema= and execute= (or drop fn)"
        )
    if retry is not None and not isinstance(retry, Retry):
        raise ToolDefinitionError(f"define_tool: retry must be a flowchart.Retry, got {type(retry).__name__}")
    made = tool_from_function(fn, name=name, description=description, check_in=check_in)
    return with_effect(made if retry is None else attrs.evolve(made, retry=retry), effect)


def with_effect(made: Tool, effect: Any) -> Tool:
    """``made`` with its ``effect`` checked and set (the default "read" leaves it as it is)."""
    if isinstance(effect, str) and effect == "read":
        return made
    return attrs.evolve(made, effect=check_effect(made.name, effect))
