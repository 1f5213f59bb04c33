"""The chart as inline SVG markup, from a ``Layout`` and what the run executed.

Law: the SVG is a pure function of the layout, the executed stage ids (with visit counts)
and the taken edges. Every piece of text from the trace (names, descriptions, branch ids)
is XML-escaped, so a stage named ``<script>`` is drawn as those characters. Each stage is
one ``<g class="node" data-stage-id=...>``; a subflow mount is a box around its stages;
decider branches carry their branch id as a label; ``loop_to`` edges are dashed back
edges routed beside the drawing; executed stages get ``ran``, taken edges ``taken``.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from flowchart.viewer.layout import CHAR_W, GLYPH, MAX_W, Edge, Layout, Node, box_label

MARGIN = 24
LOOP_STEP = 10
LABEL_T = 0.62

Box = tuple[float, float, float, float]


def _q(text: object) -> str:
    return escape(str(text), quote=True)


def _fit(text: str, width: float, limit: float = MAX_W) -> str:
    room = max(4, int((min(width, limit) - 16) / CHAR_W))
    return text if len(text) <= room else text[: room - 1] + "…"


def _all_edges(layout: Layout) -> list[Edge]:
    edges = list(layout.edges)
    for node, _, _ in layout.walk():
        if node.inner is not None:
            edges.extend(node.inner.edges)
    return edges


def _boxes(layout: Layout) -> dict[str, tuple[Node, Box]]:
    return {node.id: (node, (ox + node.x, oy + node.y, node.w, node.h)) for node, ox, oy in layout.walk()}


def _node_svg(node: Node, box: Box, visits: int) -> str:
    x, y, w, h = box
    classes = f"node kind-{_q(node.kind)}" + (" ran" if visits else "")
    title = node.name + (f" — {node.description}" if node.description else "") + f" ({node.id})"
    if visits > 1:
        title += f", ran {visits}×"
    parts = [f'<g class="{classes}" data-stage-id="{_q(node.id)}"><title>{_q(title)}</title>']
    if node.inner is not None:
        parts.append(f'<rect class="box" x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="8"/>')
        label = _fit(box_label(node.name, node.inner.name), w, 2 * MAX_W)
        parts.append(f'<text class="box-label" x="{x + 8:.1f}" y="{y + 17:.1f}">{_q(label)}</text>')
    else:
        parts.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="6"/>')
        label = _fit(GLYPH.get(node.kind, "") + node.name, w)
        parts.append(f'<text x="{x + w / 2:.1f}" y="{y + h / 2 + 4:.1f}" text-anchor="middle">{_q(label)}</text>')
    if visits > 1:
        parts.append(f'<text class="visits" x="{x + w - 4:.1f}" y="{y - 3:.1f}" text-anchor="end">×{visits}</text>')
    parts.append("</g>")
    return "".join(parts)


def _loop_x(boxes: dict[str, tuple[Node, Box]], src: Box, tgt: Box, left: bool, k: int) -> float:
    top, bottom = tgt[1], src[1] + src[3]
    span = [b for _, b in boxes.values() if b[1] < bottom and b[1] + b[3] > top]
    if left:
        return min(b[0] for b in span) - 16 - LOOP_STEP * k
    return max(b[0] + b[2] for b in span) + 16 + LOOP_STEP * k


def _edge_svg(edge: Edge, path: str, taken: bool, label_at: tuple[float, float] | None) -> str:
    cls = f"edge {edge.kind}" + (" taken" if taken else "")
    marker = "arrow-taken" if taken else "arrow"
    out = [f'<path class="{cls}" d="{path}" marker-end="url(#{marker})"/>']
    if edge.label is not None and label_at is not None:
        lcls = "edge-label" + (" taken" if taken else "")
        x, y = label_at
        out.append(f'<text class="{lcls}" x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle">{_q(edge.label)}</text>')
    return "".join(out)


def _bezier(p0: float, p1: float, p2: float, p3: float, t: float) -> float:
    u = 1 - t
    return u * u * u * p0 + 3 * u * u * t * p1 + 3 * u * t * t * p2 + t * t * t * p3


def render_svg(
    layout: Layout,
    visits: Mapping[str, int] | None = None,
    taken: set[tuple[str, str]] | None = None,
) -> str:
    """SVG markup for ``layout``; ``visits`` maps stage id → times run, ``taken`` holds (source, target) pairs."""
    visits = visits or {}
    taken = taken or set()
    boxes = _boxes(layout)
    centre = layout.width / 2
    edge_parts: list[str] = []
    lows, highs = [0.0], [layout.width]
    loops_left = loops_right = 0
    for edge in _all_edges(layout):
        if edge.source not in boxes or edge.target not in boxes:
            continue
        src, tgt = boxes[edge.source][1], boxes[edge.target][1]
        sx, sy, tx, ty = src[0] + src[2] / 2, src[1] + src[3], tgt[0] + tgt[2] / 2, tgt[1]
        is_taken = (edge.source, edge.target) in taken
        if edge.kind == "loop" or ty <= sy:
            left = sx < centre
            k = loops_left if left else loops_right
            xr = _loop_x(boxes, src, tgt, left, k)
            if left:
                loops_left += 1
                x0, x1 = src[0], tgt[0]
            else:
                loops_right += 1
                x0, x1 = src[0] + src[2], tgt[0] + tgt[2]
            lows.append(xr)
            highs.append(xr)
            path = f"M{x0:.1f},{src[1] + src[3] / 2:.1f} H{xr:.1f} V{tgt[1] + tgt[3] / 2:.1f} H{x1:.1f}"
            loop_edge = Edge(edge.source, edge.target, "loop", edge.label)
            edge_parts.append(_edge_svg(loop_edge, path, is_taken, (xr, (src[1] + tgt[1]) / 2)))
            continue
        dy = max(12.0, (ty - sy) / 2)
        path = f"M{sx:.1f},{sy:.1f} C{sx:.1f},{sy + dy:.1f} {tx:.1f},{ty - dy:.1f} {tx:.1f},{ty:.1f}"
        at = (_bezier(sx, sx, tx, tx, LABEL_T), _bezier(sy, sy + dy, ty - dy, ty, LABEL_T))
        edge_parts.append(_edge_svg(edge, path, is_taken, at))
    min_x, max_x = min(lows) - MARGIN, max(highs) + MARGIN
    width, height = max_x - min_x, layout.height + 2 * MARGIN
    ordered = sorted(boxes.values(), key=lambda item: item[0].inner is None)  # boxes under their stages
    node_parts = [_node_svg(node, box, visits.get(node.id, 0)) for node, box in ordered]
    defs = (
        "<defs>"
        '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>'
        '<marker id="arrow-taken" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto"><path d="M0,0 L10,5 L0,10 z" class="arrowhead taken"/></marker>'
        "</defs>"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" aria-label="{_q(layout.name)}" '
        f'viewBox="{min_x:.1f} {-MARGIN:.1f} {width:.1f} {height:.1f}" width="{width:.0f}" height="{height:.0f}">'
        + defs
        + "".join(node_parts[: sum(1 for n, _ in ordered if n.inner is not None)])
        + '<g class="edges">'
        + "".join(edge_parts)
        + "</g>"
        + "".join(node_parts[sum(1 for n, _ in ordered if n.inner is not None) :])
        + "</svg>"
    )


__all__ = ["render_svg"]
