"""Pluggable narrative phrasing: footprintjs's ``NarrativeFormatter`` hooks in snake_case.

Law: a renderer changes only the WORDS of an entry, never the structure — which entries
exist, their order, type, depth and stage are the engine's. A renderer is any object
with some of ``render_stage(ctx) -> str`` and ``render_op(ctx) -> str | None``; a hook
it lacks, or a ``render_op`` that returns ``None``, falls back to footprintjs's default
sentence; ``render_op`` returning ``""`` leaves that step out (footprintjs's ``null``).
Hooks are looked up once, when the recorder is made.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

__all__ = ["OpRenderContext", "StageRenderContext"]


@attrs.frozen
class StageRenderContext:
    """What ``render_stage`` gets: footprintjs's ``StageRenderContext``.

    ``loop_iteration`` is the pass number (1-based) when the stage is visited again via
    ``loop_to``, else ``None``.
    """

    stage_name: str
    stage_number: int
    is_first: bool
    description: str | None = None
    loop_iteration: int | None = None


@attrs.frozen
class OpRenderContext:
    """What ``render_op`` gets: one read or write (or a subflow's input key, as a write).

    ``value_summary`` is footprintjs's summary (``"undefined"`` for a missing key);
    ``raw_value`` the value itself; ``step_number`` the step's number in its stage.
    """

    type: Literal["read", "write"]
    key: str
    raw_value: Any
    value_summary: str
    operation: str | None
    step_number: int


def hook(renderer: Any, name: str) -> Any:
    """``renderer.<name>`` when it is callable, else ``None``."""
    found = getattr(renderer, name, None) if renderer is not None else None
    return found if callable(found) else None
