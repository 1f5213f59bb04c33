"""The stage context: the control surface a stage gets as its second argument.

``ctx.args`` (the read-only run input), ``ctx.env``, ``ctx.stop(reason)``, ``ctx.stopped``,
``ctx.emit(name, payload)``, ``ctx.run_id``, ``ctx.stage_id``, ``ctx.runtime_stage_id``.
A ``StageContext`` is only made for stages whose function takes it (inspected at build
time), so stages that do not ask for it do not pay for it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from flowchart._core.values import copy_json

if TYPE_CHECKING:
    from flowchart._engine.traversal import Traverser


class ReadonlyArgs(Mapping[str, Any]):
    """A read-only mapping over the run input; nested dicts are read-only too, lists are tuples."""

    __slots__ = ("_data", "_raw")

    def __init__(self, data: Mapping[str, Any] | None) -> None:
        object.__setattr__(self, "_data", {k: freeze(v) for k, v in (data or {}).items()})
        object.__setattr__(self, "_raw", None)

    @classmethod
    def owned(cls, data: dict[str, Any]) -> ReadonlyArgs:
        """Read-only args over ``data``, a JSON-safe dict the caller made for them alone and never
        changes (the engine's own copy of a run input): each value is frozen when first read, so an
        input no stage reads whole (a long conversation's named turns) costs nothing to hold."""
        args = cls.__new__(cls)
        object.__setattr__(args, "_data", {})
        object.__setattr__(args, "_raw", data)
        return args

    def __getitem__(self, key: str) -> Any:
        data = self._data
        if key in data or self._raw is None:
            return data[key]
        value = data[key] = _freeze_owned(self._raw[key])
        return value

    def __contains__(self, key: object) -> bool:
        return key in (self._data if self._raw is None else self._raw)

    def __iter__(self) -> Iterator[str]:
        return iter(self._data if self._raw is None else self._raw)

    def __len__(self) -> int:
        return len(self._data if self._raw is None else self._raw)

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError(f"ctx.args is read-only: cannot set '{key}'. Write state through the scope instead")

    def __delitem__(self, key: str) -> None:
        raise TypeError(f"ctx.args is read-only: cannot delete '{key}'")

    def __setattr__(self, name: str, value: Any) -> None:
        raise TypeError(f"ctx.args is read-only: cannot set '{name}'. Write state through the scope instead")

    def __delattr__(self, name: str) -> None:
        raise TypeError(f"ctx.args is read-only: cannot delete '{name}'")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"'{name}' is not in ctx.args") from None

    def __repr__(self) -> str:
        return f"ReadonlyArgs({ {k: self[k] for k in self}!r})"

    def __reduce__(self) -> Any:
        return (ReadonlyArgs, (self.to_dict(),))

    def to_dict(self) -> dict[str, Any]:
        """A plain, mutable deep copy of the input."""
        return {k: thaw(self[k]) for k in self}


def freeze(value: Any) -> Any:
    """Read-only form of a JSON-safe value (dict → ReadonlyArgs, list → tuple)."""
    if isinstance(value, dict):
        return ReadonlyArgs(value)
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def _freeze_owned(value: Any) -> Any:
    """``freeze`` of a value inside owned args: a dict stays lazy too (``ReadonlyArgs.owned``)."""
    if isinstance(value, dict):
        return ReadonlyArgs.owned(value)
    if isinstance(value, list | tuple):
        return tuple(_freeze_owned(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """Inverse of ``freeze``: plain dicts and lists."""
    if isinstance(value, ReadonlyArgs):
        return value.to_dict()
    if isinstance(value, tuple):
        return [thaw(v) for v in value]
    return value


class StageContext:
    """What a stage may do besides reading and writing state."""

    __slots__ = ("_traverser", "runtime_stage_id", "stage_id", "stage_name")

    def __init__(self, traverser: Traverser, stage_id: str, stage_name: str, runtime_stage_id: str) -> None:
        self._traverser = traverser
        self.stage_id = stage_id
        self.stage_name = stage_name
        self.runtime_stage_id = runtime_stage_id

    @property
    def args(self) -> ReadonlyArgs:
        """The run input (a subflow's: its mapped input), read-only."""
        return self._traverser.args

    @property
    def env(self) -> Mapping[str, Any]:
        """The run environment passed as ``run(env=...)`` (never recorded)."""
        return self._traverser.run.env

    @property
    def run_id(self) -> str:
        """The id of this run (a resumed run gets a new one)."""
        return self._traverser.run.run_id

    @property
    def stopped(self) -> bool:
        """True once this chart (a subflow: this subflow) was asked to stop, by ``stop()`` in
        this stage or one before it; nothing runs after the current stage then. Read-only."""
        return bool(self._traverser.stopped)

    @property
    def item(self) -> Any:
        """The item this map child runs for (``add_map``); a ``RunError`` outside a map child."""
        return self._mapped("item")

    @property
    def index(self) -> int:
        """This map child's position in the map's items (0-based); a ``RunError`` outside a map child."""
        return int(self._mapped("index"))

    def _mapped(self, what: str) -> Any:
        mapped = self._traverser.mapped
        if mapped is None:
            from flowchart._core.errors import RunError

            raise RunError(
                f"ctx.{what} is only set in a map child (add_map), not in stage '{self.stage_id}'",
                stage_id=self.stage_id,
            )
        return mapped[1] if what == "item" else mapped[0]

    def stop(self, reason: str | None = None) -> None:
        """End the run after this stage commits (footprintjs ``$break``); the first reason wins."""
        self._traverser.request_stop(reason)

    @property
    def observed(self) -> bool:
        """True when some recorder listens to emits (so building a payload is worth it)."""
        return self._traverser.run.observers.emits

    def listens(self, name: str) -> bool:
        """True when some recorder takes the emit ``name`` — what ``emit(name, ...)`` would
        deliver — so building its payload is worth it (a stream's ``modes=`` leaves names out)."""
        observers = self._traverser.run.observers
        return observers.emits and (observers.emit_names is None or name in observers.emit_names)

    def shown(self, key: str, value: Any) -> Any:
        """``value`` as this run's events may carry it for the state key ``key``: the run's
        redaction applied (``"[REDACTED]"`` for a hidden key, a copy with the hidden fields
        scrubbed), or ``value`` itself when the run hides nothing. For an event payload that
        repeats what the state holds, so the event hides what the record hides."""
        run = self._traverser.run
        return run.redaction.shown(key, value)[0] if run.redacting else value

    def emit(self, name: str, payload: Any = None) -> None:
        """Send a named event with a JSON-safe payload to the run's emit recorders, in order.

        The payload is copied (and checked) only when somebody listens.
        """
        observers = self._traverser.run.observers
        if observers.emits and (observers.emit_names is None or name in observers.emit_names):
            self._traverser.emit(self, name, copy_json(payload) if payload is not None else None)

    def __repr__(self) -> str:
        return f"<StageContext {self.runtime_stage_id}>"


def emit_owned(ctx: StageContext, name: str, payload: Any) -> None:
    """``ctx.emit(name, payload)`` without the defensive copy, for a payload its caller owns.

    ``ctx.emit`` copies (and checks) every payload, because a stage may go on changing the
    value it emitted, and recorders keep what they are given. A library that builds a
    payload for the emit alone — a fresh dict of scalars, or of values already copied or
    committed — may hand it over as it is: the caller promises the payload is JSON-safe
    and that nothing it holds inside the payload changes afterwards. The agent emits about
    eight such events an iteration; their copies were a fifth of what streaming them cost.
    """
    traverser = ctx._traverser
    observers = traverser.run.observers
    if observers.emits and (observers.emit_names is None or name in observers.emit_names):
        traverser.emit(ctx, name, payload)
