"""``flowchart view``: a trace as one self-contained HTML page.

The chart (SVG laid out in Python), the timeline of commits with the narrative, the
state at any step (replayed in the page from the commit ops), the diff, the reads, the
decision, ``why`` chains, and the views a ``Panel`` adds (the agent's story comes from
``agent.viewer_panel``). See ``docs/viewer.md``.
"""

from flowchart.viewer.layout import Layout, layout_spec
from flowchart.viewer.page import embed_json, page_name, render_page, write_page
from flowchart.viewer.panels import Panel, installed_panels, load_panel
from flowchart.viewer.payload import build_payload
from flowchart.viewer.svg import render_svg

__all__ = [
    "Layout",
    "Panel",
    "build_payload",
    "embed_json",
    "installed_panels",
    "layout_spec",
    "load_panel",
    "page_name",
    "render_page",
    "render_svg",
    "write_page",
]
