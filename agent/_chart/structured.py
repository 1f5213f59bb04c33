"""Structured output: ``Agent.create(output_schema=S, output_retries=N)``.

Laws:
- ``S`` is a JSON Schema dict whose root is an object, an attrs class, a dataclass (or a
  TypedDict), or a pydantic model (duck-typed: ``model_json_schema``/``model_validate``;
  pydantic is never imported here). A class's schema comes from its type hints
  (``agent._tools.tool_schema``, as for ``@tool``); anything else is refused at ``build()``.
- The provider's capabilities (``agent.providers.Capabilities``) pick the form the shape is
  asked for, best first: the schema natively (``json_schema``: ``LLMRequest.output_schema``),
  else JSON mode with the schema as an instruction in the system prompt (``json_object``), else
  the instruction alone (no ``output_schema`` on the request: a wrapper declaring
  ``structured_output = False`` is never sent a schema). A server that refuses a form (an HTTP
  4xx/5xx naming ``response_format``) is asked again at once with the next form; the first
  model-call commit records the form (``output_schema_form: {"form"}``), and a fallback's commit
  records the new form with each refusal (``"refused": [{"form", "status", "error"}]``) and, when
  the instruction joins the prompt, the new ``system_prompt``. Later calls of the run use the
  recorded form.
- The final reply is parsed (JSON only — one value, optionally inside one code fence; never
  eval) and validated (``agent._tools.tools.validate_args``, then the class's own conversion). An
  invalid reply is sent back to the model with what was wrong: the ``output-retry`` branch
  commits the reply, the correction and a row ``{"retry", "of", "errors"}`` appended to
  ``output_schema_retries``, up to ``N`` times. Still invalid: that branch commits
  ``output_schema_error`` (``{"errors", "content", "retries"}``), stops the run, and
  ``agent.run`` raises ``OutputSchemaError`` with the last text and the errors (a stored run
  is recorded failed with its commits).
- No schema configured: no branch, no state key, no request field — byte-identical runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

import attrs
import cattrs

from agent._chart import events
from agent._chart.state import (
    FINAL_CONTENT,
    HISTORY,
    ITERATION,
    LLM_LATEST_CONTENT,
    OUTPUT_SCHEMA_ERROR,
    OUTPUT_SCHEMA_FORM,
    OUTPUT_SCHEMA_RETRIES,
)
from agent._tools.tool_schema import UnsupportedAnnotation, needs_structuring, schema_for, structure, unstructure
from agent._tools.tools import validate_args
from agent.errors import OutputSchemaError, retries_text
from agent.providers.errors import ProviderError
from agent.providers.types import OutputForm, OutputSchema, capabilities_of
from flowchart import Scope, StageContext
from flowchart.lowlevel import NotJsonSafe, copy_json, peek

RETRY_BRANCH = "output-retry"
DEFAULT_NAME = "answer"
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)\r?\n?```$", re.DOTALL)
_ROOT = "the reply"


def parse_reply(text: str) -> tuple[Any, list[str]]:
    """The JSON value of a reply, or the problems that make it not one (never raises)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return None, [f"{_ROOT} is empty: answer with the JSON value itself"]
    try:
        return json.loads(body, parse_constant=_refuse_constant), []
    except json.JSONDecodeError as exc:
        return None, [f"{_ROOT} is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"]
    except (ValueError, RecursionError) as exc:
        return None, [f"{_ROOT} is not JSON ({exc})"]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _class_problems(exc: Exception) -> list[str]:
    """A class's own refusal as messages (pydantic's ``errors()``, cattrs's paths, else its text)."""
    errors = getattr(exc, "errors", None)
    if callable(errors):
        try:
            rows = [(".".join(str(p) for p in row["loc"]), row["msg"]) for row in errors()]
            return [f"'{where}': {msg}" if where else f"{_ROOT}: {msg}" for where, msg in rows]
        except Exception:  # a duck-typed error whose errors() is not pydantic's
            pass
    if isinstance(exc, cattrs.BaseValidationError):
        return [line.replace("@ $", f"@ {_ROOT}") for line in cattrs.transform_error(exc)]
    return [f"{_ROOT} was refused: {exc}"]


def _strict(schema: Any) -> bool:
    """True when every object in ``schema`` is closed and requires all its properties (OpenAI strict)."""
    if not isinstance(schema, Mapping):
        return True
    if schema.get("type") == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False or set(schema.get("required", ())) != set(properties):
            return False
    inner: list[Any] = [*(schema.get("properties") or {}).values(), *(schema.get("anyOf") or [])]
    inner += [schema[k] for k in ("items", "additionalProperties") if isinstance(schema.get(k), Mapping)]
    inner += list((schema.get("$defs") or {}).values())
    return all(_strict(sub) for sub in inner)


@attrs.frozen
class OutputSpec:
    """The built agent's output schema: what is sent, how replies are checked, how many retries."""

    request: OutputSchema
    retries: int
    target: Any = None  # None: a JSON Schema dict (the answer is the dict)
    pydantic: bool = False

    @property
    def schema(self) -> dict[str, Any]:
        """The JSON Schema the answer must match."""
        return self.request.schema

    def check(self, text: str) -> tuple[Any, list[str]]:
        """The answer ``text`` stands for (a dict, or an instance of the class), or what is wrong."""
        value, issues = parse_reply(text)
        if issues:
            return None, issues
        if self.pydantic:
            try:
                return self.target.model_validate(value), []
            except Exception as exc:  # the model's refusal, whatever its class
                return None, _class_problems(exc)
        issues = validate_args(value, self.schema, root=_ROOT)
        if issues or self.target is None or not needs_structuring(self.target):
            return (None if issues else value), issues
        try:
            return structure(value, self.target), []
        except Exception as exc:  # cattrs refusals are exception groups
            return None, _class_problems(exc)

    def instruction(self) -> str:
        """What a provider without native structured output is told (appended to the system prompt)."""
        shown = json.dumps(self.schema, ensure_ascii=False, sort_keys=True)
        return (
            f"Give your final answer as one JSON value, with no other text and no code fence, "
            f"matching this JSON Schema ({self.request.name}):\n{shown}"
        )

    def correction(self, issues: list[str], retry: int) -> str:
        """What the model reads after an invalid reply (retry ``retry`` of ``retries``)."""
        lines = "\n".join(f"- {issue}" for issue in issues)
        return (
            f"Your reply does not match the required JSON Schema ({self.request.name}):\n{lines}\n"
            f"Reply again with only the corrected JSON value (retry {retry} of {self.retries})."
        )


def output_spec(schema: Any, retries: Any) -> OutputSpec:
    """Check ``output_schema=`` / ``output_retries=`` and build the spec (``ValueError`` naming the problem)."""
    where = "Agent.create(output_schema=...)"
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"Agent.create(output_retries=...): expected a non-negative integer, got {retries!r}")
    target: Any = None
    pydantic = False
    if isinstance(schema, Mapping):
        try:
            body = copy_json(dict(schema))
        except NotJsonSafe as exc:
            raise ValueError(f"{where}: the JSON Schema is not JSON ({exc})") from None
        title = body.get("title")
        name = title if isinstance(title, str) and _NAME.match(title) else DEFAULT_NAME
    elif isinstance(schema, type) and callable(getattr(schema, "model_json_schema", None)):
        if not callable(getattr(schema, "model_validate", None)):
            raise ValueError(f"{where}: {schema.__name__} has model_json_schema but no model_validate")
        body, target, pydantic = copy_json(schema.model_json_schema()), schema, True  # type: ignore[attr-defined]
        name = schema.__name__
    elif isinstance(schema, type) and (attrs.has(schema) or dataclasses.is_dataclass(schema)):
        try:
            body = schema_for(schema)
        except UnsupportedAnnotation as exc:
            at = f" (at field {exc.where.lstrip('.')})" if exc.where else ""
            raise ValueError(f"{where}: {schema.__name__} has a field with no JSON Schema{at}: {exc.what}") from None
        target, name = schema, schema.__name__
    else:
        kind = f"the instance {schema!r}" if attrs.has(type(schema)) or dataclasses.is_dataclass(schema) else None
        raise ValueError(
            f"{where}: expected a JSON Schema dict, an attrs class, a dataclass or a pydantic model, "
            f"got {kind or type(schema).__name__} (pass the class itself)"
        )
    if body.get("type") != "object":
        raise ValueError(
            f'{where}: the schema\'s root must be an object ({{"type": "object", ...}}), got type '
            f"{body.get('type')!r}; wrap a single value in an object property"
        )
    if not _NAME.match(name):
        name = DEFAULT_NAME
    return OutputSpec(OutputSchema(name, body, _strict(body)), retries, target, pydantic)


def build_output(schema: Any, retries: Any, tools: Mapping[str, Any]) -> OutputSpec | None:
    """The builder's hook: ``None`` without a schema, else the checked spec (its name is no tool's)."""
    if schema is None:
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"Agent.create(output_retries=...): expected a non-negative integer, got {retries!r}")
        return None
    spec = output_spec(schema, retries)
    if spec.request.name in tools:
        raise ValueError(
            f"Agent.create(output_schema=...): the schema's name '{spec.request.name}' is also a tool's name; "
            "rename the tool (or give the schema another title/class name)"
        )
    return spec


def add_retry_branch(branches: Any, spec: OutputSpec) -> Any:
    """The ``output-retry`` branch of ``route``, looping back to ``call-llm``."""
    return branches.add_function_branch(
        RETRY_BRANCH,
        "RetryOutput",
        make_retry_output(spec),
        description="Send the invalid reply back with what was wrong (no retry left: stop)",
        loop_to="call-llm",
    )


def _tell_retry(rows: Any) -> str | None:
    """The narrative's sentence for the newest retry row."""
    if not isinstance(rows, list) or not rows or not isinstance(rows[-1], Mapping):
        return None
    row = rows[-1]
    return (
        f"Retry {row.get('retry')} of {row.get('of')}: the reply did not match the output schema "
        f"({'; '.join(str(e) for e in row.get('errors') or [])}), so it was sent back to the model."
    )


def _tell_failure(record: Any) -> str | None:
    """The narrative's sentence for an output that never matched."""
    if not isinstance(record, Mapping):
        return None
    return (
        f"The reply still did not match the output schema after {retries_text(record.get('retries'))} "
        f"({'; '.join(str(e) for e in record.get('errors') or [])}): the run ends without an answer."
    )


_FORM_WORDS = {
    "json_schema": "the schema itself (native structured output)",
    "json_object": "JSON mode, with the schema in the system prompt",
    "instruction": "the schema in the system prompt alone",
}


def _tell_form(record: Any) -> str | None:
    """The narrative's sentence for the form the shape was asked for (and any refusal)."""
    if not isinstance(record, Mapping) or record.get("form") not in _FORM_WORDS:
        return None
    said = f"The answer's shape was asked for as {_FORM_WORDS[record['form']]}"
    refused = [row for row in record.get("refused") or [] if isinstance(row, Mapping)]
    if refused:
        why = "; ".join(f"{row.get('form')}: HTTP {row.get('status')}, {row.get('error')}" for row in refused)
        said += f", after the server refused the better form ({why})"
    return said + "."


def notes(spec: OutputSpec | None) -> dict[str, Any]:
    """The narrative notes of structured output (none without a schema)."""
    if spec is None:
        return {}
    return {OUTPUT_SCHEMA_FORM: _tell_form, OUTPUT_SCHEMA_RETRIES: _tell_retry, OUTPUT_SCHEMA_ERROR: _tell_failure}


def native(provider: Any) -> bool:
    """True when ``provider`` takes the schema natively (``Capabilities.json_schema``)."""
    return capabilities_of(provider).json_schema


def output_forms(spec: OutputSpec | None, provider: Any) -> tuple[OutputForm, ...]:
    """The forms to ask for the shape in, best first (none without a schema)."""
    return () if spec is None else capabilities_of(provider).output_forms()


def system_prompt(spec: OutputSpec | None, system: str | None, form: OutputForm | None) -> str | None:
    """The system prompt the agent sends: with the schema instruction unless the form is native."""
    if spec is None or form in (None, "json_schema"):
        return system
    return f"{system}\n\n{spec.instruction()}" if system else spec.instruction()


def refused_form(exc: BaseException, form: OutputForm) -> bool:
    """True when ``exc`` is a server refusing the form the shape was asked in (an HTTP 4xx/5xx
    naming ``response_format``): the next form is worth one more request."""
    status = getattr(exc, "status", None)
    return (
        form != "instruction"
        and isinstance(exc, ProviderError)
        and isinstance(status, int)
        and 400 <= status < 600
        and "response_format" in str(exc)
    )


def refusal_row(exc: BaseException, form: OutputForm) -> dict[str, Any]:
    """One refused form as the record keeps it: the server's words without the address (a local
    server's port must not make two runs' records differ)."""
    text = str(exc)
    url = getattr(exc, "url", None)
    if isinstance(url, str) and f"{url}: " in text:
        text = text.split(f"{url}: ", 1)[1]
    return {"form": form, "status": getattr(exc, "status", None), "error": text}


def retry_rule(spec: OutputSpec) -> dict[str, Any]:
    """``route``'s rule: the reply does not match the schema → ``output-retry``."""
    return {
        "when": lambda s: bool(spec.check(s[LLM_LATEST_CONTENT])[1]),
        "then": RETRY_BRANCH,
        "label": "reply does not match the output schema",
    }


def make_retry_output(spec: OutputSpec) -> Any:
    """The ``output-retry`` branch: send the invalid reply back with what was wrong, or, with
    no retry left, record the failure and end the run."""

    def retry_output(scope: Scope, ctx: StageContext) -> None:
        text = scope[LLM_LATEST_CONTENT]
        _value, issues = spec.check(text)
        done = peek(scope, OUTPUT_SCHEMA_RETRIES, [])
        if len(done) >= spec.retries:
            scope[OUTPUT_SCHEMA_ERROR] = {"errors": issues, "content": text, "retries": len(done)}
            ctx.stop(f"reply does not match the output schema after {retries_text(len(done))}")
            return
        retry = len(done) + 1
        scope[HISTORY].append({"role": "assistant", "content": text})
        scope[HISTORY].append({"role": "user", "content": spec.correction(issues, retry)})
        row = {"retry": retry, "of": spec.retries, "errors": issues}
        if OUTPUT_SCHEMA_RETRIES in scope:
            scope[OUTPUT_SCHEMA_RETRIES].append(row)
        else:
            scope[OUTPUT_SCHEMA_RETRIES] = [row]
        iteration = scope[ITERATION]
        ctx.emit(events.ITERATION_END, {"iteration": iteration, "tool_calls": 0})
        scope[ITERATION] = iteration + 1

    return retry_output


def answer_json(value: Any) -> Any:
    """An answer ``run`` returned, as JSON (a stream's ``final`` event): text and dicts as they are,
    a pydantic model by ``model_dump(mode="json")``, an attrs/dataclass instance by its fields."""
    if isinstance(value, str | dict) or value is None:
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    return unstructure(value)


def final_answer(spec: OutputSpec, state: Mapping[str, Any]) -> Any:
    """What ``agent.run`` returns for a finished run (``OutputSchemaError`` when it has none)."""
    failed = state.get(OUTPUT_SCHEMA_ERROR)
    if failed is not None:
        raise OutputSchemaError(failed["content"], failed["errors"], failed["retries"])
    text = str(state.get(FINAL_CONTENT, ""))
    value, issues = spec.check(text)
    if issues:  # the output middleware changed a valid reply into an invalid one
        raise OutputSchemaError(text, issues, len(state.get(OUTPUT_SCHEMA_RETRIES, ())))
    return value
