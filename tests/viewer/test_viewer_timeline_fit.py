"""The timeline shows every column in its pane: the ops are not pushed past the pane's edge.

Each row is one line of its ids and stage, and two lines of text: the narrative line, and
under it the ops. Before, the ops column began after the longest narrative line — 937 px
into a 520 px pane on the demo — so it never showed without scrolling sideways; now both
texts start right after the stage name, and nothing is cut (the list still scrolls
sideways for a long line: ``test_viewer_story.py``).
"""

from __future__ import annotations

from typing import Any

from flowchart import Trace

Open = Any


def test_every_rows_ops_and_narrative_start_inside_the_pane(viewer: Open, stored_support: Trace) -> None:
    """On the demo at 1500x950, every row's ops and narrative cells begin inside the timeline's visible width."""
    view = viewer(stored_support, "timeline-fit")
    found = view.page.evaluate(
        """() => { const tl = document.getElementById('timeline'); const left = tl.getBoundingClientRect().left;
             return [tl.clientWidth, [...tl.querySelectorAll('.row')].map(r => [Number(r.dataset.idx),
               r.querySelector('.ops').getBoundingClientRect().left - left,
               r.querySelector('.narr').getBoundingClientRect().left - left])]; }"""
    )
    width, rows = found
    assert len(rows) == len(stored_support.commit_log)
    for idx, ops_left, narr_left in rows:
        assert ops_left < width / 2 and narr_left < width / 2, f"#{idx}: ops at {ops_left}px of a {width}px pane"
    view.check_clean()
