"""Fixtures for the provider tests: a real local HTTP server and a recording sleep."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .wire import Sleeps, WireServer


@pytest.fixture
def server() -> Iterator[WireServer]:
    """A fresh HTTP server on 127.0.0.1, stopped after the test."""
    wire = WireServer()
    yield wire
    wire.close()


@pytest.fixture
def sleeps() -> Sleeps:
    """A sleep that records delays, so retry tests take no time."""
    return Sleeps()


@pytest.fixture(autouse=True)
def _no_provider_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Provider environment variables of the machine never leak into a test."""
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OLLAMA_HOST",
    ):
        monkeypatch.delenv(name, raising=False)
