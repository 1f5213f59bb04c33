"""The inbox's browser fixtures: Debian's Chromium through Playwright (no download, no network),
the inbox on a real uvicorn at 127.0.0.1, and pages that record console errors and requests."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "viewer"))

from viewer_harness import ARGS, CHROMIUM

pytest.importorskip("starlette", reason="the inbox needs the [serve] extra")
HERE = Path(__file__).resolve().parent


class _Chromium:
    """One Playwright and one Chromium, closed when the next test is outside this folder (a sync
    Playwright keeps an event loop marked running on the main thread: see tests/viewer/conftest.py)."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self.browser: Any = None

    def get(self) -> Any:
        if self.browser is None:
            sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
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
    """Close the browser when the next test is not an inbox browser test."""
    yield
    if nextitem is None or HERE not in Path(nextitem.path).parents:
        _CHROMIUM.close()
        assert asyncio._get_running_loop() is None, "Playwright left an event loop running on the main thread"


@pytest.fixture
def browser() -> Any:
    """The shared headless Chromium (skips when Chromium or Playwright is missing)."""
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium (or set FLOWCHART_CHROMIUM)")
    return _CHROMIUM.get()
