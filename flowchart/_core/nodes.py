"""Stage nodes: the structure the engine walks.

A chart is a set of ``StageNode`` objects linked by ``next``, ``branches`` (decider and
selector), ``children`` (fork) and ``loop_to`` (a back edge by id). The networkx graph of
``FlowChart.graph`` is drawn from them; the engine walks these plain objects because a
dictionary lookup per stage is cheaper than a graph query per stage.

Each callable is inspected ONCE, when the node is made: whether it takes ``ctx`` and
whether it is a coroutine function. Nothing about a stage is inspected per call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import FunctionType, MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import attrs

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart

NodeKind = Literal["stage", "decider", "selector", "subflow", "pausable", "loop"]


@attrs.frozen(slots=True)
class StageCallable:
    """A user function with what the engine needs to call it: arity and async-ness."""

    fn: Callable[..., Any]
    takes_extra: bool
    is_async: bool

    @classmethod
    def of(cls, fn: Callable[..., Any], *, base_arity: int, where: str) -> StageCallable:
        """Inspect ``fn`` once; ``base_arity`` is 1 for ``fn(scope)``, 2 for ``resume(scope, input)``."""
        if not callable(fn):
            raise TypeError(f"{where}: expected a function, got {type(fn).__name__}")
        if _is_plain_function(fn):  # the usual case, read off the code object (inspect is slow)
            code = fn.__code__
            count = 99 if code.co_flags & inspect.CO_VARARGS else code.co_argcount
            return cls(fn, count > base_arity, bool(code.co_flags & inspect.CO_COROUTINE))
        takes_extra = _positional_count(fn) > base_arity
        is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )
        return cls(fn, takes_extra, is_async)


def _is_plain_function(fn: Callable[..., Any]) -> bool:
    """A ``def`` or ``lambda`` whose signature is its code's (not decorated, no ``__signature__``)."""
    return type(fn) is FunctionType and not hasattr(fn, "__wrapped__") and not hasattr(fn, "__signature__")


def _positional_count(fn: Callable[..., Any]) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 1
    count = 0
    for param in params:
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            return 99
        if param.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


@attrs.frozen(slots=True)
class Pausable:
    """A two-phase stage: ``execute(scope[, ctx])`` returns pause data (or ``None`` to go on);
    ``resume(scope, input[, ctx])`` runs when the paused run is resumed. The body of a
    stage is never run twice: resume runs only the ``resume`` half.

    ``answer(scope, input[, ctx])`` (optional) records the answer BEFORE ``resume`` acts on
    it, as a commit of its own: what ``resume`` then writes can be traced (``causal_chain``)
    to the answer it read. Without it a resume is one commit, as before."""

    execute: Callable[..., Any]
    resume: Callable[..., Any]
    answer: Callable[..., Any] | None = None


@attrs.frozen(slots=True)
class SubflowMount:
    """How a subflow is mounted: the inner chart and its mappers. ``quiet_emits``: its stages'
    ``ctx.emit`` events are its owner's (an agent mounted with ``add_agent``): a narrative
    leaves them out (other recorders still get them). The last four are the mount's own run
    options (see below); ``None`` / empty: the run's apply inside as everywhere."""

    chart: FlowChart
    input_mapper: Callable[[Any], Any] | None = None
    output_mapper: Callable[[Any, Any], Any] | None = None
    propagate_break: bool = False
    array_merge: Literal["concat", "replace"] = "concat"
    quiet_emits: bool = False
    #: the mount's own run options, applied inside it (``add_agent``: the agent's): its redaction
    #: rule (a scope of the run's, ``flowchart._chart.scoping``), the parent keys its output fills
    #: from what that rule hides, its timeout in seconds and its loop limit
    redaction: Any = None
    hidden_outputs: tuple[str, ...] = ()
    timeout: float | None = None
    max_iterations: int | None = None


class StageNode:
    """One stage of a chart: a draft while the builder works on it, frozen by ``seal()`` when the
    chart is built — from then on assigning a field raises, and ``branches`` / ``children`` are
    read-only (a mapping proxy, a tuple), so a built chart cannot be changed under a run."""

    __slots__ = (
        "_sealed",
        "answer",
        "branch_id",
        "branches",
        "children",
        "default_branch",
        "description",
        "execute",
        "fail_fast",
        "fn",
        "id",
        "kind",
        "loop_to",
        "map",
        "mount",
        "name",
        "next",
        "resume",
        "retry",
    )

    def __init__(self, kind: NodeKind, name: str, stage_id: str, description: str | None = None) -> None:
        self._sealed = False
        self.kind: NodeKind = kind
        self.name = name
        self.id = stage_id
        self.description = description
        self.fn: StageCallable | None = None
        self.execute: StageCallable | None = None
        self.resume: StageCallable | None = None
        self.answer: StageCallable | None = None
        self.mount: SubflowMount | None = None
        self.next: StageNode | None = None
        self.loop_to: str | None = None
        self.branches: dict[str, StageNode] = {}  # a read-only proxy once sealed
        self.default_branch: str | None = None
        self.children: list[StageNode] = []  # a tuple once sealed
        self.fail_fast = False
        self.branch_id: str | None = None
        #: the stage's ``Retry`` policy (``None``: the run's default, if any)
        self.retry: Any = None
        #: a map stage's ``flowchart._chart.mapping.MapSpec`` (``None`` for every other stage)
        self.map: Any = None

    def __setattr__(self, name: str, value: Any) -> None:
        if getattr(self, "_sealed", False):
            raise AttributeError(f"stage '{self.id}' belongs to a built chart: its {name!r} cannot change")
        object.__setattr__(self, name, value)

    def seal(self) -> None:
        """Freeze this node (``FlowChartBuilder.build``): its fields and containers become read-only."""
        if not self._sealed:
            object.__setattr__(self, "branches", MappingProxyType(dict(self.branches)))
            object.__setattr__(self, "children", tuple(self.children))
            object.__setattr__(self, "_sealed", True)

    @property
    def is_async(self) -> bool:
        """True when any callable of this node is a coroutine function."""
        return any(c is not None and c.is_async for c in (self.fn, self.execute, self.resume, self.answer))

    def __repr__(self) -> str:
        return f"<StageNode {self.kind} {self.id!r} ({self.name})>"


def iter_nodes(root: StageNode) -> list[StageNode]:
    """Every node reachable from ``root`` (not following loop edges), in a stable order."""
    seen: dict[int, StageNode] = {}
    stack = [root]
    order: list[StageNode] = []
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen[id(node)] = node
        order.append(node)
        followers: list[StageNode] = []
        followers.extend(node.branches.values())
        followers.extend(node.children)
        if node.next is not None:
            followers.append(node.next)
        stack.extend(reversed(followers))
    return order
