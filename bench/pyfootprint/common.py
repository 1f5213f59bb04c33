"""Helpers shared by the pyfootprint workload scripts: settings, result rows, skip notes."""

from __future__ import annotations

from typing import Any

from bench.harness import Record, Settings, emit, note, record

PEER = "pyfootprint"


def settings(quick: bool) -> Settings:
    """``quick=True`` (tests) runs each row once; otherwise the environment decides."""
    return Settings.once() if quick else Settings.from_env()


def row(
    out: list[Record],
    workload: str,
    variant: str,
    samples: list[float],
    *,
    per: int = 1,
    unit: str = "us/run",
    **extra: Any,
) -> Record:
    """Emit one pyfootprint measurement and collect it in ``out``."""
    rec = record(PEER, "pyfootprint", workload, variant, samples, per=per, unit=unit, **extra)
    return emit(rec, out)


def skip(out: list[Record], workload: str, variant: str, why: str) -> None:
    """Emit a skip note for a row that cannot run yet (missing module, engine error)."""
    note(PEER, workload, variant, why, out)
