"""The chart's entry points, from the layer that can reach everything a run may need.

Law: ``FlowChart.run`` / ``arun`` / ``resume`` / ``aresume`` / ``resume_run`` /
``stream`` / ``astream`` / ``fork`` check their ``RunOptions`` and hand them here, and each is one
decision: a run with ``options.store`` is recorded in the store (``store/runs.py``), a
stream is planned (``stream.py``), anything else runs in memory (``engine/entry.py``).
The structure (``chart.py``) is below all three, so it does not import this module: the
façade (``flowchart/__init__.py``) binds it into ``FlowChart`` once with
``bind_launcher``. ``resume_run`` without ``store=`` finds the store by run id
(``store_of``), never on the chart.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .engine.entry import resume_run as _resume_coroutine
from .engine.entry import resume_sync, run_sync, start_run
from .errors import RunError
from .forking import fork_chart
from .options import RunOptions
from .store.runs import resume_chart, run_chart, store_of
from .stream import AsyncRunStream, RunStream, chart_plan

if TYPE_CHECKING:
    from .chart import FlowChart
    from .pause import Checkpoint
    from .result import RunResult

__all__ = ["aresume", "arun", "astream", "fork", "resume", "resume_run", "run", "stream"]


def run(chart: FlowChart, input: Any, options: RunOptions) -> RunResult:
    """``chart.run``: recorded in ``options.store`` when there is one, else in memory."""
    if options.store is not None:
        return run_chart(chart, input, options)
    return run_sync(chart, input, options)


async def arun(chart: FlowChart, input: Any, options: RunOptions) -> RunResult:
    """``chart.arun``: on the caller's event loop (fork children run concurrently)."""
    return await start_run(chart, input, options, concurrent=True)


def resume(chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions) -> RunResult:
    """``chart.resume``: the paused stage's ``resume(scope, input)``, then the rest."""
    return resume_sync(chart, checkpoint, input, options)


async def aresume(chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions) -> RunResult:
    """``chart.aresume``: ``resume`` on the caller's event loop."""
    return await _resume_coroutine(chart, checkpoint, input, options, concurrent=True)


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


def fork(chart: FlowChart, source: Any, at: int | tuple[int, ...], patch: Any, options: RunOptions) -> RunResult:
    """``chart.fork``: continue a recorded run after commit ``at`` (``forking.py``), recorded in
    ``options.store`` with its lineage when there is one."""
    return fork_chart(chart, source, at, patch, options)
