"""``NarrativeEntry``: one narrative line and the stage that told it — a record, not a sentence.

Law: a narrative line is kept with where it came from — its ``type`` (one of
``RECORD_TYPES``), ``depth`` and the stage ids of the step that told it — so every reader
(a trace, the store, the viewer) places it by stage, never by parsing its wording. ``line``
is the type of a line kept before records were (a version-1 trace, an old stored row): it
names no stage.
"""

from __future__ import annotations

import attrs

RECORD_TYPES = frozenset(
    {
        "stage",
        "step",
        "condition",
        "fork",
        "selector",
        "subflow",
        "loop",
        "break",
        "error",
        "pause",
        "resume",
        "answer",
        "emit",
        "note",
        "retry",
        "map",
        "line",
    }
)


@attrs.frozen
class NarrativeEntry:
    """One narrative line with where it came from.

    ``type`` is one of ``stage step condition fork selector subflow loop break error
    pause resume answer emit note retry map`` (``line``: a line kept before records were);
    ``depth`` is 0 for headline entries, 1 for the steps and conditions under a stage.
    :meth:`as_tuple` gives the ``(type, depth, text)`` form.
    """

    type: str
    depth: int
    text: str
    stage_name: str | None = None
    stage_id: str | None = None
    runtime_stage_id: str | None = None
    subflow_id: str | None = None
    key: str | None = None
    step_number: int | None = None

    def as_tuple(self) -> tuple[str, int, str]:
        """The entry as ``(type, depth, text)``, the shape ``entries()`` returns."""
        return (self.type, self.depth, self.text)


__all__ = ["RECORD_TYPES", "NarrativeEntry"]
