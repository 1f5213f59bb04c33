"""Fixtures for the engine tests: syrupy snapshots live in the top-level ``snapshots/`` folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.amber import AmberSnapshotExtension

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


class TopLevelAmberExtension(AmberSnapshotExtension):
    """Amber snapshots stored under ``<repo>/snapshots/<test dir relative to tests/>``."""

    @classmethod
    def dirname(cls, *, test_location: Any) -> str:
        test_dir = Path(test_location.filepath).resolve().parent
        return str(REPO / "snapshots" / test_dir.relative_to(TESTS))


@pytest.fixture
def snapshot(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    """The syrupy fixture, writing to the top-level snapshots folder."""
    return snapshot.use_extension(TopLevelAmberExtension)
