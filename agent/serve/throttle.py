"""How many wrong tokens a client address may try: a small token bucket per address, in memory.

Laws:
- A token about to be checked (login form or ``Authorization: Bearer``, unless the process
  already knows it) takes one guess from its address's bucket *before* the check — atomically,
  so concurrent guesses cannot all slip past a bucket with one guess left — and a right token
  gives it back (``give_back``): only wrong tokens cost. A bucket holds ``burst`` guesses and
  gets one back every ``refill_seconds``.
- When an address's bucket is empty, every token it sends is refused with 429 *before* it is
  checked — no scrypt is spent, and a right token is refused too (so guessing on cannot tell
  right from wrong) — and the refusal names how many seconds to wait (``Retry-After``).
- The first refusal of each lockout is the one worth an audit row (``take`` says which), so
  a client hammering a locked door cannot grow the audit table a row a request.
- Memory is bounded: past ``max_addresses`` buckets, the full ones (nothing to remember) are
  dropped; if none is full, the oldest half is.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from .decide import InboxRefusal


class TooManyWrongTokens(InboxRefusal):
    """429: ``client`` sent too many wrong tokens; ``retry_after`` whole seconds until one more
    is checked."""

    def __init__(self, client: str, retry_after: int) -> None:
        super().__init__(
            429,
            f"too many wrong tokens from {client}: try again in {retry_after} s",
        )
        self.client = client
        self.retry_after = retry_after


class WrongTokenLimit:
    """Token buckets of wrong-token guesses, one per client address (thread-safe)."""

    def __init__(
        self,
        burst: int = 5,
        refill_seconds: float = 12.0,
        *,
        max_addresses: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if burst < 1 or refill_seconds <= 0:
            raise ValueError(
                f"WrongTokenLimit(burst={burst!r}, refill_seconds={refill_seconds!r}): "
                "burst must be >= 1 and refill_seconds > 0"
            )
        self.burst = burst
        self.refill_seconds = refill_seconds
        self.max_addresses = max_addresses
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[str, tuple[float, float, bool]] = {}  # address -> (guesses, at, refused)

    def _level(self, address: str, now: float) -> tuple[float, bool]:
        guesses, at, refused = self._buckets.get(address, (float(self.burst), now, False))
        guesses = min(float(self.burst), guesses + (now - at) / self.refill_seconds)
        return guesses, refused and guesses < 1

    def take(self, address: str, spend: bool = True) -> tuple[TooManyWrongTokens, bool] | None:
        """Take one guess for a token ``address`` sent, before it is checked (``spend=False``:
        only look — a token the process already knows costs no scrypt, but is refused like any
        other while the address is locked out): ``None`` when it may be checked; else nothing is
        taken, and the refusal and whether it is the first of this lockout (the one to audit)
        come back."""
        with self._lock:
            now = self._clock()
            guesses, refused = self._level(address, now)
            if guesses >= 1:
                if not spend:
                    return None
                self._buckets[address] = (guesses - 1, now, False)
                if len(self._buckets) > self.max_addresses:
                    self._forget(now)
                return None
            self._buckets[address] = (guesses, now, True)
            wait = max(1, math.ceil((1 - guesses) * self.refill_seconds))
            return TooManyWrongTokens(address, wait), not refused

    def give_back(self, address: str) -> None:
        """The token ``address`` sent was right: its guess back."""
        with self._lock:
            now = self._clock()
            guesses, refused = self._level(address, now)
            self._buckets[address] = (min(float(self.burst), guesses + 1), now, refused)

    def _forget(self, now: float) -> None:
        full = [a for a in self._buckets if self._level(a, now)[0] >= self.burst]
        for address in full or sorted(self._buckets, key=lambda a: self._buckets[a][1])[: len(self._buckets) // 2]:
            del self._buckets[address]
