"""The agent's viewer panel, public by name: ``flowchart view --panel agent.viewer_panel:PANEL``
and the ``flowchart.viewer_panels`` entry point load ``PANEL`` from here (built in
``agent._edge.viewer_panel``)."""

from agent._edge.viewer_panel import PANEL

__all__ = ["PANEL"]
