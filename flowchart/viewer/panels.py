"""Viewer panels: how a package that builds on ``flowchart`` adds its own view of a run.

Law: the viewer knows no state key of anyone's. A ``Panel`` brings both halves of its view —
``build(trace)``, which reads the trace (already redacted) and returns JSON-safe data or
``None`` when the run is not one it explains, and ``script``, the JavaScript that draws that
data — and the page embeds the data under ``payload.panels[name]`` and the script inside its
one hashed script element, ahead of the viewer's own (so the CSP still allows exactly one
script). A panel's script registers a renderer::

    (self.flowchartPanels = self.flowchartPanels || {})["name"] = (api, data) => { ... };

and the viewer calls it once, after the page is drawn, with ``api``: ``el(tag, attrs,
...kids)`` and ``section(title, ...kids)`` to make elements (text only, never markup),
``valueView(v)`` / ``textView(v)`` for recorded values, ``select(n)`` to open commit ``n``,
``story`` (the full-width host above the chart: a panel that fills it makes the page open
on the run's story) and ``side`` (the host in the side column). The agent's panel
(``agent.viewer_panel``) is the reference: ``agent view`` and
``flowchart view --panel agent.viewer_panel:PANEL`` pass it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ..trace import Trace


@attrs.frozen
class Panel:
    """A viewer extension: ``name`` (its key in the payload), ``build(trace) -> data | None``,
    the ``script`` that registers its renderer under the same name and, optionally,
    ``title(data) -> str | None``: what names the run (the page's title and heading), and
    ``style``: CSS for what it draws (added to the page's one style element)."""

    name: str
    build: Callable[[Trace], Any]
    script: str
    title: Callable[[Any], str | None] | None = None
    style: str = ""


def panel_data(trace: Trace, panels: Sequence[Panel]) -> dict[str, Any]:
    """Each panel's data for ``trace`` (a panel whose ``build`` returns ``None`` is left out)."""
    out: dict[str, Any] = {}
    for panel in panels:
        if panel.name in out:
            raise ValueError(f"two viewer panels are named {panel.name!r}: give each its own name")
        data = panel.build(trace)
        if data is not None:
            out[panel.name] = data
    return out


def panels_title(panels: Sequence[Panel], data: dict[str, Any]) -> str | None:
    """The run's name as the first panel with data and a ``title`` gives it, else ``None``."""
    for panel in panels:
        if panel.title is not None and panel.name in data:
            title = panel.title(data[panel.name])
            if title:
                return title
    return None


def load_panel(target: str) -> Panel:
    """The ``Panel`` that ``MODULE:ATTR`` names (``flowchart view --panel``); ``ValueError`` saying
    what was wrong when the name does not lead to one."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ValueError(f"--panel {target!r}: expected MODULE:ATTR (e.g. agent.viewer_panel:PANEL)")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"--panel {target!r}: cannot load it ({exc})") from None
    if not isinstance(found, Panel):
        raise ValueError(f"--panel {target!r}: is a {type(found).__name__}, not a flowchart.viewer.Panel")
    return found


__all__ = ["Panel", "load_panel", "panel_data", "panels_title"]
