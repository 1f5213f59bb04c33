"""The viewer tests' handle on an open page (``View``) and the Chromium launch flags."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs

CHROMIUM = os.environ.get("FLOWCHART_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@attrs.define
class View:
    """An open viewer page and what it did: console errors, page errors, requests."""

    page: Any
    path: Path
    screenshot: Path
    errors: list[str] = attrs.Factory(list)
    requests: list[str] = attrs.Factory(list)

    @property
    def ready_ms(self) -> float:
        """Milliseconds from navigation start until the page finished its first render."""
        return float(self.page.evaluate("window.__viewerReadyMs"))

    def check_clean(self) -> None:
        """No console or page errors; no request but the page itself (file://) or data: URLs."""
        assert self.errors == []
        assert [u for u in self.requests if not u.startswith(("file://", "data:"))] == []

    def select(self, n: int) -> None:
        """Scroll commit ``n``'s timeline row into the list and click it."""
        self.page.evaluate(
            f"(tl => {{ tl.scrollTop = Math.max(0, {n} * Number(tl.dataset.row) - 100); }})"
            "(document.getElementById('timeline'))"
        )
        self.page.locator(f'#timeline .row[data-idx="{n}"]').click()

    def state_json(self) -> Any:
        """The selected step's state as the page shows it with "as JSON"."""
        self.page.locator("#step-pane button.as-json").click()
        return json.loads(self.page.locator("#step-pane pre.raw").text_content() or "null")


def off_loop(make: Callable[[], Any]) -> Any:
    """Call ``make`` on a fresh thread: Playwright's sync API keeps an event loop running on this one."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(make).result()
