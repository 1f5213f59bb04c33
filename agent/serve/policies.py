"""The inbox's decision policies: four-eyes for named tools, expiry, no self-approval.

Laws:
- A policy only ever refuses or delays an approval; it never approves. A decline is never
  delayed (one person may always stop a call), but it is refused on an expired pause and by the
  run's own starter like an approval.
- **Four-eyes** (``four_eyes={"issue_refund"}``): an approval of a named tool's call needs two
  different approvers; the first is recorded as pending the second, the second resumes the
  run, and the decision names both (``by`` = ``"alice and bob"``).
- **Expiry** (``expire_after=seconds``): a pause older than that is shown expired and cannot
  be decided (410).
- **No self-approval** (``no_self_approval=True``): the person who started the run (its recorded
  identity: a string, or a mapping's ``user`` / ``name`` / ``id`` / ``sub``) cannot decide it.
- A policies file is JSON ``{"four_eyes": [...], "expire_after": seconds, "no_self_approval": bool}``;
  an unknown key or a wrong type is refused naming it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

_KEYS = ("four_eyes", "expire_after", "no_self_approval")


@attrs.frozen
class Policies:
    """What the inbox requires of a decision (see the module's laws)."""

    four_eyes: frozenset[str] = attrs.field(default=frozenset(), converter=frozenset)
    expire_after: float | None = None
    no_self_approval: bool = False

    def describe(self, tool: str | None) -> str:
        """The policy a decision on ``tool`` was taken under, as one line (for the receipt)."""
        parts = ["four-eyes" if tool in self.four_eyes else "one approver"]
        if self.expire_after is not None:
            parts.append(f"expires after {self.expire_after:g}s")
        if self.no_self_approval:
            parts.append("no self-approval")
        return ", ".join(parts)

    @classmethod
    def from_mapping(cls, data: Any, where: str = "policies") -> Policies:
        """Policies from a JSON mapping (strict: unknown keys and wrong types are refused)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object with keys {', '.join(_KEYS)}")
        unknown = sorted(set(data) - set(_KEYS))
        if unknown:
            raise ValueError(f"{where}: unknown key {unknown[0]!r}; allowed: {', '.join(_KEYS)}")
        tools = data.get("four_eyes", [])
        if not isinstance(tools, list) or not all(isinstance(t, str) and t for t in tools):
            raise ValueError(f"{where}: 'four_eyes' must be a list of tool names")
        expire = data.get("expire_after")
        if expire is not None and (isinstance(expire, bool) or not isinstance(expire, int | float) or expire <= 0):
            raise ValueError(f"{where}: 'expire_after' must be a positive number of seconds")
        selfish = data.get("no_self_approval", False)
        if not isinstance(selfish, bool):
            raise ValueError(f"{where}: 'no_self_approval' must be true or false")
        return cls(frozenset(tools), None if expire is None else float(expire), selfish)

    @classmethod
    def from_file(cls, path: str | Path) -> Policies:
        """Policies from a JSON file (``agent serve --policies FILE``)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"policies file {path}: not readable JSON ({exc})") from None
        return cls.from_mapping(data, f"policies file {path}")


def starter_of(identity: Any) -> str | None:
    """Who started a run, from its recorded identity (``None`` when it names nobody)."""
    if isinstance(identity, str) and identity:
        return identity
    if isinstance(identity, Mapping):
        for key in ("user", "name", "id", "sub"):
            value = identity.get(key)
            if isinstance(value, str) and value:
                return value
    return None
