"""The chart's entry points, from the layer that can reach everything a run may need.

Law: ``FlowChart.run`` / ``arun`` / ``resume`` / ``aresume`` / ``resume_run`` /
``stream`` / ``astream`` / ``fork`` check their ``RunOptions`` and hand them here, and each is one
decision: a run with ``options.store`` is recorded in the store (``store/runs.py``), a
stream is planned (``stream.py``), anything else runs in memory (``_engine/entry.py``).
The structure (``chart.py``) is below all three, so it does not import this module: this
module hands itself to every chart it builds — the public ``flow_chart`` and
``FlowChartBuilder`` are defined here, and pass ``launcher=`` to the structure's builder
(no import-time binding). ``resume_run`` without ``store=`` finds the store by run id
(``store_of``, the store layer's memory of which store recorded which run), never on the chart.

A stage's write mistake (``ScopeWriteError``: a run-input key, a value that is not JSON)
reaches the caller with a traceback that ends at the stage's line that wrote: the engine's
frames between ``chart.run`` and the stage function (a dozen, all the library's) and the
scope's below it are dropped, so the error shows under that line, not after thirty lines
of traversal.
"""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Awaitable, Callable
from functools import wraps
from types import TracebackType
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from flowchart._chart import builder as _structure
from flowchart._chart.stage_nodes import StageFn
from flowchart._core.errors import RunError, ScopeWriteError
from flowchart._core.nodes import Pausable
from flowchart._core.options import RunOptions
from flowchart._core.retry import Retry
from flowchart._engine.entry import resume_run as _resume_coroutine
from flowchart._engine.entry import resume_sync, run_sync, start_run
from flowchart._rerun import fork_chart
from flowchart.store.runs import resume_chart, run_chart, store_of
from flowchart.stream import AsyncRunStream, RunStream, chart_plan

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart, Launcher
    from flowchart._core.pause import Checkpoint
    from flowchart._record.result import RunResult

__all__ = [
    "FlowChartBuilder",
    "aresume",
    "arun",
    "astream",
    "flow_chart",
    "fork",
    "resume",
    "resume_run",
    "run",
    "stream",
]

_P = ParamSpec("_P")
_R = TypeVar("_R")
#: the folders whose frames a write mistake's traceback leaves out: this package, the stdlib (asyncio)
_LIBRARY = (os.path.dirname(os.path.abspath(__file__)) + os.sep, sysconfig.get_paths()["stdlib"] + os.sep)


def _library(tb: TracebackType) -> bool:
    return os.path.abspath(tb.tb_frame.f_code.co_filename).startswith(_LIBRARY)


def _from_the_stage(tb: TracebackType | None) -> TracebackType | None:
    """``tb`` from its first frame outside the library (the stage's) to its last (the line that
    wrote: the scope's frames below it are dropped too); ``tb`` whole when no frame is the caller's."""
    first = tb
    while first is not None and _library(first):
        first = first.tb_next
    if first is None:
        return tb
    last, walk = first, first.tb_next
    while walk is not None:
        if not _library(walk):
            last = walk
        walk = walk.tb_next
    last.tb_next = None
    return first


def _short_write_errors(entry: Callable[_P, _R]) -> Callable[_P, _R]:
    """``entry`` re-raising a ``ScopeWriteError`` with its traceback from the stage on (module law)."""

    @wraps(entry)
    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return entry(*args, **kwargs)
        except ScopeWriteError as exc:
            raise exc.with_traceback(_from_the_stage(exc.__traceback__)) from exc.__cause__

    return call


def _short_write_errors_async(entry: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """``_short_write_errors`` for a coroutine entry point."""

    @wraps(entry)
    async def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await entry(*args, **kwargs)
        except ScopeWriteError as exc:
            raise exc.with_traceback(_from_the_stage(exc.__traceback__)) from exc.__cause__

    return call


@_short_write_errors
def run(chart: FlowChart, input: Any, options: RunOptions) -> RunResult:
    """``chart.run``: recorded in ``options.store`` when there is one, else in memory."""
    if options.store is not None:
        return run_chart(chart, input, options)
    return run_sync(chart, input, options)


@_short_write_errors_async
async def arun(chart: FlowChart, input: Any, options: RunOptions) -> RunResult:
    """``chart.arun``: on the caller's event loop (fork children run concurrently)."""
    return await start_run(chart, input, options, concurrent=True)


@_short_write_errors
def resume(chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions) -> RunResult:
    """``chart.resume``: the paused stage's ``resume(scope, input)``, then the rest."""
    return resume_sync(chart, checkpoint, input, options)


@_short_write_errors_async
async def aresume(chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions) -> RunResult:
    """``chart.aresume``: ``resume`` on the caller's event loop."""
    return await _resume_coroutine(chart, checkpoint, input, options, concurrent=True)


@_short_write_errors
def resume_run(chart: FlowChart, run_id: str, input: Any, options: RunOptions) -> RunResult:
    """``chart.resume_run``: answer the stored run's pause once and run on, in ``options.store`` or
    else the store this process recorded ``run_id`` in."""
    store = options.store if options.store is not None else store_of(run_id)
    if store is None:
        raise RunError(f"resume_run('{run_id}'): no run store — pass store=... (or run this chart with store= first)")
    return resume_chart(chart, store, run_id, input, options.but(store=store))


def stream(chart: FlowChart, input: Any, modes: Any, options: RunOptions) -> RunStream:
    """``chart.stream``: the run's events as it makes them, then its result."""
    return RunStream(chart_plan(chart, input, modes, options))


def astream(chart: FlowChart, input: Any, modes: Any, options: RunOptions) -> AsyncRunStream:
    """``chart.astream``: ``stream`` on the caller's event loop."""
    return AsyncRunStream(chart_plan(chart, input, modes, options))


@_short_write_errors
def fork(chart: FlowChart, source: Any, at: int | tuple[int, ...], patch: Any, options: RunOptions) -> RunResult:
    """``chart.fork``: continue a recorded run after commit ``at`` (``forking.py``), recorded in
    ``options.store`` with its lineage when there is one."""
    return fork_chart(chart, source, at, patch, options)


class FlowChartBuilder(_structure.FlowChartBuilder):
    """Builds a chart stage by stage (``flowchart.FlowChartBuilder``): the structure's builder,
    whose charts run through this module's entry points."""

    def __init__(self) -> None:
        super().__init__(launcher=cast("Launcher", sys.modules[__name__]))


def flow_chart(
    name: str, fn: StageFn | Pausable, stage_id: str, *, description: str | None = None, retry: Retry | None = None
) -> FlowChartBuilder:
    """Start a chart at its root stage: ``flow_chart("Seed", seed, "seed")`` (``retry``: its ``Retry``)."""
    builder = FlowChartBuilder()
    builder.start(name, fn, stage_id, description=description, retry=retry)
    return builder
