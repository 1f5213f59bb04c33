"""Retry policies: how often a stage body is tried again, after which errors, after how long.

Laws:
- ``Retry`` is a plain value, checked when it is made: ``attempts`` (the first try
  included) is a positive integer, delays are non-negative numbers, ``on`` is one
  exception class or a tuple of them. A bad policy is a ``ValueError`` / ``TypeError``
  naming the field and the fix, raised before any chart runs.
- The delay before attempt ``n + 1`` is ``min(backoff * factor ** (n - 1), max_backoff)``,
  spread by ``jitter`` with a ``random.Random`` seeded from ``(seed, stage id, n)``: the
  same policy waits the same on every run and in every process (no wall clock, no
  global random state). ``backoff`` may also be a function ``backoff(n) -> seconds``.
- ``sleep`` is the one seam for waiting (a test passes a recorder of delays; nothing
  sleeps for real). Without it a synchronous run uses ``time.sleep`` and an async run
  ``asyncio.sleep``.
- A run-level signal is never retried: ``RunTimeoutError`` and ``RunCancelledError``
  end the run whatever ``on`` says (they are raised by the engine, not by a stage).
- A failed attempt is recorded as an ``Attempt``: its number, the error's class name and
  its message (cut to 2,000 characters). Messages are recorded as the error says them:
  redaction hides state values, not words a stage put into its own error message.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Callable
from typing import Any

import attrs

from flowchart._core.values import escape_surrogates

_MESSAGE_LIMIT = 2000
#: run-level signals (by class name: this module imports nothing of the engine)
_NEVER_RETRIED = ("RunTimeoutError", "RunCancelledError")


def _classes(value: Any) -> tuple[type[BaseException], ...]:
    if isinstance(value, type):
        value = (value,)
    if not isinstance(value, tuple | list) or not value:
        raise TypeError(
            f"Retry(on=...) must be an exception class or a tuple of them, e.g. on=(TimeoutError,), got {value!r}"
        )
    for item in value:
        if not (isinstance(item, type) and issubclass(item, Exception)):
            raise TypeError(f"Retry(on=...) must name Exception subclasses, got {item!r}")
    return tuple(value)


def _number(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0 or value != value:
        raise ValueError(f"Retry({name}=...) must be a number of seconds >= 0, got {value!r}")


@attrs.frozen
class Retry:
    """A retry policy for a stage body: ``Retry(attempts=3, backoff=0.5, on=(TimeoutError,))``.

    ``attempts`` counts the first try; ``backoff`` is the delay before the second attempt
    (or a function ``backoff(n) -> seconds`` of the failed attempt's number); ``factor``
    multiplies it per further attempt up to ``max_backoff``; ``jitter`` (0..1) spreads each
    delay by up to that fraction, drawn deterministically from ``seed``; ``on`` the
    exception classes worth another attempt; ``sleep`` the waiting function (tests).
    """

    attempts: int = 3
    backoff: float | Callable[[int], float] = 0.0
    factor: float = 2.0
    max_backoff: float = 60.0
    jitter: float = 0.0
    seed: int = 0
    on: tuple[type[BaseException], ...] = attrs.field(default=(Exception,), converter=_classes)
    sleep: Callable[[float], Any] | None = attrs.field(default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        attempts = self.attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise ValueError(f"Retry(attempts=...) must be an integer >= 1 (the first try counts), got {attempts!r}")
        if not callable(self.backoff):
            _number("backoff", self.backoff)
        _number("factor", self.factor)
        _number("max_backoff", self.max_backoff)
        if not (isinstance(self.jitter, int | float) and not isinstance(self.jitter, bool) and 0 <= self.jitter <= 1):
            raise ValueError(f"Retry(jitter=...) must be a fraction between 0 and 1, got {self.jitter!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise TypeError(f"Retry(seed=...) must be an integer, got {self.seed!r}")
        if self.sleep is not None and not callable(self.sleep):
            raise TypeError(f"Retry(sleep=...) must be a function sleep(seconds), got {self.sleep!r}")

    def retries(self, error: BaseException) -> bool:
        """True when ``error`` is worth another attempt under this policy."""
        if type(error).__name__ in _NEVER_RETRIED:
            return False
        return isinstance(error, self.on)

    def delay(self, failed: int, key: str = "") -> float:
        """Seconds to wait after attempt ``failed`` (1-based) of the stage ``key`` failed."""
        if callable(self.backoff):
            base = float(self.backoff(failed))
            _number("backoff(n)", base)
        else:
            base = min(float(self.backoff) * float(self.factor) ** (failed - 1), float(self.max_backoff))
        if self.jitter and base:
            draw = random.Random(f"{self.seed}/{key}/{failed}").random()
            base = base * (1 - self.jitter + 2 * self.jitter * draw)
        return base

    async def wait(self, delay: float) -> None:
        """Wait ``delay`` seconds through ``sleep`` (awaited when it returns an awaitable), else
        ``asyncio.sleep`` inside an event loop and ``time.sleep`` outside one."""
        if delay <= 0:
            return
        if self.sleep is not None:
            waited = self.sleep(delay)
            if inspect.isawaitable(waited):
                await waited
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # a coroutine driven without a loop (a chart with no async stage)
            time.sleep(delay)
            return
        await asyncio.sleep(delay)

    def delays(self, key: str = "") -> list[float]:
        """Every delay this policy would wait for ``key``, in order (``attempts - 1`` of them)."""
        return [self.delay(n, key) for n in range(1, self.attempts)]


def error_message(error: BaseException) -> str:
    """``str(error)`` as a record keeps it: cut to 2,000 characters, a lone surrogate (which
    UTF-8 cannot hold) written as ``\\uXXXX``, so recording it never fails a store write."""
    message = escape_surrogates(str(error))
    if len(message) > _MESSAGE_LIMIT:
        message = message[:_MESSAGE_LIMIT] + "…"
    return message


@attrs.frozen
class Attempt:
    """A failed attempt of a stage that was tried again: its number, error class and message."""

    attempt: int
    error_type: str
    message: str

    @classmethod
    def of(cls, number: int, error: BaseException) -> Attempt:
        """The record of attempt ``number`` failing with ``error``."""
        return cls(number, type(error).__name__, error_message(error))

    def to_dict(self) -> dict[str, Any]:
        """``{"attempt", "error_type", "message"}``."""
        return {"attempt": self.attempt, "error_type": self.error_type, "message": self.message}


__all__ = ["Attempt", "Retry", "error_message"]
