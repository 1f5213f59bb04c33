"""The same amount reads the same in every panel of a page: ``129.0`` everywhere, never ``129``.

The demo's refund amount is the float ``129.0``. Python writes it ``129.0`` — in the record,
in every sentence Python makes for the page (the explanation, "alice approved
issue_refund(order_id=A-1001, amount=129.0)") — while JavaScript printed the parsed number
as ``129`` in the panels it drew (the tool call's args, the state). The page now keeps each
number's spelling from the payload (``JSON.parse`` with the source text), so both agree.
"""

from __future__ import annotations

import re
from typing import Any

from flowchart import Trace

Open = Any
BARE = re.compile(r"(?<![\w.])129(?![\w.])")  # a number, not three digits inside an id


def test_the_refund_amount_reads_129_0_in_every_panel(viewer: Open, stored_support: Trace) -> None:
    """The story (model calls, tools, human decisions, explanation) and the state after the refund
    commit show ``129.0``; no panel shows a bare ``129``."""
    view = viewer(stored_support, "numbers")
    refund = next(c.idx for c in stored_support.commit_log if c.stage_id == "tool-calls" and c.idx > 7)
    view.select(refund)
    story = view.page.locator("#story").inner_text()
    step = view.page.locator("#step-pane").inner_text()
    assert '"amount":129.0' in story and "amount=129.0" in story
    assert "129.0" in step
    for where, text in (("story", story), ("step", step), ("side", view.page.locator("#side-pane").inner_text())):
        assert BARE.search(text) is None, f"{where} shows a bare 129: {BARE.search(text)}"
    view.check_clean()
