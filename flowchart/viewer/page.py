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
- A page is written in pieces (``page_chunks``: the payload's long lists ``CHUNK`` items per
  ``json.dumps`` call) to a temporary file beside the target that replaces it only when
  complete, so a big run's page never sits in memory whole, twice or escaped, and a failed
  write leaves nothing half-written. The pieces join to exactly ``render_page``'s text.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from flowchart._core.run_ids import file_name
from flowchart._record.trace import Trace
from flowchart._record.trace_codec import no_gc_pauses
from flowchart.viewer.layout import layout_spec
from flowchart.viewer.panels import Panel
from flowchart.viewer.payload import Rows, payload_fields, visits_and_taken
from flowchart.viewer.svg import render_svg

#: what the embedded JSON writes as escapes (see the module law)
ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029"))
#: items of a long payload list per ``json.dumps`` call when a page is written in pieces
CHUNK = 256


def _escaped(text: str) -> str:
    # one str.replace per character present: a scan in C, where str.translate calls back per character
    for char, code in ESCAPES:
        if char in text:
            text = text.replace(char, code)
    return text


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def embed_json(value: Any) -> str:
    """JSON text safe to place inside a ``<script>`` element (see the module law)."""
    return _escaped(_dumps(value))


def _payload_chunks(fields: dict[str, Any]) -> Iterator[str]:
    """``embed_json`` of the payload (``payload_fields``: str keys) in pieces: each long list or
    ``Rows`` ``CHUNK`` items at a time, so the text is never whole and ``Rows`` never all built."""
    yield "{"
    for i, (key, item) in enumerate(fields.items()):
        yield ("," if i else "") + embed_json(key) + ":"
        if isinstance(item, list) and len(item) > CHUNK:
            item = Rows.of(item)
        if isinstance(item, Rows):
            yield "["
            for start in range(0, item.count, CHUNK):
                with no_gc_pauses():  # a slice's rows are small lists that die with it
                    text = embed_json(item.slice(start, start + CHUNK))
                yield text[1:-1] if start == 0 else "," + text[1:-1]
            yield "]"
        else:
            yield embed_json(item)
    yield "}"


def _static(name: str) -> str:
    return resources.files("flowchart.viewer").joinpath("static", name).read_text(encoding="utf-8")


def _script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def page_chunks(trace: Trace, panels: Sequence[Panel] = ()) -> Iterator[str]:
    """The viewer page for ``trace`` in pieces that join to ``render_page(trace, panels)``."""
    visits, taken = visits_and_taken(trace)
    svg = render_svg(layout_spec(trace.chart_spec), visits, taken)
    with no_gc_pauses():  # tens of thousands of small lists and no cycle among them
        data = payload_fields(trace, panels)
    used = [panel.script for panel in panels if panel.name in data["panels"]]
    styles = [panel.style for panel in panels if panel.name in data["panels"] and panel.style]
    script, style = "\n".join([*used, _static("viewer.js")]), "\n".join([_static("viewer.css"), *styles])
    csp = (
        f"default-src 'none'; script-src '{_script_hash(script)}'; style-src 'unsafe-inline'; "
        "img-src data:; connect-src 'none'; base-uri 'none'; form-action 'none'"
    )
    title = escape(f"{data['meta']['title']} · {trace.run_id[:12]} · flowchart view", quote=True)
    status = "failed" if trace.failure is not None else "paused" if trace.paused else "finished"
    yield f"""<!doctype html>
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
<script type="application/json" id="payload">"""
    yield from _payload_chunks(data)
    yield f"""</script>
<script>{script}</script>
</body>
</html>
"""


def render_page(trace: Trace, panels: Sequence[Panel] = ()) -> str:
    """The viewer page for ``trace``, as one HTML string; ``panels`` add their views
    (``flowchart.viewer.panels``: their scripts go first in the one script element)."""
    return "".join(page_chunks(trace, panels))


def _write_atomically(target: Path, chunks: Iterable[str]) -> None:
    temp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        with open(temp, "w", encoding="utf-8") as out:
            out.writelines(chunks)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def write_page(trace: Trace, path: str | Path, panels: Sequence[Panel] = ()) -> Path:
    """Write ``render_page(trace, panels)`` to ``path`` (UTF-8) and return the path; the page is
    written in pieces and replaces ``path`` only once complete (see the module law)."""
    target = Path(path)
    _write_atomically(target, page_chunks(trace, panels))
    return target


def page_name(run_id: str) -> str:
    """The file name a run's page gets by default (``agent view RUN``): ``RUN.html`` when the id is
    a plain file name, else a safe one (``flowchart._core.run_ids.file_name``: ``../../x`` → ``x-<hash>.html``)."""
    return file_name(run_id, ".html")


__all__ = ["embed_json", "page_name", "render_page", "write_page"]
