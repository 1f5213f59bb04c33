"""A chart's mounts with options of their own (an agent mounted with ``add_agent``): the run's
redaction rule with each mount's rule as a scope.

Law: a mount that carries a ``redaction`` rule (``SubflowMount.redaction``) adds it as the scope
of its mount path (its id; the mounted chart's own scopes go below it, nested mounts included):
inside that subflow the run's rule AND the mount's apply (``Redaction.within``: redaction
itself stays in ``_core/redaction.py``). A mount's ``hidden_outputs`` (the parent keys its
output mapper fills from values its rule hides) are hidden in the level it writes to: the
run's own keys at the top, the enclosing mount's scope below. A chart without such mounts runs
under the rule it was given, unchanged (``None`` stays ``None``).
"""

from __future__ import annotations

from collections.abc import Iterable

from flowchart._core.nodes import StageNode
from flowchart._core.redaction import Redaction

Scopes = tuple[dict[str, Redaction], dict[str, set[str]]]


def mount_scopes(nodes: Iterable[StageNode]) -> Scopes:
    """(mount path -> its rule, level path (``""``: the run's) -> parent keys hidden there) of a
    chart whose stages are ``nodes``; a mounted chart's own are read from it (``FlowChart.mounts``,
    made when it was built), under the mount's path."""
    scopes: dict[str, Redaction] = {}
    outputs: dict[str, set[str]] = {}
    for node in nodes:
        mount = node.mount
        if mount is None:
            continue
        if mount.redaction is not None and mount.redaction.active:
            scopes[node.id] = mount.redaction
        if mount.hidden_outputs:
            outputs.setdefault("", set()).update(mount.hidden_outputs)
        inner_scopes, inner_outputs = mount.chart.mounts
        for path, rule in inner_scopes.items():
            scopes[f"{node.id}/{path}"] = rule
        for level, keys in inner_outputs.items():
            outputs.setdefault(f"{node.id}/{level}" if level else node.id, set()).update(keys)
    return scopes, outputs


def scoped_rule(mounts: Scopes, given: Redaction | None) -> Redaction | None:
    """The rule a run of a chart with ``mounts`` records under: ``given`` with every mount's
    scope (the law)."""
    scopes, outputs = dict(mounts[0]), mounts[1]
    if not scopes and not outputs:
        return given
    for level, keys in outputs.items():
        if level:
            scopes[level] = scopes[level].union(Redaction(keys=keys)) if level in scopes else Redaction(keys=keys)
    top = Redaction(keys=outputs.get("", set()), scopes=scopes)
    return top if given is None else given.union(top)


__all__ = ["Scopes", "mount_scopes", "scoped_rule"]
