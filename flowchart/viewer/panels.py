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

Installed panels: a distribution may register a panel under the entry-point group
``flowchart.viewer_panels`` (``name = "module:ATTR"``); ``flowchart view`` without ``--panel``
adds every installed one (``installed_panels``), and each decides by its ``build`` whether the
run is one it explains. This is how ``flowchart view`` of an agent trace shows the agent's
story while ``flowchart`` itself still imports nothing of the agent: pyfootprint registers
``agent.viewer_panel:PANEL`` there. A registered panel that cannot be loaded is named in one
warning and left out, never a failed page.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from flowchart._record.trace import Trace


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


PANEL_GROUP = "flowchart.viewer_panels"


def installed_panels(warn: Callable[[str], None] | None = None) -> list[Panel]:
    """Every panel registered under the ``flowchart.viewer_panels`` entry-point group, sorted by
    entry-point name (so a page is the same on every machine with the same packages); one that
    does not load, or is not a ``Panel``, is reported to ``warn`` and skipped."""
    from importlib.metadata import entry_points

    found: list[Panel] = []
    for point in sorted(entry_points(group=PANEL_GROUP), key=lambda p: p.name):
        try:
            panel = point.load()
        except Exception as exc:  # a broken plugin never breaks the page
            if warn is not None:
                warn(f"viewer panel {point.name!r} ({point.value}) was left out: cannot load it ({exc})")
            continue
        if not isinstance(panel, Panel):
            if warn is not None:
                kind = type(panel).__name__
                warn(f"viewer panel {point.name!r} ({point.value}) was left out: it is a {kind}, not a Panel")
            continue
        found.append(panel)
    return found


__all__ = ["PANEL_GROUP", "Panel", "installed_panels", "load_panel", "panel_data", "panels_title"]
