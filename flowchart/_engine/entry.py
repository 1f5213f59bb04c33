"""The engine's entry points: from a chart, an input and ``RunOptions`` to a ``RunResult``.

``start_run`` / ``resume_run`` are the coroutines; ``run_sync`` / ``resume_sync`` drive them
without an event loop when nothing awaits. The run's shared state is ``run_state.py``.

Laws:
- The run input is validated (a dict of JSON-safe values, or ``None``) before any stage
  runs; its keys are read-only state names.
- A run ends in exactly one of: ``on_run_end`` and a result; a pause (no run-end event,
  a result with ``paused=True`` and a checkpoint); ``on_run_failed`` and the stage's own
  error re-raised unchanged (a timeout becomes ``RunTimeoutError`` naming the stage).
- A checkpoint from another chart is refused before anything runs, naming both fingerprints.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.context import ReadonlyArgs
from flowchart._core.coroutines import run_coroutine
from flowchart._core.errors import CheckpointError, RunTimeoutError
from flowchart._core.failure import RunFailure, attach
from flowchart._core.nodes import StageNode
from flowchart._core.options import RunOptions
from flowchart._core.pause import Checkpoint, PauseSignal, check_consistency, check_counters
from flowchart._core.values import NotJsonSafe, copy_json
from flowchart._engine.collector import young_collections_only
from flowchart._engine.observers import NO_OBSERVERS, Observers
from flowchart._engine.redacting import shown_state
from flowchart._engine.retrying import FailureSite
from flowchart._engine.run_state import Run
from flowchart._engine.traversal import Traverser
from flowchart._record.result import RunResult
from flowchart.events import ROOT_CONTEXT_ID, RunEvent, TraversalContext

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart


def _run_input(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise TypeError(f"run input must be a dict (it becomes ctx.args) or None, got {type(value).__name__}")
    try:
        return copy_json(dict(value))
    except NotJsonSafe as exc:
        raise TypeError(f"run input is not JSON-safe: {exc.what} at input{exc.where}") from None


def _root_context(run: Run) -> TraversalContext:
    return TraversalContext(run.run_id, ROOT_CONTEXT_ID, f"{ROOT_CONTEXT_ID}#0", ROOT_CONTEXT_ID)


def save_states(recorders: Iterable[Any]) -> dict[str, Any]:
    """What each recorder with ``save_state()`` and an ``id`` carries across a pause (JSON-safe)."""
    states = {}
    for recorder in recorders:
        save, rid = getattr(recorder, "save_state", None), getattr(recorder, "id", None)
        if callable(save) and isinstance(rid, str):
            states[rid] = copy_json(save())
    return states


def load_states(recorders: Iterable[Any], states: Mapping[str, Any]) -> None:
    """Hand each recorder with ``load_state`` its saved state, before anything runs; a state
    that is not the recorder's shape is a ``CheckpointError`` naming it."""
    for recorder in recorders:
        load, rid = getattr(recorder, "load_state", None), getattr(recorder, "id", None)
        if callable(load) and isinstance(rid, str) and rid in states:
            try:
                load(states[rid])
            except ValueError as exc:
                path = f"$.recorder_states.{rid}"
                raise CheckpointError(f"Invalid checkpoint: {exc} @ {path}", path=path) from None


def _make_run(options: RunOptions, concurrent: bool, checkpoint: Checkpoint | None = None) -> Run:
    observers = Observers(options.recorders) if options.recorders else NO_OBSERVERS
    if checkpoint is not None:
        load_states(options.recorders, checkpoint.recorder_states)
    if checkpoint is None:
        return Run(options, observers=observers, concurrent=concurrent)
    return Run(
        options,
        observers=observers,
        concurrent=concurrent,
        counter=checkpoint.execution_count,
        visit_counts=checkpoint.visit_counts,
        loop_counts=checkpoint.loop_counts,
    )


async def _finish(
    chart: FlowChart,
    run: Run,
    top: Traverser,
    body: Callable[[], Awaitable[Any]],
    run_input: dict[str, Any],
) -> RunResult:
    observers = run.observers
    recorders = list(run.options.recorders)
    try:
        if run.timeout is None:
            output = await body()
        else:
            try:
                async with asyncio.timeout(run.timeout):
                    output = await body()
            except TimeoutError as exc:
                if isinstance(exc, RunTimeoutError):
                    raise
                raise RunTimeoutError(
                    f"Run timed out after {run.timeout} s in stage '{run.current_stage}'", stage_id=run.current_stage
                ) from None
    except PauseSignal as signal:
        checkpoint = Checkpoint.from_signal(
            signal,
            state=top.state,
            run_input=run_input,
            run_id=run.run_id,
            execution_count=run.counter,
            visit_counts=run.visit_counts,
            loop_counts=run.loop_counts,
            fingerprint=chart.fingerprint,
            recorder_states=save_states(recorders),
        )
        return RunResult.of(chart, run, top, signal.pause_data, recorders, run_input, checkpoint)
    except BaseException as exc:
        if observers.any:
            observers.emit("on_run_failed", RunEvent(_root_context(run), None, exc))
        _record_failure(chart, run, top, exc, run_input)
        raise
    if observers.any:
        observers.emit("on_run_end", RunEvent(_root_context(run), output))
    return RunResult.of(chart, run, top, output, recorders, run_input, None)


def _record_failure(chart: FlowChart, run: Run, top: Traverser, exc: BaseException, run_input: dict[str, Any]) -> None:
    """Let the error carry the run as far as it got (``flowchart._core.failure``): its commits,
    its narrative so far and the stage that raised."""
    if not isinstance(exc, Exception):  # cancellation, interpreter exit: nothing to record
        return
    where = run.reported_errors.get(id(exc))
    if where is None and run.reported_errors:  # a wrapper (ForkError): the first stage that raised
        where = next(iter(run.reported_errors.values()))
    stage_id, rid = where if where is not None else (getattr(exc, "stage_id", None) or run.current_stage or None, None)
    failure = RunFailure.of(exc, stage_id, rid)
    result = attrs.evolve(
        RunResult.of(chart, run, top, None, list(run.options.recorders), run_input, None), failure=failure
    )
    attach(exc, result, failure, _failure_checkpoint(chart, run, top, exc, run_input))


def _failure_checkpoint(
    chart: FlowChart, run: Run, top: Traverser, exc: BaseException, run_input: dict[str, Any]
) -> Checkpoint | None:
    """The checkpoint that resumes the failed run at the stage that failed (``None``: no single one)."""
    site = run.failure_site
    if not isinstance(site, FailureSite) or site.error is not exc or site.broken or not site.frames:
        return None
    if site.pending_mount is not None or site.recovery is None:
        return None
    leaf = site.frames[-1]
    return Checkpoint(
        shared_state=dict(top.state),
        paused_stage_id=leaf.stage_id,
        subflow_path=[f.stage_id for f in site.frames if f.kind == "mount"],
        pause_data=None,
        subflow_states={k: dict(v) for k, v in site.subflow_states.items()},
        execution_count=run.counter,
        visit_counts=dict(run.visit_counts),
        invoker_stage_id=leaf.invoker_stage_id,
        continuation_stage_id=leaf.continuation_stage_id,
        paused_at=time.time(),
        chart_fingerprint=chart.fingerprint,
        run_id=run.run_id,
        run_input=run_input,
        subflow_args=dict(site.subflow_args),
        loop_counts=dict(run.loop_counts),
        frames=list(site.frames),
        recovery=site.recovery,
    )


async def start_run(chart: FlowChart, input: Any, options: RunOptions, *, concurrent: bool) -> RunResult:
    """Run ``chart`` from its root with ``options`` (checked when they were made)."""
    run_input = _run_input(input)
    run = _make_run(options, concurrent)
    top = Traverser(run, chart, {}, ReadonlyArgs.owned(run_input), readonly=run_input)
    if run.observers.any:
        run.observers.emit("on_run_start", RunEvent(_root_context(run), shown_state(run, run_input)))
    with young_collections_only():
        return await _finish(chart, run, top, lambda: top.walk(chart.root, None, None), run_input)


def check_checkpoint(chart: FlowChart, checkpoint: Any) -> Checkpoint:
    """Refuse a checkpoint that is not one, is from another chart, or names unknown stages."""
    if not isinstance(checkpoint, Checkpoint):
        raise CheckpointError(
            f"resume() needs a Checkpoint (e.g. Checkpoint.from_json(text)), got {type(checkpoint).__name__}"
        )
    if checkpoint.chart_fingerprint != chart.fingerprint:
        raise CheckpointError(
            f"Checkpoint belongs to another chart: its fingerprint is {checkpoint.chart_fingerprint[:16]}… "
            f"but this chart's is {chart.fingerprint[:16]}…; resume it on the chart that paused "
            "(same stages, same structure)",
            path="$.chart_fingerprint",
        )
    check_consistency(checkpoint)  # a hand-built or edited Checkpoint gets the from_dict checks
    _check_frames(chart, checkpoint)
    _check_counted(chart, checkpoint)
    check_counters(checkpoint)  # after the frames: their stages exist, now they must have run
    for name in ("subflow_states", "subflow_args", "recorder_states"):
        _copy_field(checkpoint, name)
    return checkpoint


def _copy_field(checkpoint: Checkpoint, name: str) -> Any:
    """A private copy of a checkpoint field; a non-JSON value (an edited checkpoint) is refused."""
    try:
        return copy_json(getattr(checkpoint, name))
    except NotJsonSafe as exc:
        path = f"$.{name}{exc.where}"
        raise CheckpointError(f"Invalid checkpoint: expected a JSON value: {exc.what} @ {path}", path=path) from None


def _check_frames(chart: FlowChart, checkpoint: Checkpoint) -> None:
    """Every frame must name a stage of the right kind on its level, before anything runs."""
    level, prefix = chart, ""
    previous: StageNode | None = None
    for index, frame in enumerate(checkpoint.frames):
        where = f"$.frames[{index}]"
        what = "paused stage" if frame.kind == "stage" else "stage"
        node = _local(chart, level, prefix, frame.stage_id, f"{where}.stage_id", what)
        expected = {"stage": "a pausable stage", "mount": "a subflow mount", "fork": "a fork or selector"}
        failed_leaf = checkpoint.recovery is not None and index == len(checkpoint.frames) - 1
        fits = {
            "stage": node.kind == "pausable" or (failed_leaf and node.kind != "loop"),
            "mount": node.kind == "subflow",
            "fork": bool(node.children) or node.kind == "selector",
        }[frame.kind]
        if not fits:
            raise CheckpointError(
                f"Cannot resume: stage '{frame.stage_id}' is a {node.kind}, but the checkpoint has it as "
                f"{expected[frame.kind]} @ {where}.kind",
                path=f"{where}.kind",
            )
        if previous is not None and node not in (*previous.children, *previous.branches.values()):
            raise CheckpointError(
                f"Cannot resume: stage '{frame.stage_id}' is not a child of '{prefix}{previous.id}' @ {where}.stage_id",
                path=f"{where}.stage_id",
            )
        for name in ("continuation_stage_id", "invoker_stage_id"):
            other = getattr(frame, name)
            if other is not None:
                _local(chart, level, prefix, other, f"{where}.{name}", "stage")
        previous = node if frame.kind == "fork" else None
        if frame.kind == "mount":
            assert node.mount is not None
            level, prefix = node.mount.chart, frame.stage_id + "/"


def _check_counted(chart: FlowChart, checkpoint: Checkpoint) -> None:
    """Every stage the counters name (``visit_counts``, ``loop_counts``: full ids, a subflow's
    stages under its mount id, a map's chart children under ``<map id>/<item>``) is one of the
    chart's: an edited checkpoint naming a stage the chart has not is refused by name."""
    for name in ("visit_counts", "loop_counts"):
        for stage_id in getattr(checkpoint, name):
            if not _names_a_stage(chart, stage_id):
                path = f"$.{name}{_key_path(stage_id)}"
                raise CheckpointError(
                    f"Cannot resume: {name} names stage '{stage_id}', which is not in chart '{chart.name}' @ {path}",
                    path=path,
                )


def _names_a_stage(chart: FlowChart, stage_id: str) -> bool:
    """True when the full id ``stage_id`` names a stage of ``chart`` or of a chart mounted in it."""
    level, parts = chart, stage_id.split("/")
    while parts:
        try:
            node = level.find(parts.pop(0))
        except KeyError:
            return False
        if not parts:
            return True
        if node.mount is None:
            return False
        # a map's chart child runs once per item: <map id>/<item>/<stage>
        if node.map is not None and not parts.pop(0).isdigit():
            return False
        level = node.mount.chart
    return False


def _key_path(key: str) -> str:
    return f".{key}" if key.isidentifier() else f"[{key!r}]"


def _local(chart: FlowChart, level: FlowChart, prefix: str, stage_id: str, path: str, what: str) -> StageNode:
    """The node ``stage_id`` (a full id) names on ``level``, or a ``CheckpointError`` naming it."""
    if stage_id.startswith(prefix):
        try:
            return level.find(stage_id[len(prefix) :])
        except KeyError:
            pass
    inside = f" (inside subflow '{prefix[:-1]}')" if prefix else ""
    raise CheckpointError(
        f"Cannot resume: {what} '{stage_id}' is not in chart '{chart.name}'{inside} @ {path}",
        path=path,
    )


async def resume_run(
    chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions, *, concurrent: bool
) -> RunResult:
    """Resume a paused run of ``chart`` from ``checkpoint`` with ``input`` (or a failed run:
    its checkpoint's ``recovery`` re-runs the stage that failed)."""
    checkpoint = check_checkpoint(chart, checkpoint)
    try:
        given = copy_json(input)
    except NotJsonSafe as exc:
        raise TypeError(f"resume input is not JSON-safe: {exc.what} at input{exc.where}") from None
    run = _make_run(options, concurrent, checkpoint)
    run_input = _copy_field(checkpoint, "run_input")
    state = _copy_field(checkpoint, "shared_state")
    top = Traverser(run, chart, state, ReadonlyArgs.owned(run_input), readonly=run_input)
    frames = list(checkpoint.frames)
    with young_collections_only():
        return await _finish(chart, run, top, lambda: top.resume(frames, 0, given, checkpoint), run_input)


def run_sync(chart: FlowChart, input: Any, options: RunOptions) -> RunResult:
    """``chart.run(input)`` with ``options`` (no store): without an event loop when nothing awaits."""

    def make(concurrent: bool) -> Coroutine[Any, Any, RunResult]:
        return start_run(chart, input, options, concurrent=concurrent)

    return run_coroutine(make, chart.needs_loop or options.timeout is not None)


def resume_sync(chart: FlowChart, checkpoint: Checkpoint, input: Any, options: RunOptions) -> RunResult:
    """``chart.resume(checkpoint, input)`` with ``options``: without an event loop when nothing awaits."""

    def make(concurrent: bool) -> Coroutine[Any, Any, RunResult]:
        return resume_run(chart, checkpoint, input, options, concurrent=concurrent)

    return run_coroutine(make, chart.needs_loop or options.timeout is not None)
