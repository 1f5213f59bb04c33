"""Governance's values read back from untrusted JSON, through flowchart's one codec.

Law: a check-in request, a middleware ask, a decision, evidence, a driver or a trail read
back from a checkpoint, a stored row or a reply is structured by
``flowchart._core.serde.structure`` — the limits of ``flowchart._core.untrusted`` (depth,
integer size, non-finite numbers, lone surrogates), then a strict converter from
``serde.make_converter`` (unknown keys, missing keys and wrong types refused) — never by a
hand-written check. A bad field is ONE ``WireFormatError`` (a ``CheckpointError``, so the
one error tree) whose message is ``<path>: <problem>`` in the converter's words
(``$.evidence.read[0].summary: expected a string, got an integer``) and whose ``path``
names it. Each module registers the classes it defines (``register``) next to them.
"""

from __future__ import annotations

from typing import TypeVar

from flowchart._core.errors import CheckpointError
from flowchart._core.serde import every_key, make_converter, structure
from governance.errors import WireFormatError

_T = TypeVar("_T")

CONVERTER = make_converter()
"""Governance's converter (the one factory's; its hooks are the classes ``register``ed)."""

_WHAT = "governance value"


def register(cl: type[_T], *, optional: tuple[str, ...] = ()) -> None:
    """Let ``load`` read ``cl``: every field's key required but the ``optional`` ones (absent:
    the field's default, else ``None``)."""
    CONVERTER.register_structure_hook(cl, every_key(cl, CONVERTER, optional))


def load(cl: type[_T], data: object, path: str = "$") -> _T:
    """``data`` (untrusted, parsed JSON found at ``path``) as a ``cl``, or ``WireFormatError``
    naming the first bad field's path and what was wrong with it."""
    try:
        return structure(CONVERTER, data, cl, what=_WHAT, path=path)
    except CheckpointError as exc:
        first = exc.detail[0] if exc.detail else str(exc).removeprefix(f"Invalid {_WHAT}: ")
        problem, _, where = first.rpartition(" @ ")
        where = exc.path or where
        raise WireFormatError(f"{where}: {problem}", path=where) from None


__all__ = ["CONVERTER", "load", "register"]
