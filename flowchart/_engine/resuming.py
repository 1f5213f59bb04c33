"""Resuming a paused run: walk the checkpoint's frames back down, level by level.

Laws: no stage body runs twice — the paused stage's ``resume`` half runs instead of its
``execute``; a mount frame re-enters its subflow from the stored state (the input mapper is
not run again) and merges it back when it completes; a fork frame resumes the paused child
and then goes on after the fork (the child's recorded continuation, the stage after its
parent, is never followed from the child itself). A ``resume`` half may return
``pause_again(data)`` to pause once more at the same stage. The resume event fires before
anything runs. A pausable with an ``answer`` half records the answer first, as its own
commit (its own runtime id), so the resume's writes have the recorded answer among their
causal inputs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

from flowchart._core.pause import PauseAgain, PauseSignal, ResumeFrame
from flowchart._engine import retrying
from flowchart._engine.redacting import shown_state
from flowchart._engine.subflows import ResumePoint
from flowchart.events import ResumeEvent, TraversalContext

if TYPE_CHECKING:
    from flowchart._engine.traversal import Hop, Traverser


def announce_resume(
    traverser: Traverser, frames: list[ResumeFrame], given: Any, paused_run_id: str = "", checkpoint: Any = None
) -> None:
    """Fire ``on_resume`` for the paused stage before anything runs (footprintjs order)."""
    chart, prefix, path = traverser.chart, traverser.prefix, list(traverser.subflow_path)
    for frame in frames[:-1]:
        if frame.kind == "mount":
            mount = chart.find(frame.stage_id[len(prefix) :]).mount
            chart, prefix = mount.chart, frame.stage_id + "/"
            path.append(frame.stage_id)
    leaf = chart.find(frames[-1].stage_id[len(prefix) :])
    full = prefix + leaf.id
    ctx = TraversalContext(
        run_id=traverser.run.run_id,
        stage_id=full,
        runtime_stage_id=f"{full}#{traverser.run.counter}",
        stage_name=leaf.name,
        subflow_path=tuple(path),
        depth=len(path),
    )
    recovery = getattr(checkpoint, "recovery", None)
    if recovery is not None and traverser.run.redacting:  # the values it restores are real: shown as events show them
        recovery = attrs.evolve(recovery, restore=shown_state(traverser.run, dict(recovery.restore)))
    event = ResumeEvent(ctx, leaf.name, full, given is not None, paused_run_id, recovery)
    traverser.run.observers.emit("on_resume", event)


async def _record_answer(traverser: Traverser, node: Any, namespace: tuple[str, ...], given: Any) -> None:
    """Run ``node``'s ``answer`` half over ``given`` and commit it (a stage that raises fails the run)."""
    rid = traverser.stamp(node, visit=False)
    _output, txn, error = await traverser.call_stage(node, node.answer, rid, namespace, given)
    traverser.commit(node, rid, txn)
    if error is not None:
        traverser.fail(node, rid, error)
        retrying.unresumable(traverser.run, error, f"the answer half of '{rid}' failed")
        raise error
    traverser.executed(node, rid, "answer")


async def resume(traverser: Traverser, frames: list[ResumeFrame], index: int, given: Any, checkpoint: Any) -> Any:
    """Continue a paused run at ``frames[index]`` (this level) without re-running any body."""
    if index == 0 and traverser.run.observers.wants("on_resume"):
        announce_resume(traverser, frames, given, str(getattr(checkpoint, "run_id", "")), checkpoint)
    frame = frames[index]
    node = traverser.chart.find(frame.stage_id[len(traverser.prefix) :])
    # a fork or selector child goes nowhere after itself: its parent's frame goes on
    in_fork = index > 0 and frames[index - 1].kind == "fork"
    cont = None if in_fork else frame.continuation_node(traverser.chart, traverser.prefix)
    namespace = tuple(frame.namespace)
    if frame.kind == "stage" and checkpoint.recovery is not None and index == len(frames) - 1:
        # the re-run takes the failed execution's place on this level: it walks on from there as
        # that level's own walk, which frames a later pause or failure itself (a frame pushed here
        # too would name the re-run stage a second time: [<failed stage>, <paused stage>])
        return await retrying.rerun(traverser, node, frame, cont, checkpoint.recovery)
    repause: PauseSignal | None = None
    forks = False  # a pausable with fork children runs them after its resume half, as after its execute
    hop: Hop = (None, None, None)
    try:
        if frame.kind == "stage":
            if node.answer is not None:
                await _record_answer(traverser, node, namespace, given)
            rid = traverser.stamp(node, visit=False)
            assert node.resume is not None
            output, txn, error = await traverser.attempt(node, node.resume, rid, namespace, given)
            traverser.commit(node, rid, txn)
            if error is not None:
                traverser.fail(node, rid, error)
                # the answer is spent: re-running the resume half would need it again
                retrying.unresumable(traverser.run, error, f"the resume half of '{rid}' failed after its answer")
                raise error
            if isinstance(output, PauseAgain):
                repause = traverser.pause(node, rid, output.data, frame)
            elif node.children:
                forks = True
            else:
                traverser.executed(node, rid, "linear")
                hop = traverser.after_stop_or(node, rid, cont)
        elif frame.kind == "mount":
            rid = traverser.stamp(node, visit=False)
            inside = ResumePoint(frames, index + 1, given, checkpoint)
            output, mount_txn, error = await traverser.run_mount(node, rid, namespace, inside)
            traverser.commit(node, rid, mount_txn, replaces=frame.replaces)
            if error is not None:
                traverser.fail(node, rid, error)
                raise error
            if node.children and not traverser.stopped:
                forks = True
            else:
                hop = traverser.after_stop_or(node, rid, cont)
        else:  # "fork": the paused child is the next frame, on this same level
            output = await resume(traverser, frames, index + 1, given, checkpoint)
            hop = (None, None, None) if traverser.stopped else traverser.follow(node, "", cont)
    except PauseSignal as signal:
        signal.push(frame)
        raise
    except Exception as exc:
        retrying.unwind(traverser, node, exc, cont, frame.invoker_stage_id, namespace)
        raise
    if repause is not None:
        raise repause
    if forks:  # outside the try above: a pause in a child is framed by the fork, not by this stage
        try:
            output, hop = await traverser.fork_after(node, rid, output, cont, frame.invoker_stage_id, namespace)
        except Exception as exc:
            retrying.unwind(traverser, node, exc, cont, frame.invoker_stage_id, namespace)
            raise
    nxt, nxt_cont, invoker = hop
    if nxt is None or traverser.stopped:
        return output
    return await traverser.walk(nxt, nxt_cont, invoker)
