"""Regenerate the README's viewer screenshot (``docs/img/viewer.png``) from the current demo.

``make screenshot`` runs this: the support-agent demo (``examples/support_agent.py``) runs
in a temporary ``RUNS_DIR``, its whole-run trace (``support.trace.json``, the file the
README tells you to view) is written as a viewer page with the agent's panel (what
``agent view`` writes), and headless Chromium — Debian's ``/usr/bin/chromium`` driven by
Playwright, no browser download, no network — opens it at 1440x900, selects the last routing
decision (the final answer's) and saves the first screen: the run's story. So the image
always shows what the code draws today.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "img" / "viewer.png"
CHROMIUM = os.environ.get("FLOWCHART_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def demo_trace_page(folder: Path) -> tuple[Path, int]:
    """Run the demo into ``folder``; write its trace's page; return it and the commit to select."""
    os.environ["RUNS_DIR"] = str(folder)
    sys.path.insert(0, str(REPO))
    from agent._edge.viewer_panel import PANEL
    from examples import support_agent
    from flowchart import Trace
    from flowchart.viewer import write_page

    with contextlib.redirect_stdout(io.StringIO()):
        support_agent.main()
    trace = Trace.load(folder / "support.trace.json")
    routes = [c.idx for c in trace.commit_log if c.stage_id == "route"]
    return write_page(trace, folder / "support.html", [PANEL]), routes[-1]


def main() -> int:
    """Write ``docs/img/viewer.png``; exit 2 with the reason when Chromium or Playwright is missing."""
    if not os.path.exists(CHROMIUM):
        print(f"screenshot: no Chromium at {CHROMIUM} (apt-get install chromium, or set FLOWCHART_CHROMIUM)")
        return 2
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("screenshot: needs Playwright: pip install playwright (no browser download needed)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        page_path, selected = demo_trace_page(Path(tmp))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto(page_path.as_uri())
            page.wait_for_selector("body[data-ready='1']", timeout=30_000)
            page.evaluate(
                f"(tl => {{ tl.scrollTop = Math.max(0, {selected} * Number(tl.dataset.row) - 100); }})"
                "(document.getElementById('timeline'))"
            )
            page.locator(f'#timeline .row[data-idx="{selected}"] .idx').click()  # the row's start: no sideways scroll
            page.evaluate("window.scrollTo(0, 0)")  # the first screen: the story
            page.screenshot(path=str(OUT))
            browser.close()
    print(f"screenshot: wrote {OUT.relative_to(REPO)} (commit #{selected} selected)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
