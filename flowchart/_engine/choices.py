"""Deciders and selectors: turn what a choosing stage returned into where control goes.

Laws: the stage has already committed (a decider commits BEFORE its branch is resolved);
an unknown branch id falls back to the default branch, or is an error naming the decider,
the id and the branches there are; a selector's unknown ids are an error listing what is
available, and an empty selection runs nothing. Both errors are footprintjs's sentence
(the stage's NAME, footprintjs's nouns) followed by the fix; as in footprintjs they
write no narrative line (no ``on_error``): the run fails with them (``on_run_failed``).
What the stage returned is recorded on its commit (``decision_record``), so a trace can
say why a branch was taken.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowchart._core.decide import Decision, Selection
from flowchart._core.errors import RunError
from flowchart._core.nodes import StageNode
from flowchart._core.values import NotJsonSafe, copy_json
from flowchart.events import DecisionEvent, ForkEvent, SelectedEvent

if TYPE_CHECKING:
    from flowchart._engine.traversal import Hop, Traverser


def decision_record(output: Any) -> dict[str, Any]:
    """What a decider or selector returned, as recorded on its commit (JSON-safe)."""
    if isinstance(output, Decision):
        if output._owned:  # decide()'s evidence is plain JSON built for the record: no second copy
            return {"chosen": output.branch, "evidence": output.evidence}
        record: dict[str, Any] = {"chosen": output.branch, "evidence": output.evidence}
    elif isinstance(output, Selection):
        if output._owned:
            return {"selected": list(output.branches), "evidence": output.evidence}
        record = {"selected": list(output.branches), "evidence": output.evidence}
    elif isinstance(output, list | tuple):
        record = {"selected": list(output)}
    else:
        record = {"chosen": output}
    try:
        return copy_json(record)
    except NotJsonSafe:
        return {key: repr(value) for key, value in record.items()}


def _unreported(traverser: Traverser, node: StageNode, rid: str, error: RunError) -> None:
    """Fail the run with ``error`` at ``node`` without a stage error event (footprintjs fires none)."""
    traverser.run.reported_errors[id(error)] = (traverser.prefix + node.id, rid)


def choose_branch(traverser: Traverser, node: StageNode, rid: str, output: Any, cont: StageNode | None) -> Hop:
    """Resolve a decider's output to a branch and hop there (the decider already committed)."""
    if traverser.stopped:
        traverser.executed(node, rid, "decider")
        return traverser.after_stop(node, rid)
    evidence = None
    if isinstance(output, Decision):
        branch_id, evidence = output.branch, output.evidence
    else:
        branch_id = output
    branch = node.branches.get(branch_id) if isinstance(branch_id, str) else None
    if branch is None:
        if node.default_branch is None:
            error = RunError(
                f"Scope-based decider '{node.name}' returned branch ID '{branch_id}' which doesn't match any "
                f"child and no default branch is set — return one of its branch ids ({', '.join(node.branches)}) "
                "or call set_default(branch_id)",
                stage_id=traverser.prefix + node.id,
            )
            _unreported(traverser, node, rid, error)
            raise error
        branch = node.branches[node.default_branch]
    chosen = branch
    traverser.flow(
        "on_decision",
        node,
        rid,
        lambda c: DecisionEvent(c, node.name, chosen.name, chosen.id, None, traverser.described(node, rid), evidence),
    )
    traverser.executed(node, rid, "decider")
    after = node.next if node.next is not None else cont
    return branch, after, traverser.prefix + node.id


def choose_selected(traverser: Traverser, node: StageNode, rid: str, output: Any) -> list[StageNode]:
    """Resolve a selector's output to the branches to run (the selector already committed)."""
    if traverser.stopped:
        traverser.executed(node, rid, "selector")
        traverser.after_stop(node, rid)
        return []
    evidence = None
    if isinstance(output, Selection):
        ids, evidence = list(output.branches), output.evidence
    elif isinstance(output, str):
        ids = [output]
    elif output is None:
        ids = []
    else:
        ids = list(output)
    unknown = [i for i in ids if i not in node.branches]
    if unknown:
        error = RunError(
            f"Scope-based selector '{node.name}' returned unknown child IDs: {', '.join(map(str, unknown))}. "
            f"Available: {', '.join(node.branches)} — return ids of its branches only",
            stage_id=traverser.prefix + node.id,
        )
        _unreported(traverser, node, rid, error)
        raise error
    chosen = [node.branches[i] for i in dict.fromkeys(ids)]
    traverser.flow(
        "on_selected",
        node,
        rid,
        lambda c: SelectedEvent(
            c, node.name, tuple(b.name for b in chosen), tuple(b.id for b in chosen), len(node.branches), evidence
        ),
    )
    traverser.executed(node, rid, "selector")
    if chosen:
        traverser.flow("on_fork", node, rid, lambda c: ForkEvent(c, node.name, tuple(b.name for b in chosen)))
    return chosen
