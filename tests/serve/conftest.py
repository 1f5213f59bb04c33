"""The inbox's fixtures: a store with the demo's paused refund, its users, and a real server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from inbox_server import Setup, make_setup, served

pytest.importorskip("starlette", reason="the inbox needs the [serve] extra")


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    """A run store file and a users file with alice, bob, carol (approvers) and vera (viewer)."""
    return make_setup(tmp_path)


@pytest.fixture
def serve() -> Iterator[Callable[[Any], str]]:
    """``url = serve(app)``: the app on uvicorn at 127.0.0.1 (stopped after the test)."""
    stack: list[Any] = []

    def start(app: Any) -> str:
        context = served(app)
        url = context.__enter__()
        stack.append(context)
        return url

    yield start
    for context in reversed(stack):
        context.__exit__(None, None, None)
