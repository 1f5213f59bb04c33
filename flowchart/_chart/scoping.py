"""A chart's mounts with options of their own (an agent mounted with ``add_agent``): the run's
redaction rule with each mount's rule as a scope.

Law: a mount that carries a ``redaction`` rule (``SubflowMount.redaction``) adds it as the scope
of its mount path (``prefix`` + id, nested mounts included): inside that subflow the run's rule
AND the mount's apply (``Redaction.within``, the one file where redaction happens). A mount's
``hidden_outputs`` (the parent keys its output mapper fills from values its rule hides) are
hidden in the level it writes to: the run's own keys at the top, the enclosing mount's scope
below. A chart without such mounts runs under the rule it was given, unchanged (``None`` stays
``None``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flowchart._core.nodes import iter_nodes
from flowchart._core.redaction import Redaction

if TYPE_CHECKING:
    from flowchart._chart.chart import FlowChart


def mount_scopes(chart: FlowChart, prefix: str = "") -> tuple[dict[str, Redaction], dict[str, set[str]]]:
    """(mount path -> its rule, level path (``""``: the run's) -> parent keys hidden there)."""
    scopes: dict[str, Redaction] = {}
    outputs: dict[str, set[str]] = {}
    for node in iter_nodes(chart.root):
        mount = node.mount
        if mount is None:
            continue
        full = prefix + node.id
        if mount.redaction is not None and mount.redaction.active:
            scopes[full] = mount.redaction
        if mount.hidden_outputs:
            outputs.setdefault(prefix.rstrip("/"), set()).update(mount.hidden_outputs)
        inner_scopes, inner_outputs = mount_scopes(mount.chart, full + "/")
        scopes.update(inner_scopes)
        for level, keys in inner_outputs.items():
            outputs.setdefault(level, set()).update(keys)
    return scopes, outputs


def scoped_rule(chart: FlowChart, given: Redaction | None) -> Redaction | None:
    """The rule a run of ``chart`` records under: ``given`` with every mount's scope (the law)."""
    scopes, outputs = mount_scopes(chart)
    if not scopes and not outputs:
        return given
    for level, keys in outputs.items():
        if level:
            scopes[level] = scopes[level].union(Redaction(keys=keys)) if level in scopes else Redaction(keys=keys)
    top = Redaction(keys=outputs.get("", set()), scopes=scopes)
    return top if given is None else given.union(top)


__all__ = ["mount_scopes", "scoped_rule"]
