"""Recorder dispatch: bind each recorder's hooks once per run, never let one break a run.

Law: a hook a recorder lacks is skipped (looked up on the object, once per run); a hook
that raises is swallowed and reported to the OTHER recorders' ``on_error`` with channel
"recorder". With no recorder attached every ``has_*`` flag is False and the engine
builds no event at all, so observing costs nothing when nobody observes.

A recorder with ``on_stage_ops`` takes its scope operations in one batch per stage: its
``on_read`` / ``on_write`` / ``on_emit`` are bound only when it sets ``live_operations``
(so a recorder never hears the same operation twice); ``has_ops`` tells the engine to keep
the stage's operation log.

The field hooks (``take_stage_start``, ``take_emit``, ``take_commit``, ``take_stage_ops``,
``take_stage_executed``: see :mod:`flowchart.events`) are bound the same way and called at
the same points as their event forms, just before them: no event object is built for them.
A recorder that has a hook's field form is not bound to its event form (it hears each
thing once). Each point has its own caller, bound once per run (``observers.take_emit(ctx,
name, payload)``, ...), with the same failure rule as ``take``: the engine calls it inside a
``try`` and hands what it raises to ``observers.failed``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from flowchart.events import (
    ALL_HOOKS,
    FIELD_FORMS,
    FIELD_HOOKS,
    OPERATION_HOOKS,
    ErrorEvent,
    TraversalContext,
)

Hook = Callable[..., Any]


class Observers:
    """The hooks of a run's recorders, bound per hook name."""

    __slots__ = (
        "_fields",
        "_hooks",
        "any",
        "batch_emits",
        "commit_takers",
        "emit_names",
        "emit_takers",
        "emits",
        "executed_takers",
        "has_data",
        "has_ops",
        "hooked",
        "live_ops",
        "ops_takers",
        "snapshot",
        "stage_takers",
        "take_commit",
        "take_emit",
        "take_stage_executed",
        "take_stage_ops",
        "take_stage_start",
    )

    def __init__(self, recorders: Iterable[Any] = ()) -> None:
        self._hooks: dict[str, list[tuple[Any, Hook]]] = {}
        #: somebody takes emits: live (``on_emit``) or in a batch (a batched recorder with ``on_emit``)
        self.emits = False
        #: the emit names somebody takes (``None``: every name). A recorder may say which it
        #: wants with an ``emit_names`` frozenset (a stream filtered by ``modes=``); one without
        #: it takes them all. Emits nobody takes are neither copied nor delivered
        self.emit_names: frozenset[str] | None = frozenset()
        #: some batch recorder takes emits (else a stage's emits stay out of its operation log)
        self.batch_emits = False
        fields: dict[str, list[tuple[Any, Hook]]] = {name: [] for name in FIELD_HOOKS}
        for recorder in recorders:
            own = {name: hook for name in FIELD_HOOKS if callable(hook := getattr(recorder, name, None))}
            batched = ("take_stage_ops" in own or callable(getattr(recorder, "on_stage_ops", None))) and not getattr(
                recorder, "live_operations", False
            )
            if batched:
                own.pop("take_emit", None)  # emits reach a batch recorder in its batch
            takes_emits = callable(getattr(recorder, "on_emit", None)) or callable(getattr(recorder, "take_emit", None))
            if "take_stage_ops" in own or callable(getattr(recorder, "on_stage_ops", None)):
                # a stage's emits go in its batch when a batch recorder takes emits (or says so)
                declared = getattr(recorder, "batch_emits", None)
                if declared is True or (declared is None and takes_emits):
                    self.batch_emits = takes_emits = True
            for name, hook in own.items():
                fields[name].append((recorder, hook))
            if takes_emits:
                self.emits = True
                wanted = getattr(recorder, "emit_names", None)
                if wanted is None or self.emit_names is None:
                    self.emit_names = None
                else:
                    self.emit_names = self.emit_names | wanted
            for name in ALL_HOOKS:
                if (batched and name in OPERATION_HOOKS) or FIELD_FORMS.get(name) in own:
                    continue  # a batch recorder's operations come in its batch; a field form wins
                hook = getattr(recorder, name, None)
                if callable(hook):
                    self._hooks.setdefault(name, []).append((recorder, hook))
        #: the field hooks' takers by hook name, in attach order; and one per point, the
        #: engine's test of whether anybody takes it (an empty tuple: nobody)
        self._fields = {name: tuple(takers) for name, takers in fields.items()}
        self.stage_takers = tuple(fields["take_stage_start"])
        self.emit_takers = tuple(fields["take_emit"])
        self.commit_takers = tuple(fields["take_commit"])
        self.ops_takers = tuple(fields["take_stage_ops"])
        self.executed_takers = tuple(fields["take_stage_executed"])
        #: one caller per point (``observers.take_emit(ctx, name, payload)``): ``take`` without
        #: its per-call lookup and argument packing. A lone taker's caller is its own hook (no
        #: closure between: the engine's ``try`` around the call hands a failure to ``failed``);
        #: several takers' is ``_take_each``, which reports each failure itself and never raises
        self.take_stage_start = self._caller("take_stage_start", self.stage_takers)
        self.take_emit = self._caller("take_emit", self.emit_takers)
        self.take_commit = self._caller("take_commit", self.commit_takers)
        self.take_stage_ops = self._caller("take_stage_ops", self.ops_takers)
        self.take_stage_executed = self._caller("take_stage_executed", self.executed_takers)
        self.any = bool(self._hooks) or any(fields.values())
        #: the event hooks somebody has (``name in observers.hooked`` is ``wants(name)`` without a call)
        self.hooked = frozenset(self._hooks)
        self.has_ops = "on_stage_ops" in self._hooks or bool(self.ops_takers)
        #: how a live view's value is kept in a batch: ``snapshot(key, view)``. ``None``: an
        #: exact plain copy. A lone batch recorder may supply its own (``snapshot_view``),
        #: e.g. the narrative keeps only the summary it will print
        self.snapshot: Hook | None = None
        takers = [r for r, _ in self._hooks.get("on_stage_ops", ())] + [r for r, _ in self.ops_takers]
        if len(takers) == 1:
            self.snapshot = getattr(takers[0], "snapshot_view", None)
        #: somebody takes reads or writes one event each (the transaction then reports every operation)
        self.live_ops = "on_read" in self._hooks or "on_write" in self._hooks
        self.has_data = bool(self.stage_takers or self.emit_takers) or any(
            name in self._hooks for name in ("on_read", "on_write", "on_emit", "on_stage_start", "on_stage_end")
        )

    def wants(self, name: str) -> bool:
        """True when some recorder listens to ``name``."""
        return name in self._hooks

    def emit(self, name: str, event: Any) -> None:
        """Deliver ``event`` to every recorder that has hook ``name``, in attach order."""
        hooks = self._hooks.get(name)
        if not hooks:
            return
        for recorder, hook in hooks:
            try:
                hook(event)
            except Exception as exc:  # a recorder must never break a run
                self._report(recorder, name, exc, getattr(event, "ctx", None))

    def take(self, hook: str, ctx: TraversalContext, *fields: Any) -> None:
        """Call every field hook ``hook`` (``take_emit``, ...) with ``ctx`` and the point's
        ``fields``, in attach order; a failing one is reported to the others, as for events."""
        _take_each(self._fields[hook], hook, partial(_report, self._hooks), ctx, *fields)

    def _caller(self, hook: str, takers: tuple[tuple[Any, Hook], ...]) -> Hook:
        if len(takers) == 1:
            return takers[0][1]
        # the callers hold the hooks, never ``self``: an ``Observers`` its own callers point back
        # to is a reference cycle, and every recorder of the run (a narrative's whole entry list)
        # would wait for the cycle collector to be freed
        return partial(_take_each, takers, hook, partial(_report, self._hooks))

    def failed(self, hook: str, exc: Exception, ctx: TraversalContext | None) -> None:
        """Report that the caller of field hook ``hook`` raised ``exc`` (the engine's ``except``
        around ``observers.take_…``): only a lone taker's hook raises through its caller."""
        self._report(self._fields[hook][0][0], hook, exc, ctx)

    def _report(self, failed: Any, hook_name: str, exc: Exception, ctx: TraversalContext | None) -> None:
        _report(self._hooks, failed, hook_name, exc, ctx)


def _take_each(
    takers: tuple[tuple[Any, Hook], ...], hook: str, report: Report, ctx: TraversalContext, *fields: Any
) -> None:
    """``Observers.take`` over the takers of one point (bound per point by ``_caller``)."""
    for recorder, fn in takers:
        try:
            fn(ctx, *fields)
        except Exception as exc:
            report(recorder, hook, exc, ctx)


def _report(
    hooks: dict[str, list[tuple[Any, Hook]]], failed: Any, hook_name: str, exc: Exception, ctx: TraversalContext | None
) -> None:
    """Tell the ``on_error`` hooks in ``hooks`` other than ``failed``'s that its ``hook_name`` raised."""
    others = [h for r, h in hooks.get("on_error", ()) if r is not failed]
    if not others or ctx is None:
        return
    event = ErrorEvent(
        ctx=ctx,
        stage_name=ctx.stage_name,
        message=f"recorder {type(failed).__name__}.{hook_name} raised {type(exc).__name__}: {exc}",
        error=exc,
        channel="recorder",
    )
    for hook in others:
        # an error hook that fails has nobody left to tell
        with contextlib.suppress(Exception):
            hook(event)


Report = Callable[[Any, str, Exception, TraversalContext | None], None]


NO_OBSERVERS = Observers()
