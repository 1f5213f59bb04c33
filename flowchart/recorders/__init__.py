"""Recorders that observe a run: the footprintjs-worded narrative and value summaries.

A recorder is any object with some of the hooks named in :mod:`flowchart.events`;
pass it to ``chart.run(recorders=[...])``.
"""

from flowchart._core.summary import summarize_value
from flowchart.recorders.narrative import NarrativeEntry, NarrativeRecorder, narrative

__all__ = ["NarrativeEntry", "NarrativeRecorder", "narrative", "summarize_value"]
