"""Cancelling a run from outside: footprintjs's ``AbortSignal`` as a token.

Law: ``run(..., cancel=token)``; ``token.cancel(reason)`` from anywhere (another task,
another thread, a stage) lets the running stage finish and commit its writes, and the
run ends before the next stage starts with ``RunCancelledError`` — which names the
stage it stopped before and the reason, and reaches recorders through
``on_run_failed`` (and a store records it as the run's error). A token without
``cancel()`` called costs one attribute check per stage; no token, nothing.
"""

from __future__ import annotations

import threading

from flowchart._core.errors import RunError

__all__ = ["CancelToken", "RunCancelledError"]


class RunCancelledError(RunError):
    """The run was cancelled through its ``CancelToken`` (``reason`` says why)."""

    def __init__(self, message: str, *, stage_id: str | None = None, reason: str | None = None) -> None:
        super().__init__(message, stage_id=stage_id)
        self.reason = reason


class CancelToken:
    """Pass to ``run(cancel=...)``; call ``cancel(reason)`` to stop the run at the next stage boundary."""

    __slots__ = ("_event", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        """True once ``cancel()`` was called."""
        return self._event.is_set()

    def cancel(self, reason: str | None = None) -> None:
        """Ask the run to stop before its next stage (the first reason given is kept)."""
        if not self._event.is_set():
            self.reason = reason
            self._event.set()

    def check(self, stage_id: str) -> None:
        """Raise ``RunCancelledError`` if cancelled (the engine calls this before each stage)."""
        if self._event.is_set():
            why = f": {self.reason}" if self.reason else ""
            raise RunCancelledError(
                f"Run cancelled before stage '{stage_id}'{why}", stage_id=stage_id, reason=self.reason
            )

    def __repr__(self) -> str:
        return f"<CancelToken cancelled={self.cancelled} reason={self.reason!r}>"
