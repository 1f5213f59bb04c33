"""Drawing a chart: the networkx graph, the ``FlowChart: ...`` description, mermaid.

Laws: all three are derived from the same nodes, iteratively (no recursion per stage), and
are deterministic. In the graph and in mermaid, subflow stages appear under prefixed ids
(``mount/inner``); loops are ``loop`` edges, so removing them leaves a DAG.

Mermaid is valid for any stage id and name: an id becomes letters, digits and ``_``; one
that mermaid's flowchart grammar reads as a keyword (``end``, ``graph``, ``style``,
``class``, ``click``, ``default``, … — ``MERMAID_RESERVED``, found with mermaid 11's own
parser) gets a trailing ``_``, and two ids that would print alike get ``_2``, ``_3`` in
drawing order; every name and label is quoted, ``"`` written ``#quot;`` and a line break
as a space. ``tests/test_mermaid_parse.py`` parses the output with the real parser.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from flowchart._core.nodes import StageNode, iter_nodes

if TYPE_CHECKING:
    import networkx as nx

    from flowchart._chart.chart import FlowChart


def _node_attrs(node: StageNode) -> dict[str, object]:
    fn = node.fn.fn if node.fn is not None else (node.execute.fn if node.execute is not None else None)
    return {"kind": node.kind, "name": node.name, "description": node.description, "function": fn}


def build_graph(chart: FlowChart) -> nx.DiGraph:
    """Nodes = full stage ids; edges carry ``kind`` (and ``branch`` for branch edges)."""
    import networkx as nx  # imported on first use: it is most of the command line's start-up time

    graph = nx.DiGraph()
    pending: list[tuple[FlowChart, str]] = [(chart, "")]
    while pending:
        current, prefix = pending.pop()
        for node in iter_nodes(current.root):
            if node.kind == "loop":
                continue
            full = prefix + node.id
            graph.add_node(full, **_node_attrs(node))
            if node.next is not None:
                if node.next.kind == "loop":
                    graph.add_edge(full, prefix + (node.next.loop_to or ""), kind="loop")
                else:
                    graph.add_edge(full, prefix + node.next.id, kind="next")
            for branch_id, branch in node.branches.items():
                graph.add_edge(full, prefix + branch.id, kind="branch", branch=branch_id)
            for child in node.children:
                graph.add_edge(full, prefix + child.id, kind="child")
            if node.mount is not None:
                inner_prefix = f"{full}/"
                graph.add_edge(full, inner_prefix + node.mount.chart.root.id, kind="subflow")
                pending.append((node.mount.chart, inner_prefix))
    return graph


def _main_chain(chart: FlowChart) -> list[StageNode]:
    chain = []
    node: StageNode | None = chart.root
    while node is not None and node.kind != "loop":
        chain.append(node)
        node = node.next
    return chain


def _label(node: StageNode) -> str:
    return f"{node.name} — {node.description}" if node.description else node.name


def _describe_lines(chart: FlowChart, indent: str) -> list[str]:
    lines: list[str] = []
    chain = _main_chain(chart)
    step_of = {node.id: i for i, node in enumerate(chain, start=1)}
    for number, node in enumerate(chain, start=1):
        if node.mount is not None:
            lines.append(f"{indent}{number}. [Sub-Execution: {node.name}] — FlowChart: {node.mount.chart.name}")
            lines.extend(_describe_lines(node.mount.chart, indent + "   "))
        elif node.branches:
            kind = "decides" if node.kind == "decider" else "selects"
            text = _label(node) if node.description else f"{node.name} — {kind}"
            lines.append(f"{indent}{number}. {text} (branches: {', '.join(node.branches)})")
            for branch_id, branch in node.branches.items():
                loop = (
                    f" (loops back to {branch.next.loop_to})"
                    if branch.next is not None and branch.next.kind == "loop"
                    else ""
                )
                lines.append(f"{indent}   → {branch_id}: {_label(branch)}{loop}")
        else:
            lines.append(f"{indent}{number}. {_label(node)}")
        if node.children:
            lines.append(f"{indent}   → runs in parallel: {', '.join(c.name for c in node.children)}")
        if node.next is not None and node.next.kind == "loop":
            target = node.next.loop_to or ""
            lines.append(f"{indent}   → loops back to step {step_of.get(target, '?')} ({target})")
    return lines


def describe(chart: FlowChart) -> str:
    """``FlowChart: <root>\\nSteps:\\n1. ...``."""
    return "\n".join([f"FlowChart: {chart.name}", "Steps:", *_describe_lines(chart, "")])


#: words mermaid's flowchart grammar takes as keywords wherever a node id stands (compared
#: lowercased: escaping a word that would pass costs nothing, missing one breaks the drawing)
MERMAID_RESERVED = frozenset(
    [
        "end",
        "subgraph",
        "graph",
        "flowchart",
        "style",
        "linkstyle",
        "classdef",
        "class",
        "click",
        "call",
        "href",
        "default",
        "interpolate",
        "_self",
        "_blank",
        "_parent",
        "_top",
        "acctitle",
        "accdescr",
        "direction",
    ]
)
_NOT_ID = re.compile(r"[^A-Za-z0-9_]")


class _MermaidIds:
    """Full stage id → its mermaid id: plain, never a keyword, never another stage's (module law)."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}
        self._taken: set[str] = set()

    def __call__(self, full_id: str) -> str:
        found = self._ids.get(full_id)
        if found is not None:
            return found
        base = _NOT_ID.sub("_", full_id) or "_"
        if base.lower() in MERMAID_RESERVED:
            base += "_"
        mid, n = base, 1
        while mid in self._taken:
            n += 1
            mid = f"{base}_{n}"
        self._ids[full_id] = mid
        self._taken.add(mid)
        return mid


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;").replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def mermaid(chart: FlowChart) -> str:
    """A mermaid ``flowchart TD``: deciders as diamonds, loops dotted, subflows as subgraphs."""
    lines = ["flowchart TD"]
    edges: list[str] = []
    _mermaid_id = _MermaidIds()

    def emit(current: FlowChart, prefix: str, indent: str) -> None:
        for node in iter_nodes(current.root):
            if node.kind == "loop":
                continue
            full = prefix + node.id
            mid = _mermaid_id(full)
            name = _mermaid_text(node.name)
            if node.kind in ("decider", "selector"):
                lines.append(f'{indent}{mid}{{"{name}"}}')
            elif node.mount is not None:
                lines.append(f'{indent}subgraph {mid}["{name}"]')
                emit(node.mount.chart, full + "/", indent + "  ")
                lines.append(f"{indent}end")
            elif node.kind == "pausable":
                lines.append(f'{indent}{mid}(["{name}"])')
            else:
                lines.append(f'{indent}{mid}["{name}"]')
            if node.next is not None:
                if node.next.kind == "loop":
                    edges.append(f"  {mid} -.->|loop| {_mermaid_id(prefix + (node.next.loop_to or ''))}")
                else:
                    edges.append(f"  {mid} --> {_mermaid_id(prefix + node.next.id)}")
            for branch_id, branch in node.branches.items():
                edges.append(f'  {mid} -->|"{_mermaid_text(branch_id)}"| {_mermaid_id(prefix + branch.id)}')
            for child in node.children:
                edges.append(f"  {mid} --> {_mermaid_id(prefix + child.id)}")

    emit(chart, "", "  ")
    return "\n".join(lines + edges)
