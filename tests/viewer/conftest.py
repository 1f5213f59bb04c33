"""Browser fixtures: Debian's Chromium driven by Playwright, no browser download, no network.

``viewer(trace, name)`` writes the page under ``tmp_path``, opens it from ``file://``, waits
for the page to say it is ready, and records console errors, page errors and every
request. Each test calls ``view.check_clean()``; teardown checks again and writes one
screenshot per page under ``tmp_path``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from viewer_harness import ARGS, CHROMIUM, View, off_loop

from agent._edge.viewer_panel import PANEL
from flowchart import Trace
from flowchart.viewer import write_page

HERE = Path(__file__).resolve().parent


class _Chromium:
    """One Playwright and one headless Chromium, launched on first use, shared by this
    folder's tests and closed as soon as the next test is outside the folder.

    Not a session fixture: while Playwright's sync API is open it keeps an event loop marked
    as running on the main thread, so every later test that starts a loop there
    (``asyncio.run``, pytest-asyncio's runner) would fail with "cannot be called from a
    running event loop" — the suite's order-dependent failure (tests/viewer, then tests/otel).
    """

    def __init__(self) -> None:
        self._playwright: Any = None
        self.browser: Any = None

    def get(self) -> Any:
        if self.browser is None:
            sync_api = pytest.importorskip(
                "playwright.sync_api", reason="pip install playwright (no browser download needed)"
            )
            self._playwright = sync_api.sync_playwright()
            playwright = self._playwright.__enter__()
            try:
                self.browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            except BaseException:
                self.close()
                raise
        return self.browser

    def close(self) -> None:
        browser, playwright, self.browser, self._playwright = self.browser, self._playwright, None, None
        try:
            if browser is not None:
                browser.close()
        finally:
            if playwright is not None:
                playwright.__exit__(None, None, None)


_CHROMIUM = _Chromium()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After a test's own teardown: close the browser when the next test is not a viewer test."""
    yield
    if nextitem is None or HERE not in Path(nextitem.path).parents:
        _CHROMIUM.close()
        # the point of closing here: the main thread must be free to start event loops again
        assert asyncio._get_running_loop() is None, "Playwright left an event loop running on the main thread"


@pytest.fixture
def browser() -> Any:
    """The shared headless Chromium (skips when Chromium or Playwright is missing)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set FLOWCHART_CHROMIUM)")
    return _CHROMIUM.get()


@pytest.fixture
def viewer(browser: Any, tmp_path: Path) -> Iterator[Callable[[Trace, str], View]]:
    """Open traces as pages with the agent's panel (``agent view``): ``view = viewer(trace, "name")``."""
    opened: list[View] = []
    contexts: list[Any] = []

    def open_view(trace: Trace, name: str) -> View:
        path = write_page(trace, tmp_path / f"{name}.html", [PANEL])  # the agent's panel: an agent run's story
        context = browser.new_context(viewport={"width": 1500, "height": 950}, service_workers="block")
        contexts.append(context)
        page = context.new_page()
        view = View(page, path, tmp_path / f"{name}.png")
        page.on("console", lambda m: view.errors.append(m.text) if m.type in ("error", "warning") else None)
        page.on("pageerror", lambda e: view.errors.append(str(e)))
        page.on("request", lambda r: view.requests.append(r.url))
        page.goto(path.as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=10_000)
        opened.append(view)
        return view

    yield open_view
    for view in opened:
        view.page.screenshot(path=str(view.screenshot))
        view.check_clean()
    for context in contexts:
        context.close()


@pytest.fixture(scope="session")
def loan() -> Trace:
    """The loan example's trace (with a narrative)."""
    from viewer_traces import loan_trace

    return off_loop(loan_trace)


@pytest.fixture(scope="session")
def support() -> tuple[Trace, Trace]:
    """The support-agent demo's traces: (paused at the check-in, resumed after alice approved)."""
    from viewer_traces import support_traces

    return off_loop(support_traces)


@pytest.fixture(scope="session")
def stored_support(tmp_path_factory: pytest.TempPathFactory) -> Trace:
    """The demo's page: the stored support run (both segments) exported as one trace."""
    from viewer_traces import stored_support_trace

    folder = tmp_path_factory.mktemp("stored-support")
    return off_loop(lambda: stored_support_trace(folder))


@pytest.fixture(scope="session")
def hostile() -> Trace:
    """A trace whose names, keys and values are HTML and script text."""
    from viewer_traces import hostile_trace

    return off_loop(hostile_trace)
