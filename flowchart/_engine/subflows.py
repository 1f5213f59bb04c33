"""Subflows: a chart mounted as a stage, run in its own state with its own commit log.

Laws: ``input_mapper(parent_state)`` seeds the subflow's state and its ``ctx.args`` (the
keys it reads are the mount's reads, for causal backtracking); without mappers nothing
leaks either way; ``output_mapper(subflow_state, parent_state)`` is merged into the parent
as the mount's ONE commit (lists concatenated unless ``array_merge="replace"``); an inner
``ctx.stop`` ends the parent only with ``propagate_break=True``. A pause inside unwinds
with the subflow's state; its resume (and a fork inside the subflow: a ``Reentry``)
skips the input mapper.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from flowchart._core.context import ReadonlyArgs
from flowchart._core.errors import RunError, RunTimeoutError
from flowchart._core.nodes import StageNode, SubflowMount
from flowchart._core.pause import PauseSignal, ResumeFrame
from flowchart._core.scope import Transaction
from flowchart._core.values import NotJsonSafe, copy_json
from flowchart._engine import retrying
from flowchart._engine.redacting import shown_state
from flowchart._engine.run_state import Run, ScopedRun, SubflowResult, root_run
from flowchart.events import BreakEvent, SubflowEvent

if TYPE_CHECKING:
    from flowchart._engine.traversal import Traverser


class Reentry(Protocol):
    """How a run re-enters a mounted subflow without its input mapper: a resume
    (``ResumePoint``) or a fork inside the subflow (``forkrun.ForkEntry``)."""

    def seed(self, full: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The subflow's state and its ``ctx.args`` at the re-entry."""
        ...

    async def enter(self, inner: Traverser) -> Any:
        """Go on inside the subflow (its traverser ``inner``); return its last output."""
        ...


@attrs.frozen
class ResumePoint:
    """Where a resumed run re-enters a mounted subflow: the paused ``frames``, the ``index``
    of the subflow's first frame in them, the resume input (``given``) and the ``checkpoint``."""

    frames: list[ResumeFrame]
    index: int
    given: Any
    checkpoint: Any

    def seed(self, full: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """The subflow state and args the checkpoint stored for mount ``full``."""
        return copy_json(self.checkpoint.subflow_states[full]), copy_json(self.checkpoint.subflow_args.get(full, {}))

    async def enter(self, inner: Traverser) -> Any:
        """Resume the paused frames inside the subflow."""
        return await inner.resume(self.frames, self.index, self.given, self.checkpoint)


class _ReadTracking(Mapping[str, Any]):
    """A read-only view of a state dict that remembers which keys were read."""

    __slots__ = ("_data", "keys_read")

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data
        self.keys_read: dict[str, None] = {}

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        self.keys_read[key] = None
        return value

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


async def run_mount(
    traverser: Traverser,
    node: StageNode,
    rid: str,
    namespace: tuple[str, ...],
    resume: Reentry | None = None,
) -> tuple[Any, Transaction, Exception | None]:
    """Run a subflow in its own state and log; return the mount's merge-back transaction."""
    mount = node.mount
    assert mount is not None
    full = traverser.prefix + node.id
    run = traverser.run
    txn = Transaction(traverser.state, namespace, traverser.readonly)
    if run.recovery is not None:  # re-running a mount whose own mapper failed
        retrying.seed(run, full, txn)
    if resume is None:
        try:
            mapped = map_input(traverser, node, txn)
        except Exception as exc:
            return None, txn, exc
        inner_args = mapped
    else:
        mapped, inner_args = resume.seed(full)
    entry_state = mapped if resume is None else {}
    inside = scoped(run, mount, full)
    description = mount.chart.root.description or node.description
    traverser.flow(
        "on_subflow_entry",
        node,
        rid,
        lambda c: SubflowEvent(c, node.name, full, description, shown_state(inside, entry_state), mount.quiet_emits),
    )
    if resume is None:
        traverser.executed(node, rid, "subflow-mount")
    inner = type(traverser)(
        inside,
        mount.chart,
        mapped,
        ReadonlyArgs(inner_args),
        prefix=full + "/",
        subflow_path=(*traverser.subflow_path, full),
    )
    inner.loop_limit = mount.max_iterations if mount.max_iterations is not None else traverser.loop_limit
    error: Exception | None = None
    output = None
    try:
        output = await _within_timeout(inner, mount, full, resume)
    except PauseSignal as signal:
        signal.subflow_states[full] = inner.state
        signal.subflow_args[full] = inner.args.to_dict()
        # the paused run's record keeps what the subflow did before the pause
        run.subflow_results.add(
            SubflowResult(full, rid, inner.state, tuple(inner.commit_log), inner.initial, None, node.name)
        )
        raise
    except Exception as exc:
        error = exc
        retrying.note_subflow(run, exc, full, inner)
    run.subflow_results.add(
        SubflowResult(full, rid, inner.state, tuple(inner.commit_log), inner.initial, output, node.name)
    )
    if inner.stopped and mount.propagate_break and error is None:
        traverser.request_stop(inner.stop_reason)
        traverser.flow(
            "on_break",
            node,
            rid,
            lambda c: BreakEvent(c, node.name, inner.stop_reason, propagated_from_subflow=full),
        )
    traverser.flow(
        "on_subflow_exit",
        node,
        rid,
        lambda c: SubflowEvent(c, node.name, full, None, shown_state(inside, inner.state), mount.quiet_emits),
    )
    if error is not None:
        return None, txn, error
    if mount.output_mapper is not None:
        try:
            merge_output(traverser, node, txn, inner.state)
        except Exception as exc:
            return output, txn, exc
    return output, txn, None


def scoped(run: Run, mount: SubflowMount, full: str) -> Run:
    """The run as the subflow at ``full`` sees it: its rule (the run's rule ``within`` its path,
    where a mount's own rule is a scope) and the mount's own deadline; the run itself when
    neither differs (the mount's loop cap is its traverser's: ``Traverser.loop_limit``)."""
    root = root_run(run)
    rule = root.redaction.within(full) if root.redaction.scopes else run.redaction
    if rule is run.redaction and mount.timeout is None:
        return run
    deadline = run.deadline
    timeout = run.timeout
    if mount.timeout is not None:
        own = time.monotonic() + mount.timeout
        if deadline is None or own < deadline:
            deadline, timeout = own, mount.timeout
    return ScopedRun(root, rule, run.max_iterations, deadline, timeout)


async def _within_timeout(inner: Traverser, mount: SubflowMount, full: str, resume: Reentry | None) -> Any:
    """Walk (or re-enter) the subflow; with the mount's own timeout, under it (in an event loop)."""
    walk = inner.walk(mount.chart.root, None, None) if resume is None else resume.enter(inner)
    if mount.timeout is None or not _in_loop():
        return await walk
    try:
        async with asyncio.timeout(mount.timeout):
            return await walk
    except TimeoutError as exc:
        if isinstance(exc, RunTimeoutError):
            raise
        raise RunTimeoutError(
            f"Subflow '{full}' timed out after {mount.timeout} s (its mount's own timeout) in stage "
            f"'{inner.run.current_stage}'",
            stage_id=full,
        ) from None


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def map_input(traverser: Traverser, node: StageNode, txn: Transaction) -> dict[str, Any]:
    mount = node.mount
    assert mount is not None
    if mount.input_mapper is None:
        return {}
    # the keys the mapper reads are the mount's reads: they link the subflow's result
    # back to the parent stages that wrote them (causal backtracking)
    view = _ReadTracking(traverser.state)
    mapped = mount.input_mapper(view)
    txn.note_reads(view.keys_read)
    if mapped is None:
        return {}
    if not isinstance(mapped, dict):
        raise RunError(
            f"input_mapper of subflow '{node.id}' returned {type(mapped).__name__}; it must return a dict "
            "(the subflow's initial state)",
            stage_id=traverser.prefix + node.id,
        )
    try:
        return copy_json(mapped)
    except NotJsonSafe as exc:
        raise RunError(
            f"input_mapper of subflow '{node.id}' returned {exc.what} at {exc.where}; the subflow's "
            "initial state must be JSON-safe",
            stage_id=traverser.prefix + node.id,
        ) from None


def merge_output(traverser: Traverser, node: StageNode, txn: Transaction, inner_state: dict[str, Any]) -> None:
    mount = node.mount
    assert mount is not None and mount.output_mapper is not None
    patch = mount.output_mapper(MappingProxyType(inner_state), MappingProxyType(traverser.state))
    if patch is None:
        return
    if not isinstance(patch, dict):
        raise RunError(
            f"output_mapper of subflow '{node.id}' returned {type(patch).__name__}; it must return a dict "
            "of parent keys to write",
            stage_id=traverser.prefix + node.id,
        )
    for key, value in patch.items():
        current = txn.raw(key)
        if mount.array_merge == "concat" and isinstance(value, list) and isinstance(current, list):
            txn.set(key, [*current, *value])
        else:
            txn.set(key, value)
