"""Layered layout of a chart spec: x/y for every stage, computed in Python.

Law: the layout is a pure, deterministic function of ``chart.spec``. Stages are layered
by LONGEST PATH over the DAG left when ``loop_to`` edges are removed (so a stage sits
below every stage that can lead to it), ordered within a layer by the barycentre of
their parents (a few top-down sweeps), and packed left to right without overlap.
A subflow mount is a compound node: its own spec is laid out first (iteratively, one
spec at a time, deepest first) and the mount is drawn as a box around that layout.
Loop edges are kept as ``loop`` edges for the renderer to draw as back edges.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import networkx as nx

NODE_H = 36
MIN_W = 96
MAX_W = 240
CHAR_W = 7.6
GAP_X = 28
GAP_Y = 46
PAD = 14
HEADER = 26


GLYPH = {"decider": "◆ ", "selector": "◇ ", "pausable": "‖ "}


def box_label(mount: str, chart: str) -> str:
    """The header of a subflow box."""
    return f"▣ {mount} · subflow {chart}"


@attrs.define
class Node:
    """One stage's box: ``id`` is the full id (``mount/inner`` inside a subflow)."""

    id: str
    name: str
    kind: str
    x: float = 0.0
    y: float = 0.0
    w: float = MIN_W
    h: float = NODE_H
    description: str | None = None
    inner: Layout | None = None


@attrs.define
class Edge:
    """A drawn edge: ``kind`` is ``next``, ``branch``, ``child`` or ``loop``."""

    source: str
    target: str
    kind: str
    label: str | None = None


@attrs.define
class Layout:
    """A laid-out spec: nodes (positions relative to this layout's origin) and edges."""

    name: str
    root: str
    nodes: dict[str, Node]
    edges: list[Edge]
    width: float = 0.0
    height: float = 0.0

    def walk(self, dx: float = 0.0, dy: float = 0.0) -> Iterator[tuple[Node, float, float]]:
        """Every node, subflow nodes included, with its absolute offset ``(node, ox, oy)``."""
        pending: list[tuple[Layout, float, float]] = [(self, dx, dy)]
        while pending:
            layout, ox, oy = pending.pop(0)
            for node in layout.nodes.values():
                yield node, ox, oy
                if node.inner is not None:
                    inset = (node.w - node.inner.width) / 2
                    pending.append((node.inner, ox + node.x + inset, oy + node.y + HEADER))


def _width(label: str, limit: float = MAX_W) -> float:
    return float(min(limit, max(MIN_W, round(len(label) * CHAR_W + 24))))


def _specs_deepest_first(spec: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every (prefix, spec) pair, a subflow's spec before the spec that mounts it."""
    order: list[tuple[str, dict[str, Any]]] = []
    pending = [("", spec)]
    while pending:
        prefix, current = pending.pop()
        order.append((prefix, current))
        for stage in current.get("stages", []):
            if isinstance(stage.get("subflow"), dict):
                pending.append((f"{prefix}{stage['id']}/", stage["subflow"]))
    return order[::-1]


def _edges(spec: dict[str, Any], prefix: str) -> list[Edge]:
    """Edges of one spec. A decider's or fork's ``next`` is where its branches JOIN: it is
    drawn from every branch that neither continues nor loops (from the stage itself when
    none qualifies)."""
    by_id = {stage["id"]: stage for stage in spec.get("stages", [])}
    edges: list[Edge] = []
    for stage in spec.get("stages", []):
        sid = prefix + stage["id"]
        fanned = [*(stage.get("branches") or {}).values(), *(stage.get("children") or ())]
        if "next" in stage:
            ends = [t for t in fanned if t in by_id and "next" not in by_id[t] and "loop_to" not in by_id[t]]
            if ends:
                edges.extend(Edge(prefix + t, prefix + stage["next"], "next") for t in dict.fromkeys(ends))
            else:
                edges.append(Edge(sid, prefix + stage["next"], "next"))
        if "loop_to" in stage:
            edges.append(Edge(sid, prefix + stage["loop_to"], "loop"))
        for bid, target in (stage.get("branches") or {}).items():
            edges.append(Edge(sid, prefix + target, "branch", bid))
        for child in stage.get("children") or ():
            edges.append(Edge(sid, prefix + child, "child"))
    return edges


def _layers(nodes: dict[str, Node], edges: list[Edge], root: str) -> list[list[str]]:
    """Longest-path layers over the DAG without loop edges (spec order as the tiebreak)."""
    graph = nx.DiGraph()
    graph.add_nodes_from(nodes)
    graph.add_edges_from((e.source, e.target) for e in edges if e.kind != "loop" and e.target in nodes)
    if not nx.is_directed_acyclic_graph(graph):  # a malformed spec: drop edges closing cycles
        for u, v in list(nx.find_cycle(graph)):
            graph.remove_edge(u, v)
        while not nx.is_directed_acyclic_graph(graph):
            u, v = nx.find_cycle(graph)[0]
            graph.remove_edge(u, v)
    rank = {n: i for i, n in enumerate(nodes)}
    if root in rank:
        rank[root] = -1
    layer: dict[str, int] = {}
    for node in nx.lexicographical_topological_sort(graph, key=rank.__getitem__):
        layer[node] = max((layer[p] + 1 for p in graph.predecessors(node)), default=0)
    layers: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for node in sorted(layer, key=rank.__getitem__):
        layers[layer[node]].append(node)
    parents = {n: list(graph.predecessors(n)) for n in graph}
    for _ in range(3):  # barycentre sweeps, top-down
        position: dict[str, int] = {}
        for row in layers:
            keyed = []
            for i, node in enumerate(row):
                seen = [position[p] for p in parents[node] if p in position]
                keyed.append((sum(seen) / len(seen) if seen else float(i), i, node))
            row[:] = [node for _, _, node in sorted(keyed)]
            position.update({node: i for i, node in enumerate(row)})
    return layers


def _place(layout: Layout, layers: list[list[str]]) -> None:
    """Rows top-down; each node under the mean centre of its parents, pushed right to fit."""
    nodes = layout.nodes
    parents: dict[str, list[str]] = {n: [] for n in nodes}
    for edge in layout.edges:
        if edge.kind != "loop" and edge.target in parents and edge.source in nodes:
            parents[edge.target].append(edge.source)
    y = 0.0
    for row in layers:
        band = max(nodes[n].h for n in row)
        right: float | None = None
        overshoot = []
        for node_id in row:
            node = nodes[node_id]
            above = [nodes[p] for p in parents[node_id]]
            if above:
                want = sum(p.x + p.w / 2 for p in above) / len(above) - node.w / 2
            else:
                want = 0.0 if right is None else right + GAP_X
            node.x = want if right is None else max(want, right + GAP_X)
            node.y = y + (band - node.h) / 2
            right = node.x + node.w
            overshoot.append(node.x - want)
        back = sum(overshoot) / len(overshoot)  # centre the row's group under its parents
        for node_id in row:
            nodes[node_id].x -= back
        y += band + GAP_Y
    if nodes:
        shift = -min(n.x for n in nodes.values())
        for node in nodes.values():
            node.x += shift
        layout.width = max(n.x + n.w for n in nodes.values())
        layout.height = max(n.y + n.h for n in nodes.values())


def layout_spec(spec: dict[str, Any]) -> Layout:
    """Lay out ``spec`` (``chart.spec``'s shape) and its subflows; see the module law."""
    done: dict[str, Layout] = {}
    for prefix, current in _specs_deepest_first(spec):
        nodes: dict[str, Node] = {}
        for stage in current.get("stages", []):
            sid = prefix + stage["id"]
            node = Node(sid, str(stage.get("name", stage["id"])), str(stage.get("kind", "stage")))
            node.description = stage.get("description")
            node.w = _width(GLYPH.get(node.kind, "") + node.name)
            inner = done.get(sid + "/")
            if inner is not None:
                node.inner = inner
                node.w = max(_width(box_label(node.name, inner.name), 2 * MAX_W), inner.width + 2 * PAD)
                node.h = inner.height + HEADER + PAD
            nodes[sid] = node
        layout = Layout(
            str(current.get("name", "")), prefix + str(current.get("root", "")), nodes, _edges(current, prefix)
        )
        _place(layout, _layers(nodes, layout.edges, layout.root))
        done[prefix] = layout
    return done[""]


__all__ = ["Edge", "Layout", "Node", "layout_spec"]
