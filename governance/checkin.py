"""Consent requests: a tool's check-in and a middleware's ask, each bound to the exact call.

Laws this file enforces:

- **A request names one pause of one run.** Its ``id`` is an opaque fingerprint (SHA-256
  of the canonical JSON) of the run id, the pause's position (``iteration`` and the
  runtime id of the pausing step), the tool, the args, the call id and the identity — the
  same pause always gets the same id; another run, a later pause or any change to the call
  gives another; the id carries no value from the run. A decision quotes it
  (``governance.decisions``).
- **What a person approves is what runs**: ``args`` are the args after every before-tool
  transform, as a JSON-safe copy (a request travels inside a checkpoint).
- **A check-in gate fails toward asking**: a predicate gets its own frozen copy of the args
  (it cannot change what runs); one that raises — including by trying to write into that
  copy — trips the gate; only a result that ``is True`` trips it otherwise.
- **Evidence is configured once, and sensibly**: ``"standard"`` (default, lexical scorer),
  ``"minimal"`` (``will_do`` only; a scorer with it is refused), or your own assembler.
- ``intent`` is the assistant's text alongside the call, absent when empty.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Literal

import attrs

from governance import _codec
from governance._json import as_tuple, describe_shape, fingerprint, json_safe
from governance.chains import ChainResult
from governance.errors import CheckInConfigError
from governance.evidence import AssemblerInput, CheckInEvidence, minimal_evidence, standard_evidence
from governance.middleware import ToolCallInfo
from governance.scorer import Scorer, lexical_driver_scorer

Assembler = Callable[[AssemblerInput], CheckInEvidence | Awaitable[CheckInEvidence]]
"""Builds the evidence pack for one check-in (sync or async)."""

EvidenceOption = Literal["standard", "minimal"] | Assembler
"""What ``.check_in(evidence=...)`` accepts."""


Position = Mapping[str, Any]
"""Where in its run a pause happened: ``{"iteration": int, "step": runtime stage id}``."""


def _request_id(prefix: str, run_id: str, position: Position | None, **call: Any) -> str:
    """``<prefix>_`` + the fingerprint of the run, the pause's position and the call: what every
    request id binds (the fingerprint is of canonical JSON, so the keys' order does not matter)."""
    return fingerprint(prefix, {"run_id": run_id, "position": dict(position or {}), **call})


def check_in_request_id(
    *,
    tool: str,
    args: Mapping[str, Any],
    tool_call_id: str,
    identity: Any = None,
    run_id: str = "",
    position: Position | None = None,
) -> str:
    """The id of a check-in request for this exact call at this pause of run ``run_id``
    (``cki_`` + 32 hex digits)."""
    return _request_id("cki", run_id, position, tool=tool, args=args, tool_call_id=tool_call_id, identity=identity)


def ask_request_id(
    *,
    middleware: str,
    tool: str,
    args: Mapping[str, Any],
    tool_call_id: str,
    identity: Any = None,
    run_id: str = "",
    position: Position | None = None,
) -> str:
    """The id of a middleware ask about this exact call at this pause of run ``run_id``
    (``ask_`` + 32 hex digits); the asking middleware is part of it, so two askers never
    share an id."""
    return _request_id(
        "ask",
        run_id,
        position,
        middleware=middleware,
        tool=tool,
        args=args,
        tool_call_id=tool_call_id,
        identity=identity,
    )


def ask_human_request_id(*, tool: str, tool_call_id: str, run_id: str = "", position: Position | None = None) -> str:
    """The id of a tool's ``ask_human`` pause at this position of run ``run_id`` (``hum_`` + 32
    hex digits): what its reply is recorded under in ``human_decisions``."""
    return _request_id("hum", run_id, position, tool=tool, tool_call_id=tool_call_id)


@attrs.frozen
class CheckInRequest:
    """A tool's check-in: ``id`` (quote it in the decision), ``tool`` (its name), ``args``
    (what will run), ``intent`` (the assistant's text alongside the call, or ``None``) and
    the ``evidence`` pack. JSON round-trips through ``to_dict``/``from_dict``."""

    id: str
    tool: str
    args: dict[str, Any]
    intent: str | None
    evidence: CheckInEvidence

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``intent`` omitted when absent)."""
        out: dict[str, Any] = {"id": self.id, "tool": self.tool, "args": json_safe(self.args)}
        if self.intent is not None:
            out["intent"] = self.intent
        out["evidence"] = self.evidence.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> CheckInRequest:
        """Read a request back (strict; ``WireFormatError`` names the bad field)."""
        return _codec.load(cls, data, path)


@attrs.frozen
class MiddlewareAsk:
    """A middleware's ask, as the paused run shows it (``Paused.ask``): ``id``, ``question``,
    ``detail`` (JSON-safe, ``None`` when absent), ``middleware`` (the asker), ``tool``,
    ``args`` (as transformed up to the asker — what a person approves) and ``tool_call_id``."""

    id: str
    question: str
    detail: Any
    middleware: str
    tool: str
    args: dict[str, Any]
    tool_call_id: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form (``detail`` omitted when absent)."""
        out: dict[str, Any] = {"id": self.id, "question": self.question}
        if self.detail is not None:
            out["detail"] = json_safe(self.detail)
        out.update(
            middleware=self.middleware,
            tool=self.tool,
            args=json_safe(self.args),
            tool_call_id=self.tool_call_id,
        )
        return out

    @classmethod
    def from_dict(cls, data: Any, path: str = "$") -> MiddlewareAsk:
        """Read an ask back (strict: the one codec, ``WireFormatError`` naming the bad field)."""
        return _codec.load(cls, data, path)


_codec.register(CheckInRequest, optional=("intent",))
_codec.register(MiddlewareAsk, optional=("detail",))


def build_middleware_ask(
    result: ChainResult, call: ToolCallInfo, *, run_id: str = "", position: Position | None = None
) -> MiddlewareAsk:
    """The pause payload for a before-tool chain that answered ``ask`` over ``call`` (at
    ``position`` of run ``run_id``)."""
    if result.verdict != "ask" or result.ask is None or result.middleware is None:
        raise ValueError(f"build_middleware_ask: the chain's verdict is {result.verdict!r}, not 'ask'")
    args = json_safe(result.value)
    return MiddlewareAsk(
        id=ask_request_id(
            middleware=result.middleware,
            tool=call.tool_name,
            args=args,
            tool_call_id=call.tool_call_id,
            identity=call.identity,
            run_id=run_id,
            position=position,
        ),
        question=result.ask.question,
        detail=json_safe(result.ask.detail),
        middleware=result.middleware,
        tool=call.tool_name,
        args=args,
        tool_call_id=call.tool_call_id,
    )


@attrs.frozen
class CheckInConfig:
    """Resolved check-in options: the ``assembler`` and the ``scorer`` it ranks drivers with."""

    assembler: Assembler
    scorer: Scorer


def resolve_check_in_config(evidence: EvidenceOption = "standard", scorer: Scorer | None = None) -> CheckInConfig:
    """Turn ``.check_in(evidence=..., scorer=...)`` into a config, refusing what cannot work
    with ``CheckInConfigError``. The default is standard evidence with ``lexical_driver_scorer``."""
    if scorer is not None and not callable(scorer):
        raise CheckInConfigError(
            f"check_in(scorer=...): a scorer is a function ScoreInput -> drivers, got {describe_shape(scorer)}"
        )
    if evidence == "minimal":
        if scorer is not None:
            raise CheckInConfigError(
                'check_in(evidence="minimal", scorer=...): a scorer has no effect with '
                'evidence="minimal", which gathers will_do only. Drop the scorer or use '
                'evidence="standard".'
            )
        return CheckInConfig(assembler=minimal_evidence, scorer=lexical_driver_scorer)
    if evidence == "standard" or (callable(evidence) and not isinstance(evidence, str)):
        assembler: Assembler = standard_evidence
        if evidence != "standard":
            assembler = evidence  # a custom assembler (callable, checked above)
        return CheckInConfig(assembler=assembler, scorer=scorer or lexical_driver_scorer)
    got = repr(evidence) if isinstance(evidence, str) else describe_shape(evidence)
    raise CheckInConfigError(
        f'check_in(evidence=...): expected "standard", "minimal" or an assembler function, got {got}'
    )


def history_for_check_in(
    system_prompt: str | None, history: Sequence[Mapping[str, Any]]
) -> tuple[Mapping[str, Any], ...]:
    """The conversation a check-in sees: the system prompt (when non-empty) as a leading
    system message, then ``history``. Used for the predicate and the evidence alike."""
    head: tuple[Mapping[str, Any], ...] = ()
    if system_prompt and system_prompt.strip():
        head = ({"role": "system", "content": system_prompt},)
    return head + tuple(history)


async def build_check_in_request(
    *,
    tool_name: str,
    tool_description: str,
    args: Mapping[str, Any],
    tool_call_id: str,
    iteration: int,
    identity: Any = None,
    intent: str | None = None,
    system_prompt: str | None = None,
    history: Sequence[Mapping[str, Any]] = (),
    evidence: EvidenceOption = "standard",
    scorer: Scorer | None = None,
    run_id: str = "",
    position: Position | None = None,
) -> CheckInRequest:
    """Build the ``CheckInRequest`` for a call whose check-in tripped (at ``position`` of run
    ``run_id``: both are bound into its id).

    ``args`` are the args that will run (after before-tool transforms); ``history`` is the
    conversation (message dicts; tool results carry ``tool_name``) — the tools run so far
    are read from it; ``intent`` is the assistant's text alongside the call.
    """
    config = resolve_check_in_config(evidence, scorer)
    safe_args = json_safe(dict(args))
    pack = config.assembler(
        AssemblerInput(
            tool_name=tool_name,
            tool_description=tool_description,
            args=safe_args,
            iteration=iteration,
            history=history_for_check_in(system_prompt, history),
            scorer=config.scorer,
            intent=intent,
        )
    )
    if inspect.isawaitable(pack):
        pack = await pack
    if isinstance(pack, dict):
        pack = CheckInEvidence.from_dict(pack, "$.evidence")
    if not isinstance(pack, CheckInEvidence):
        raise CheckInConfigError(
            f"check_in(evidence=...): the assembler returned {describe_shape(pack)}, not a CheckInEvidence"
        )
    return CheckInRequest(
        id=check_in_request_id(
            tool=tool_name,
            args=safe_args,
            tool_call_id=tool_call_id,
            identity=identity,
            run_id=run_id,
            position=position,
        ),
        tool=tool_name,
        args=safe_args,
        intent=intent if intent and intent.strip() else None,
        evidence=pack,
    )


CheckInDemand = Literal["always"] | Callable[..., Any]
"""What a tool declares: ``"always"`` or ``predicate(args, ctx) -> bool`` (sync or async)."""


@attrs.frozen
class CheckInPredicateContext:
    """What a check-in predicate is told besides the args: ``iteration``, ``tool_call_id``
    and ``history`` (the conversation, system prompt first; see ``history_for_check_in``)."""

    iteration: int
    tool_call_id: str
    history: tuple[Mapping[str, Any], ...] = attrs.field(default=(), converter=as_tuple)


def validate_check_in_demand(demand: object) -> None:
    """Refuse (``CheckInConfigError``) a ``check_in=`` that is not None, ``"always"`` or a
    callable."""
    if demand is None or demand == "always" or (callable(demand) and not isinstance(demand, str)):
        return
    got = repr(demand) if isinstance(demand, str) else describe_shape(demand)
    raise CheckInConfigError(f'check_in=...: expected None, "always" or a predicate(args, ctx) -> bool, got {got}')


def frozen_copy(value: Any) -> Any:
    """A deep, read-only copy: dicts become ``MappingProxyType``, lists tuples, sets frozensets.

    Writing into it raises ``TypeError``; other objects are deep-copied (so a write cannot
    reach the caller's value). Raises when no copy can be made.
    """
    if value is None or isinstance(value, str | int | float | bool | bytes):
        return value
    if isinstance(value, Mapping):
        return MappingProxyType({k: frozen_copy(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen_copy(v) for v in value)
    if isinstance(value, set | frozenset):
        return frozenset(frozen_copy(v) for v in value)
    return copy.deepcopy(value)


async def should_check_in(demand: object, args: Mapping[str, Any], ctx: CheckInPredicateContext) -> bool:
    """Does the tool's check-in trip for these args? The one place a predicate is asked.

    None → False; ``"always"`` → True; a predicate gets ``(frozen_copy(args), ctx)`` and
    trips only on a result that ``is True`` — but a predicate that raises, args that cannot
    be copied, or any other declaration trip the gate (fail toward asking a person).
    """
    if demand is None:
        return False
    if demand == "always" or not callable(demand):
        return True
    try:
        answer = demand(frozen_copy(args), ctx)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception:
        return True
    return answer is True
