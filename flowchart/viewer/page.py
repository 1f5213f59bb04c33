"""One self-contained HTML page for a trace: inline CSS, inline JS, inline SVG, embedded JSON.

Laws:
- The page needs nothing else: no CDN, no fonts, no network. A Content-Security-Policy
  (``default-src 'none'``) forbids every fetch, and allows exactly ONE script — ours,
  by its SHA-256 hash — so even markup smuggled into the page could not run.
- Data never becomes markup. The payload is JSON inside ``<script type="application/json">``
  with ``<``, ``>``, ``&``, U+2028 and U+2029 written as ``\\uXXXX`` escapes, so no value
  can close the element or open a comment; the script reads it with ``JSON.parse`` and
  puts text into the page with ``textContent`` only. Text in the SVG and the title is
  HTML-escaped in Python.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from ..trace import Trace
from .layout import layout_spec
from .panels import Panel
from .payload import build_payload, visits_and_taken
from .svg import render_svg

_TABLE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def embed_json(value: Any) -> str:
    """JSON text safe to place inside a ``<script>`` element (see the module law)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.translate(_TABLE)


def _static(name: str) -> str:
    return resources.files("flowchart.viewer").joinpath("static", name).read_text(encoding="utf-8")


def _script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def render_page(trace: Trace, panels: Sequence[Panel] = ()) -> str:
    """The viewer page for ``trace``, as one HTML string; ``panels`` add their views
    (``flowchart.viewer.panels``: their scripts go first in the one script element)."""
    visits, taken = visits_and_taken(trace)
    svg = render_svg(layout_spec(trace.chart_spec), visits, taken)
    data = build_payload(trace, panels)
    payload = embed_json(data)
    used = [panel.script for panel in panels if panel.name in data["panels"]]
    styles = [panel.style for panel in panels if panel.name in data["panels"] and panel.style]
    script, style = "\n".join([*used, _static("viewer.js")]), "\n".join([_static("viewer.css"), *styles])
    csp = (
        f"default-src 'none'; script-src '{_script_hash(script)}'; style-src 'unsafe-inline'; "
        "img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
    title = escape(f"{data['meta']['title']} · {trace.run_id[:12]} · flowchart view", quote=True)
    status = "failed" if trace.failure is not None else "paused" if trace.paused else "finished"
    return f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style>
</head>
<body>
<header id="top">
  <h1 id="title"></h1>
  <span id="status" class="badge {status}"></span>
  <span id="meta"></span>
  <label class="picker">why <select id="why-key"><option value="">— pick a key —</option></select></label>
</header>
<section id="story" aria-label="the run's story" hidden></section>
<main>
  <section id="chart-pane" aria-label="chart">
    <button id="zoom" type="button" class="as-json">1:1</button>{svg}
  </section>
  <section id="timeline-pane" aria-label="timeline">
    <h2>Timeline <small id="count"></small></h2>
    <div id="timeline" tabindex="0"><div id="timeline-spacer"></div></div>
  </section>
  <section id="step-pane" aria-label="selected step"></section>
  <section id="side-pane" aria-label="why and agent">
    <div id="run-panel"></div>
    <div id="why-panel" hidden></div>
    <div id="pause-panel" hidden></div>
    <div id="panel-side" hidden></div>
  </section>
</main>
<script type="application/json" id="payload">{payload}</script>
<script>{script}</script>
</body>
</html>
"""


def write_page(trace: Trace, path: str | Path, panels: Sequence[Panel] = ()) -> Path:
    """Write ``render_page(trace, panels)`` to ``path`` (UTF-8) and return the path."""
    target = Path(path)
    target.write_text(render_page(trace, panels), encoding="utf-8")
    return target


__all__ = ["embed_json", "render_page", "write_page"]
