"""Redaction: real values stay in state, hidden everywhere a run is RECORDED.

Law: a key named in ``keys`` or matching one of ``patterns`` (``re.search``; keys over 256
characters are not matched, a ReDoS guard) is written as ``"REDACTED"`` in the commit log
and traces, and as ``"[REDACTED]"`` in the narrative, decision evidence and recorder
events — the two placeholders footprintjs uses. The live state and checkpoints keep the
real values (a checkpoint must be able to resume). Redaction applies to top-level state
keys (inside a fork child: the key under ``runs/<child>``) and does not follow copies:
``copy = ssn`` stores the value under ``copy`` unredacted, as in footprintjs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

LOG_PLACEHOLDER = "REDACTED"
EVENT_PLACEHOLDER = "[REDACTED]"
_MAX_PATTERN_KEY = 256


def _compile(patterns: Iterable[str | re.Pattern[str]]) -> tuple[re.Pattern[str], ...]:
    return tuple(p if isinstance(p, re.Pattern) else re.compile(p) for p in patterns)


@attrs.frozen
class Redaction:
    """Which state keys to hide in recordings: exact ``keys`` and regex ``patterns``."""

    keys: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    patterns: tuple[re.Pattern[str], ...] = attrs.field(default=(), converter=_compile)

    def hides(self, key: str) -> bool:
        """True when ``key``'s value must not appear in a recording."""
        if key in self.keys:
            return True
        if len(key) > _MAX_PATTERN_KEY:
            return False
        return any(p.search(key) for p in self.patterns)

    @property
    def active(self) -> bool:
        """True when anything is hidden at all."""
        return bool(self.keys or self.patterns)


NO_REDACTION = Redaction()
