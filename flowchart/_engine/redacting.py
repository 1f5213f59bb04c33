"""When the engine applies the run's redaction: at the stage, as each record is made (HOW is
``flowchart/_core/redaction.py``'s, the one file where redaction happens: this module only calls it).

Law: a stage's writes are redacted as they are committed, and its data events as they
are emitted — never afterwards, so no record of the run ever holds a hidden value. In the
commit log a hidden value is ``LOG_PLACEHOLDER`` and its path is listed on the commit and
the run (``redact_log``); in ``on_read`` / ``on_write`` / ``on_stage_ops`` events it is
``EVENT_PLACEHOLDER`` and the event says it is hidden (``StageRecorder``,
``redacted_ops``). A run that hides nothing asks about no key. (What counts as hidden is
``flowchart/_core/redaction.py``'s rule.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flowchart._core.commits import Op
from flowchart.events import ReadEvent, TraversalContext, WriteEvent

if TYPE_CHECKING:
    from flowchart._engine.run_state import Run
    from flowchart._engine.traversal import Traverser


def shown_state(run: Run, state: Any) -> Any:
    """A state an event carries whole (``Redaction.shown_state``); ``state`` itself when the run
    hides nothing."""
    return run.redaction.shown_state(state) if run.redacting else state


def hidden_before(redaction: Any, txn: Any) -> dict[str, Any]:
    """The real values the keys ``redaction`` hides or scrubs had before ``txn`` commits (the
    log will hold placeholders for them): what undoing that commit must restore."""
    fields = redaction.fields
    hides = redaction.hides
    return txn.committed_values(lambda key: key in fields or hides(key))


def redacted_ops(redaction: Any, ops: list[Any]) -> list[Any]:
    """A batch of stage operations as the run's redaction lets recorders see them (``Redaction.shown_ops``)."""
    shown: list[Any] = redaction.shown_ops(ops)
    return shown


class StageRecorder:
    """Bridges a transaction's reads and writes to the recorders' data hooks."""

    __slots__ = ("ctx", "observers", "reads", "redacting", "redaction", "writes")

    def __init__(self, traverser: Traverser, ctx: TraversalContext) -> None:
        self.observers = observers = traverser.run.observers
        self.ctx = ctx
        run = traverser.run
        self.redacting = run.redacting  # when nothing is hidden, no key is asked about
        self.redaction = run.redaction
        self.reads = observers.wants("on_read")
        self.writes = observers.wants("on_write")

    def read(self, key: str, value: Any) -> None:
        if self.reads:
            hidden = False
            if self.redacting:
                value, hidden = self.redaction.shown(key, value)
            self.observers.emit("on_read", ReadEvent(self.ctx, key, value, hidden))

    def missing(self, key: str) -> None:
        if self.reads:
            self.observers.emit("on_read", ReadEvent(self.ctx, key, None, missing=True))

    def write(self, key: str, value: Any, operation: str) -> None:
        if self.writes:
            hidden = False
            if self.redacting:
                if operation == "delete":
                    hidden = self.redaction.hides(key)
                else:
                    value, hidden = self.redaction.shown(key, value)
            self.observers.emit("on_write", WriteEvent(self.ctx, key, value, operation, hidden))  # type: ignore[arg-type]


def redact_log(run: Run, ops: list[Op], depth: int) -> tuple[list[Op], tuple[str, ...]]:
    """A stage's ops as its commit records them (``depth``: the namespace length), and the paths hidden.

    Every hidden path is also noted on the run (``run.redacted_paths``)."""
    out, paths = run.redaction.scrub_ops(ops, depth)
    for path in paths:
        run.redacted_paths[path] = None
    return out, tuple(paths)


__all__ = ["StageRecorder", "hidden_before", "redact_log", "redacted_ops", "shown_state"]
