"""Forks and selected branches: children that run side by side.

Laws: each child runs in its own namespace ``runs/<child_id>`` and sees the committed
state plus its own writes; children run concurrently when the run has an event loop;
their commits are applied and appended in DECLARATION order once all have settled, so the
log is the same on every run. With ``fail_fast=False`` a child's error is collected in the
fork's output bundle (``{"id", "result": <the exception>, "is_error": True}``, as
footprintjs keeps the Error object); with ``fail_fast=True`` it fails the run. A child that pauses pauses
the run once its siblings are done; two children pausing at once is refused.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from flowchart._core.errors import RunError
from flowchart._core.nodes import StageNode
from flowchart._core.pause import PauseSignal, ResumeFrame
from flowchart._core.scope import Transaction

if TYPE_CHECKING:
    from flowchart._engine.traversal import Traverser


async def run_children(
    traverser: Traverser, parent: StageNode, children: list[StageNode], parent_rid: str, namespace: tuple[str, ...]
) -> dict[str, Any]:
    """Run fork/selector children, then commit them in declaration order."""
    if not children:
        return {}
    rids = [traverser.stamp(child) for child in children]

    async def one(child: StageNode, rid: str) -> tuple[Any, Transaction | None, BaseException | None]:
        try:
            if child.kind == "subflow":
                return await traverser.run_mount(child, rid, namespace)
            call = child.execute if child.kind == "pausable" else child.fn
            assert call is not None
            if child.retry is None and traverser.run.retry is None:
                return await traverser.call_stage(child, call, rid, (*namespace, "runs", child.id))
            return await traverser.attempt(child, call, rid, (*namespace, "runs", child.id))
        except PauseSignal as signal:  # a subflow child paused inside
            frame = ResumeFrame.at(
                traverser.prefix + child.id, "mount", None, traverser.prefix + parent.id, namespace, traverser.prefix
            )
            signal.push(frame)
            return None, None, signal

    if traverser.run.concurrent and len(children) > 1:
        results = await asyncio.gather(*(one(c, r) for c, r in zip(children, rids, strict=True)))
    else:
        results = [await one(c, r) for c, r in zip(children, rids, strict=True)]

    bundle: dict[str, Any] = {}
    pause: PauseSignal | None = None
    also_paused: list[str] = []  # a run pauses at one stage: a second pause is refused below
    first_error: Exception | None = None
    for child, rid, (output, txn, error) in zip(children, rids, results, strict=True):
        if isinstance(error, PauseSignal):
            if pause is None:
                pause = error
            else:
                also_paused.append(traverser.prefix + child.id)
            continue
        traverser.commit(child, rid, txn)
        if error is not None:
            assert isinstance(error, Exception)
            traverser.fail(child, rid, error)
            first_error = first_error or error
            bundle[child.id] = {"id": child.id, "result": error, "is_error": True}
            continue
        if child.kind == "pausable" and output is not None:
            if pause is not None:
                also_paused.append(traverser.prefix + child.id)
                continue
            ns = (*namespace, "runs", child.id)
            # the continuation is the stage after the parent (footprintjs records it); the
            # resume never follows it from the child — the fork frame goes on after the fork
            frame = ResumeFrame.at(
                traverser.prefix + child.id, "stage", parent.next, traverser.prefix + parent.id, ns, traverser.prefix
            )
            pause = traverser.pause(child, rid, output, frame)
            continue
        traverser.executed(child, rid, "subflow-mount" if child.kind == "subflow" else "linear")
        bundle[child.id] = {"id": child.id, "result": output, "is_error": False}
    if first_error is not None and parent.fail_fast:
        raise first_error  # a failed fail-fast fork fails the run, even if a child paused
    if pause is not None:
        if also_paused:
            raise RunError(
                f"Children {', '.join(repr(c) for c in [pause.frames[0].stage_id, *also_paused])} of "
                f"'{traverser.prefix + parent.id}' all paused, but a run pauses at one stage at a time: let at "
                "most one child of a fork or selector pause (the others' execute returns None)",
                stage_id=traverser.prefix + parent.id,
            )
        raise pause
    return bundle
