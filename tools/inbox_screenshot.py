"""Regenerate the inbox screenshots (``docs/img/inbox-list.png``, ``docs/img/inbox-run.png``).

``make screenshot-inbox`` runs this: the inbox demo's store (``examples/inbox_demo.py``: three of
the demo's refunds paused at their check-in) in a temporary folder, the inbox served by uvicorn
on 127.0.0.1, and headless Chromium — Debian's ``/usr/bin/chromium`` through Playwright, no
download, no network — logging in with alice's token, saving the list, opening the newest
refund and saving its page. So the images show what the code draws today.
"""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "img"
CHROMIUM = os.environ.get("FLOWCHART_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]


def main() -> int:
    """Serve the demo's inbox and screenshot the list and a run's page."""
    sys.path.insert(0, str(REPO))
    import socket

    import uvicorn
    from playwright.sync_api import sync_playwright

    from agent.serve import inbox_app
    from examples import inbox_demo, support_agent

    with tempfile.TemporaryDirectory() as folder:
        store, users, token, ids = inbox_demo.prepare(Path(folder) / "inbox")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        app = inbox_app(store, support_agent.build_agent(store), users=users)
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        url = f"http://127.0.0.1:{port}"
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page(viewport={"width": 1200, "height": 700})
                page.goto(f"{url}/login")
                page.fill("#token", token)
                page.click("#login")
                page.wait_for_selector("#runs")
                page.wait_for_function("document.getElementById('live').textContent.includes('on')")
                page.screenshot(path=str(OUT / "inbox-list.png"))
                page.goto(f"{url}/runs/{ids[-1]}")
                page.wait_for_selector("#request")
                page.set_viewport_size({"width": 1200, "height": 1100})
                page.screenshot(path=str(OUT / "inbox-run.png"))
                browser.close()
        finally:
            server.should_exit = True
            thread.join(10)
    print(f"wrote {OUT / 'inbox-list.png'} and {OUT / 'inbox-run.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
